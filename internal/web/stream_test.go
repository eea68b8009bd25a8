package web

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// flushLog records a response a flush at a time, as a browser reading the
// stream would receive it.
type flushLog struct {
	*httptest.ResponseRecorder
	flushed []string
	sent    int
}

func (f *flushLog) Flush() {
	b := f.Body.String()
	f.flushed = append(f.flushed, b[f.sent:])
	f.sent = len(b)
}

type streamedStep struct {
	Step *struct {
		Load      float64  `json:"load"`
		TTFTP95MS *float64 `json:"ttft_p95_ms"`
		SLOMet    bool     `json:"slo_met"`
		Energy    *struct {
			JPerOutputToken *float64 `json:"j_per_output_token"`
		} `json:"energy"`
	} `json:"step"`
	Index  int `json:"index"`
	Of     int `json:"of"`
	Result *struct {
		sweptSteps
		Sweep *sweptSteps `json:"sweep"` // the lab's answer holds its sweep
	} `json:"result"`
	Error string `json:"error"`
}

type sweptSteps struct {
	Steps []struct {
		Load float64 `json:"load"`
	} `json:"steps"`
}

// streamAPI posts body to path?stream=1 and returns what each flush sent.
func streamAPI(t *testing.T, path string, body any) []string {
	t.Helper()
	s, err := New(Config{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	s.AllowHost("knee.test")
	b, _ := json.Marshal(body)
	req := httptest.NewRequest("POST", "http://knee.test"+path+"?stream=1", bytes.NewReader(b))
	req.Header.Set(TokenHeader, "t")
	rec := &flushLog{ResponseRecorder: httptest.NewRecorder()}
	s.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
	}
	if rec.sent != rec.Body.Len() {
		t.Fatalf("%s: %d bytes written after the last flush", path, rec.Body.Len()-rec.sent)
	}
	return rec.flushed
}

// parseStream checks that every flush carried exactly one line, the steps
// numbered 1..of in order and then the answer, and returns the lines.
func parseStream(t *testing.T, flushed []string) []streamedStep {
	t.Helper()
	var lines []streamedStep
	for i, chunk := range flushed {
		if strings.Count(chunk, "\n") != 1 || !strings.HasSuffix(chunk, "\n") {
			t.Fatalf("flush %d carried %q: want one line", i, chunk)
		}
		var l streamedStep
		if err := json.Unmarshal([]byte(chunk), &l); err != nil {
			t.Fatalf("flush %d: %v", i, err)
		}
		if l.Error != "" {
			t.Fatalf("flush %d: error %s", i, l.Error)
		}
		lines = append(lines, l)
	}
	if len(lines) < 3 {
		t.Fatalf("%d lines: want the steps, then the answer", len(lines))
	}
	steps, last := lines[:len(lines)-1], lines[len(lines)-1]
	for i, l := range steps {
		if l.Step == nil || l.Index != i+1 || l.Of != len(steps) {
			t.Fatalf("line %d: step %v, index %d of %d: want step %d of %d", i, l.Step != nil, l.Index, l.Of, i+1, len(steps))
		}
	}
	if last.Result == nil {
		t.Fatalf("the last line is not the answer: %+v", last)
	}
	answer := last.Result.sweptSteps
	if last.Result.Sweep != nil {
		answer = *last.Result.Sweep
	}
	if len(answer.Steps) != len(steps) {
		t.Fatalf("the answer has %d steps, %d were streamed", len(answer.Steps), len(steps))
	}
	for i, s := range answer.Steps {
		if s.Load != steps[i].Step.Load {
			t.Errorf("answer's step %d at load %v, streamed step at %v", i, s.Load, steps[i].Step.Load)
		}
	}
	return lines
}

// A streamed sweep sends each step as the simulator finishes it (one flush
// a step, before the next is computed), then the whole answer; each step
// carries the power model's energy, and with the batch growing (1 user to
// the 256 of max_num_seqs) every output token costs fewer joules.
func TestSweepStreamsEachStep(t *testing.T) {
	lines := parseStream(t, streamAPI(t, "/api/sweep", learnBase(64)))
	var atOne, atFull float64
	for _, l := range lines[:len(lines)-1] {
		st := l.Step
		if st.Energy == nil || st.Energy.JPerOutputToken == nil || !(*st.Energy.JPerOutputToken > 0) {
			t.Fatalf("step at %v users has no energy per token", st.Load)
		}
		j := *st.Energy.JPerOutputToken
		t.Logf("%4v users: %.4f J per output token, p95 TTFT %.0f ms, SLOs met %v", st.Load, j, *st.TTFTP95MS, st.SLOMet)
		switch st.Load {
		case 1:
			atOne = j
		case 256:
			atFull = j
		}
	}
	if !(atFull > 0 && atFull < atOne/5) {
		t.Errorf("energy per output token %.4f J at 256 users (a full batch) against %.4f J at 1 user: want at least 5 times fewer", atFull, atOne)
	}
}

// The lab's sweep scenario streams its steps the same way.
func TestLabSweepStreamsEachStep(t *testing.T) {
	parseStream(t, streamAPI(t, "/api/lab", map[string]string{"scenario": "sweep"}))
}
