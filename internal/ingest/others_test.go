package ingest

import (
	"math"
	"strings"
	"testing"
)

func TestDetectOtherTools(t *testing.T) {
	for name, want := range map[string]string{
		"guidellm_benchmarks.json": FormatGuideLLM, "guidellm_benchmarks_v03.json": FormatGuideLLM,
		"aiperf/c4/profile_export_aiperf.json":                              FormatAIPerf,
		"inference-perf/stage_2_lifecycle_metrics.json":                     FormatInferencePerf,
		"vllm-sweep/openai-chat-infqps-concurrency4-Qwen3-8B-20261101.json": FormatVLLM,
	} {
		got, err := Detect(mustRead(t, name))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestGuideLLM(t *testing.T) {
	runs, err := Read(mustRead(t, "guidellm_benchmarks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d runs, want one per benchmark (6)", len(runs))
	}
	if runs[0].Concurrency != 1 || runs[1].Concurrency != 64 || runs[2].RateRPS != 3 || runs[5].RateRPS != 12 {
		t.Errorf("loads: %+v %+v %+v", runs[0].Concurrency, runs[1].Concurrency, runs[2].RateRPS)
	}
	r := runs[2] // constant@3
	s := r.Summary
	// rate 3 ↔ concurrency 15/11 on the fixture's curve: 14c/(c+5) req/s.
	c := 15.0 / 11
	if r.Records != nil || !near(s.RequestThroughputRPS, 14*c/(c+5)) || !near(s.OutputTokenThroughputTPS, 128*14*c/(c+5)) ||
		!near(s.TTFT.P50, 45+3*c) || !near(s.TTFT.P95, (45+3*c)*1.6) || !near(s.TPOT.P50, 8+0.35*c) {
		t.Errorf("constant@3: %+v", s)
	}
	if !near(s.E2E.P50, 45+3*c+(8+0.35*c)*127) { // request_latency is in seconds
		t.Errorf("e2e p50 %v", s.E2E.P50)
	}
	if !math.IsNaN(s.ITL.P95) || s.ITL.Count != 0 {
		t.Errorf("GuideLLM keeps no per-chunk gaps, yet ITL = %+v", s.ITL)
	}
	if !strings.Contains(r.Source, "constant@3") {
		t.Errorf("source %q", r.Source)
	}
	// v0.3 files: args.strategy, request_totals on the benchmark, median only.
	old, err := Read(mustRead(t, "guidellm_benchmarks_v03.json"))
	if err != nil || len(old) != 6 || old[3].Concurrency != 8 || !near(old[3].Summary.TTFT.P50, 45+24) || old[3].Summary.Completed == 0 {
		t.Fatalf("v0.3: %v %+v", err, old)
	}
}

func TestAIPerf(t *testing.T) {
	runs, err := Read(mustRead(t, "aiperf/c16/profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	s := r.Summary
	rps := 14.0 * 16 / 21
	if r.Concurrency != 16 || r.Model != "Qwen/Qwen3-8B" || !near(s.RequestThroughputRPS, rps) || !near(s.TTFT.P50, 45+48) ||
		!near(s.TPOT.Mean, 8+0.35*16) || s.Completed != int(rps*60) || !near(s.DurationS, 60) || !math.IsNaN(s.TTFT.P999) {
		t.Errorf("aiperf c16: concurrency %v %+v", r.Concurrency, s)
	}
}

func TestInferencePerf(t *testing.T) {
	runs, err := Read(mustRead(t, "inference-perf/stage_4_lifecycle_metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	s := r.Summary
	c := 5 * 12.0 / 2
	ttft := 45 + 3*c + 40*(c-16)
	if r.RateRPS != 12 || s.Errors != 9 || s.Rejected != 9 || !near(s.TTFT.P50, ttft*0.95) || !near(s.TTFT.P99, ttft*2.2) ||
		!math.IsNaN(s.TTFT.P95) || !near(s.RequestThroughputRPS, 14*c/(c+5)) {
		t.Errorf("stage 4: rate %v %+v", r.RateRPS, s)
	}
}

func TestVLLMLoad(t *testing.T) {
	runs, err := Read(mustRead(t, "vllm-sweep/openai-chat-infqps-concurrency16-Qwen3-8B-20261101.json"))
	if err != nil || runs[0].Concurrency != 16 || runs[0].RateRPS != 0 {
		t.Fatalf("%v %+v", err, runs)
	}
	runs, err = Read(mustRead(t, "vllm_summary.json"))
	if err != nil || runs[0].RateRPS != 10 || runs[0].Concurrency != 0 {
		t.Fatalf("%v rate %v conc %v", err, runs[0].RateRPS, runs[0].Concurrency)
	}
}

func TestOtherToolsMalformed(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"guidellm no strategy":   {`{"benchmarks": [{"metrics": {}}]}`, "benchmark 1: no config.strategy"},
		"guidellm empty":         {`{"benchmarks": []}`, "not a non-empty list"},
		"aiperf no count":        {`{"request_throughput": {"unit": "requests/sec", "avg": 2}}`, "no request_count"},
		"aiperf bad unit":        {`{"request_count": {"unit": "requests", "avg": 2}, "request_throughput": {"unit": "requests/sec", "avg": 1}, "time_to_first_token": {"unit": "fortnights", "avg": 1}}`, `unit "fortnights"`},
		"inference-perf no rate": {`{"load_summary": {"count": 1}, "successes": {"count": 1}}`, "no throughput"},
	} {
		_, err := Read([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
