package record

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms1 = time.Millisecond

func sample() Request {
	return Request{
		ID: 7, Scheduled: 100 * ms1, Sent: 105 * ms1, FirstToken: 305 * ms1, Done: 505 * ms1, StreamEnd: 506 * ms1,
		TokenTimes:  []time.Duration{305 * ms1, 355 * ms1, 455 * ms1, 505 * ms1},
		TokenCounts: []int32{1, 1, 2, 1},
		InputTokens: 512, OutputTokens: 5, TokenSource: TokensFromUsage,
		ServerPhases: &Phases{Queue: 20 * ms1, Prefill: 170 * ms1, Decode: 200 * ms1},
		HTTPStatus:   200, FinishReason: "length",
	}
}

// TestDefinitions pins each per-request definition of SPEC §2.
func TestDefinitions(t *testing.T) {
	r := sample()
	check := func(name string, got time.Duration, ok bool, want time.Duration) {
		t.Helper()
		if !ok || got != want {
			t.Errorf("%s = %v (ok=%v), want %v", name, got, ok, want)
		}
	}
	ttft, ok := r.TTFT()
	check("ttft = first_token - sent", ttft, ok, 200*ms1)
	sched, ok := r.TTFTSched()
	check("ttft_sched = first_token - scheduled", sched, ok, 205*ms1)
	e2e, ok := r.E2E()
	check("e2e = done - sent", e2e, ok, 400*ms1)
	// tpot = (e2e - ttft) / (output_tokens - 1) = 200ms / 4
	tpot, ok := r.TPOT()
	check("tpot excludes the first token", tpot, ok, 50*ms1)
	check("lag = sent - scheduled", r.Lag(), true, 5*ms1)
	if got, want := r.ITLs(nil), []time.Duration{50 * ms1, 100 * ms1, 50 * ms1}; !cmp.Equal(got, want) {
		t.Errorf("itl = %v, want %v (one gap per chunk)", got, want)
	}
	if r.TokensInChunk(2) != 2 || r.TokensInChunk(0) != 1 || r.TokensInChunk(9) != 1 {
		t.Errorf("TokensInChunk: multi-token chunk not kept")
	}
}

func TestUndefinedMetrics(t *testing.T) {
	failed := Request{ID: 1, Scheduled: 0, Sent: ms1, StreamEnd: 3 * ms1, Error: ErrHTTP5xx, HTTPStatus: 500}
	if _, ok := failed.TTFT(); ok {
		t.Error("a request with no content has no TTFT")
	}
	if _, ok := failed.TPOT(); ok {
		t.Error("a request with no content has no TPOT")
	}
	one := sample()
	one.OutputTokens = 1
	if _, ok := one.TPOT(); ok {
		t.Error("TPOT is undefined for a single output token")
	}
	if failed.OK() || !one.OK() {
		t.Error("OK reflects the error kind")
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	recs := []Request{sample(), {ID: 8, Sent: 2 * ms1, StreamEnd: 9 * ms1, Error: ErrRejected, HTTPStatus: 429, ErrorMessage: "queue full"}}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	line := strings.SplitN(buf.String(), "\n", 2)[0]
	for _, field := range []string{`"ttft_ms":200`, `"ttft_sched_ms":205`, `"tpot_ms":50`, `"e2e_ms":400`, `"lag_ms":5`, `"server_queue_ms":20`, `"token_counts":[1,1,2,1]`} {
		if !strings.Contains(line, field) {
			t.Errorf("record line lacks %s: %s", field, line)
		}
	}
	got, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("round trip changed records (-want +got):\n%s", diff)
	}
}

func TestReadAllNamesTheLine(t *testing.T) {
	in := `{"id":1,"sent_ms":1}` + "\n\n" + `{"id":2,"error":"exploded"}` + "\n"
	_, err := ReadAll(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "exploded") {
		t.Fatalf("err = %v, want it to name line 3 and the bad kind", err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	r := sample()
	r.ServerTokenTimes = []time.Duration{ms1}
	c := r.Clone()
	r.TokenTimes[0], r.TokenCounts[0], r.ServerTokenTimes[0], r.ServerPhases.Queue = 0, 9, 0, 0
	if c.TokenTimes[0] != 305*ms1 || c.TokenCounts[0] != 1 || c.ServerTokenTimes[0] != ms1 || c.ServerPhases.Queue != 20*ms1 {
		t.Errorf("clone shares memory with the original: %+v", c)
	}
}
