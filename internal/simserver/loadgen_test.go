package simserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
)

// runLoadgen runs a closed-loop knee client against url.
func runLoadgen(t *testing.T, url string, conc int, n int64, maxTokens int) *loadgen.Result {
	t.Helper()
	prompt := strings.Repeat("hello ", 32)
	run, err := loadgen.Start(context.Background(), loadgen.Config{
		BaseURL: url, API: "chat", Concurrency: conc, Requests: n, IgnoreEOS: true,
		RequestTimeout: 60 * time.Second,
	}, func(int64) loadgen.Request {
		return loadgen.Request{Prompt: prompt, PromptTokens: 32, MaxTokens: maxTokens}
	})
	if err != nil {
		t.Fatal(err)
	}
	return run.Wait()
}

func TestFaultsBecomeErrorKinds(t *testing.T) {
	const n = 60
	f := Faults{ErrorRate: 0.15, StallRate: 0.15, StallDuration: 300 * time.Millisecond, CutRate: 0.15, MalformedRate: 0.15}
	url, _ := startTest(t, func(c *Config) { c.Faults = f; c.Seed = 7 })
	// Expected outcomes follow from the seed alone: every one of the n
	// requests reaches the server, whatever their order.
	want := map[record.ErrorKind]int{}
	stalls := 0
	for i := uint64(0); i < n; i++ {
		p := f.plan(7, i, 16)
		switch {
		case p.fail:
			want[record.ErrHTTP5xx]++
		case p.cutAt >= 0:
			want[record.ErrStreamBroken]++
		case p.malformAt >= 0:
			want[record.ErrBadPayload]++
		default:
			want[record.ErrNone]++
			if p.stallAt >= 0 {
				stalls++
			}
		}
	}
	for k, v := range want {
		if v == 0 && k != record.ErrNone {
			t.Fatalf("seed gives no %q faults; pick another seed", k)
		}
	}
	if stalls == 0 {
		t.Fatal("seed gives no stalls")
	}
	res := runLoadgen(t, url, 8, n, 16)
	got := map[record.ErrorKind]int{}
	gotStalls := 0
	for i := range res.Records {
		r := &res.Records[i]
		got[r.Error]++
		if !r.OK() {
			continue
		}
		// Unaffected requests are whole and carry the truth.
		if r.OutputTokens != 16 || len(r.TokenTimes) != 16 || len(r.ServerTokenTimes) != 16 || r.ServerPhases == nil {
			t.Errorf("request %d: %d tokens, %d chunks, %d server times, phases %v", r.ID, r.OutputTokens, len(r.TokenTimes), len(r.ServerTokenTimes), r.ServerPhases)
		}
		// A stall shows in the server's truth as one gap of at least the
		// stall's length (client-side gaps depend on the machine's load).
		for j := 1; j < len(r.ServerTokenTimes); j++ {
			if r.ServerTokenTimes[j]-r.ServerTokenTimes[j-1] >= f.StallDuration {
				gotStalls++
				if r.TokenTimes[j]-r.TokenTimes[0] < f.StallDuration {
					t.Errorf("request %d: the client saw token %d %v after the first, before the %v stall ended", r.ID, j, r.TokenTimes[j]-r.TokenTimes[0], f.StallDuration)
				}
				break
			}
		}
	}
	for _, k := range append([]record.ErrorKind{record.ErrNone}, record.ErrorKinds...) {
		if got[k] != want[k] {
			t.Errorf("%q: %d records, want %d (all: %v)", k, got[k], want[k], got)
		}
	}
	if gotStalls != stalls {
		t.Errorf("%d streams show a stall, want %d", gotStalls, stalls)
	}
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.LegacyValidation)
	mf, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return mf
}

// value returns a counter's value (summed over label sets matching label=val
// when label is given) or a histogram's sample count.
func value(t *testing.T, mf map[string]*dto.MetricFamily, name, label, val string) float64 {
	t.Helper()
	f, ok := mf[name]
	if !ok {
		t.Fatalf("/metrics lacks %s", name)
	}
	var v float64
	for _, m := range f.Metric {
		match := label == ""
		for _, lp := range m.Label {
			if lp.GetName() == "model_name" && lp.GetValue() == "" {
				t.Errorf("%s has an empty model_name", name)
			}
			if lp.GetName() == label && lp.GetValue() == val {
				match = true
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Histogram != nil:
			v += float64(m.Histogram.GetSampleCount())
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		}
	}
	return v
}

func TestMetricsDeltasMatchRun(t *testing.T) {
	url, _ := startTest(t, nil)
	before := scrape(t, url)
	res := runLoadgen(t, url, 6, 30, 12)
	after := scrape(t, url)
	var in, out, gaps, ok float64
	for i := range res.Records {
		r := &res.Records[i]
		if !r.OK() {
			t.Fatalf("request %d failed: %s %s", r.ID, r.Error, r.ErrorMessage)
		}
		ok++
		in += float64(r.InputTokens)
		out += float64(r.OutputTokens)
		gaps += float64(r.OutputTokens - 1)
	}
	delta := func(name, label, val string) float64 {
		return value(t, after, name, label, val) - value(t, before, name, label, val)
	}
	checks := []struct {
		name, label, val string
		want             float64
	}{
		{"vllm:request_success_total", "finished_reason", "length", ok},
		{"vllm:prompt_tokens_total", "", "", in},
		{"vllm:generation_tokens_total", "", "", out},
		{"vllm:time_to_first_token_seconds", "", "", ok},
		{"vllm:inter_token_latency_seconds", "", "", gaps},
		{"vllm:e2e_request_latency_seconds", "", "", ok},
		{"vllm:request_queue_time_seconds", "", "", ok},
		{"vllm:request_prefill_time_seconds", "", "", ok},
		{"vllm:request_decode_time_seconds", "", "", ok},
		{"vllm:request_prompt_tokens", "", "", ok},
		{"vllm:request_generation_tokens", "", "", ok},
	}
	for _, c := range checks {
		if got := delta(c.name, c.label, c.val); got != c.want {
			t.Errorf("%s delta %v, want %v", c.name, got, c.want)
		}
	}
	for _, g := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "vllm:num_preemptions_total"} {
		if v := value(t, after, g, "", ""); v != 0 {
			t.Errorf("%s = %v after the run, want 0", g, v)
		}
	}
	if ty := after["vllm:time_to_first_token_seconds"].GetType(); ty != dto.MetricType_HISTOGRAM {
		t.Errorf("TTFT metric type %v", ty)
	}
}

// TestTruthAtModestScale checks the end-to-end truth without timing bounds
// (the machine may be busy): the server never writes a token before its
// intended time, so no reported TTFT is below the truth, and no token
// reaches the client before its intended time; every token has its truth.
// knee selftest measures how close they are.
func TestTruthAtModestScale(t *testing.T) {
	url, srv := startTest(t, nil)
	res := runLoadgen(t, url, 16, 48, 24)
	for i := range res.Records {
		r := &res.Records[i]
		if !r.OK() || len(r.ServerTokenTimes) != len(r.TokenTimes) || len(r.TokenTimes) != 24 {
			t.Fatalf("request %d: %s %s, %d/%d token times", r.ID, r.Error, r.ErrorMessage, len(r.ServerTokenTimes), len(r.TokenTimes))
		}
		// The server stamps receipt when it reads the request, which on
		// loopback can precede the client's own "sent" stamp by a little.
		const slack = 500 * time.Microsecond
		ttft, _ := r.TTFT()
		if ttft < r.ServerTokenTimes[0]-slack {
			t.Errorf("request %d: reported TTFT %v below the true %v", r.ID, ttft, r.ServerTokenTimes[0])
		}
		for j := range r.TokenTimes {
			if got, intended := r.TokenTimes[j]-r.Sent, r.ServerTokenTimes[j]; got < intended-slack {
				t.Errorf("request %d token %d: arrived %v after send, intended %v after receipt", r.ID, j, got, intended)
			}
		}
		p := r.ServerPhases
		near := func(a, b time.Duration) bool { return a-b < time.Microsecond && b-a < time.Microsecond } // ms floats on the wire
		// Queue and prefill are the engine's; the modelled front end comes
		// before them (how long it took is the machine's business here:
		// its exact share is pinned by TestGenerateEndpoints' knee_timing).
		if p == nil || p.Queue+p.Prefill > r.ServerTokenTimes[0] || !near(p.Decode, r.ServerTokenTimes[23]-r.ServerTokenTimes[0]) {
			t.Errorf("request %d: phases %+v inconsistent with token times", r.ID, p)
		}
	}
	if lag := srv.PacingLag(); lag.Tokens != int64(48*24) {
		t.Errorf("pacing lag counted %d tokens, want %d", lag.Tokens, 48*24)
	}
}
