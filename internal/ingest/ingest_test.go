package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestDetect(t *testing.T) {
	for name, want := range map[string]string{"vllm_detailed.json": FormatVLLM, "vllm_summary.json": FormatVLLM, "records.jsonl": FormatRecords} {
		got, err := Detect(mustRead(t, name))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, bad := range []string{"", "  \n", "[1,2]", "hello", `{"foo": 1}`, `{"foo": 1`} {
		if _, err := Detect([]byte(bad)); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("Detect(%q): %v, want ErrUnknownFormat", bad, err)
		}
	}
}

func TestVLLMDetailed(t *testing.T) {
	runs, err := Read(mustRead(t, "vllm_detailed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	r := runs[0]
	if r.Format != FormatVLLM || r.Label != "vllm-baseline" || r.Model != "meta-llama/Llama-3.1-8B-Instruct" || r.Target != "openai-chat" {
		t.Errorf("meta: %+v", r)
	}
	if r.Start.IsZero() || r.Start.Hour() != 12 {
		t.Errorf("start %v", r.Start)
	}
	cfg := map[string]string{}
	for _, kv := range r.Config {
		cfg[kv[0]] = kv[1]
	}
	if cfg["max_concurrency"] != "2" || cfg["request_rate"] != "inf" || cfg["gpu"] != "H100" {
		t.Errorf("config %v", r.Config)
	}
	if len(r.Records) != 5 {
		t.Fatalf("%d records", len(r.Records))
	}
	// Request 2 waited 170 ms for a slot, was sent at 170 ms (start_times
	// relative to the earliest scheduled time), first token 200 ms later.
	r2 := r.Records[2]
	if r2.Scheduled != 0 || r2.Sent != 170*time.Millisecond || r2.FirstToken != 370*time.Millisecond {
		t.Errorf("request 2 times: sched %v sent %v first %v", r2.Scheduled, r2.Sent, r2.FirstToken)
	}
	if len(r2.TokenTimes) != 4 || r2.TokenTimes[1]-r2.TokenTimes[0] != 30*time.Millisecond {
		t.Errorf("request 2 token times %v", r2.TokenTimes)
	}
	if e2e, _ := r2.E2E(); e2e != 275*time.Millisecond {
		t.Errorf("request 2 e2e %v, want vLLM's latency 275ms", e2e)
	}
	if sched, _ := r2.TTFTSched(); sched != 370*time.Millisecond {
		t.Errorf("request 2 ttft_sched %v", sched)
	}
	if r2.InputTokens != 512 || r2.OutputTokens != 4 {
		t.Errorf("request 2 tokens %d/%d", r2.InputTokens, r2.OutputTokens)
	}
	r4 := r.Records[4]
	if r4.Error != record.ErrRejected || r4.ErrorMessage != "Too Many Requests" || r4.HasFirstToken() {
		t.Errorf("failed request: %+v", r4)
	}
	s := r.Summary
	if s.Requests != 5 || s.Completed != 4 || s.Rejected != 1 || !near(s.TTFT.P50, 135) {
		t.Errorf("summary: requests %d completed %d rejected %d ttft p50 %v", s.Requests, s.Completed, s.Rejected, s.TTFT.P50)
	}
}

func TestVLLMSummaryOnly(t *testing.T) {
	runs, err := Read(mustRead(t, "vllm_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	if r.Records != nil {
		t.Errorf("summary-only file gave %d records", len(r.Records))
	}
	s := r.Summary
	if s.Requests != 1000 || s.Errors != 2 || s.PeakInFlight != 41 || !near(s.TTFT.Mean, 52.1) || !near(s.TTFT.P50, 48.7) ||
		!near(s.TTFT.P99, 120.3) || !math.IsNaN(s.TTFT.P95) || !near(s.E2E.Mean, 0) && s.E2E.Count != 0 {
		t.Errorf("summary %+v", s)
	}
	if !strings.Contains(strings.Join(r.Notes, " "), "summary only") {
		t.Errorf("notes %v", r.Notes)
	}
}

// A file written with --append-result holds several results.
func TestVLLMAppended(t *testing.T) {
	a, b := mustRead(t, "vllm_detailed.json"), mustRead(t, "vllm_summary.json")
	runs, err := Read(append(append(append([]byte{}, a...), '\n'), b...))
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	if runs[1].Model != "Qwen/Qwen3-8B" {
		t.Errorf("second run %+v", runs[1])
	}
}

func TestRecords(t *testing.T) {
	runs, err := Read(mustRead(t, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	if r.Format != FormatRecords || len(r.Records) != 4 {
		t.Fatalf("%+v", r)
	}
	s := r.Summary
	if s.Requests != 3 || s.Window.ExcludedWarmup != 1 || s.Rejected != 1 || s.ServerQueue == nil {
		t.Errorf("summary: requests %d warmup %d rejected %d", s.Requests, s.Window.ExcludedWarmup, s.Rejected)
	}
	if len(s.TimeSeries) == 0 {
		t.Error("no time series")
	}
}

func TestMalformed(t *testing.T) {
	detailed := string(mustRead(t, "vllm_detailed.json"))
	cases := map[string]struct{ in, want string }{
		"short itls":      {strings.Replace(detailed, `[0.02, 0.02, 0.02], []]`, `[0.02, 0.02, 0.02]]`, 1), `"itls" has 4 entries`},
		"negative ttft":   {strings.Replace(detailed, `"ttfts": [0.1,`, `"ttfts": [-0.1,`, 1), "ttfts[0]"},
		"string duration": {strings.Replace(detailed, `"duration": 1.2`, `"duration": "long"`, 1), "unexpected field type"},
		"truncated":       {detailed[:len(detailed)/2], "not JSON"},
		"huge itl":        {strings.Replace(detailed, `[0.02, 0.02, 0.02]`, `[0.02, 1e300, 0.02]`, 1), "itls[0][1]"},
		"empty ttfts":     {`{"duration": 1, "completed": 0, "ttfts": [], "itls": [], "input_lens": [], "output_lens": []}`, "empty"},
		"records bad line": {`{"id":1,"sent_ms":1,"scheduled_ms":0,"stream_end_ms":2,"lag_ms":1,"input_tokens":1,"output_tokens":0}` + "\n{oops\n",
			"line 2"},
		"records bad kind": {`{"id":1,"sent_ms":1,"scheduled_ms":0,"stream_end_ms":2,"lag_ms":1,"input_tokens":1,"output_tokens":0,"error":"meh"}`,
			"unknown error kind"},
		"records absurd time": {`{"id":1,"sent_ms":1e15,"scheduled_ms":0,"stream_end_ms":2,"lag_ms":1,"input_tokens":1,"output_tokens":0}`,
			"outside"},
	}
	for name, c := range cases {
		_, err := Read([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

func TestClassifyVLLMError(t *testing.T) {
	for msg, want := range map[string]record.ErrorKind{
		"Too Many Requests": record.ErrRejected, "Service Unavailable": record.ErrRejected,
		"Internal Server Error": record.ErrHTTP5xx, "Bad Request": record.ErrHTTP4xx,
		"Traceback ...\naiohttp.client_exceptions.ClientConnectorError: Cannot connect to host": record.ErrConnect,
		"asyncio.TimeoutError": record.ErrTimeout, "something else": record.ErrStreamBroken,
	} {
		if got := classifyVLLMError(msg); got != want {
			t.Errorf("%q → %s, want %s", msg, got, want)
		}
	}
}

// fuzzSeeds are the seed corpus of both fuzz targets (run by plain go test).
func fuzzSeeds(f *testing.F) {
	for _, name := range []string{"vllm_detailed.json", "vllm_summary.json", "records.jsonl", "guidellm_benchmarks.json", "guidellm_benchmarks_v03.json",
		"aiperf/c4/profile_export_aiperf.json", "inference-perf/stage_4_lifecycle_metrics.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"duration": 1, "completed": 1, "ttfts": [0.1], "itls": [[]], "input_lens": [1], "output_lens": [1]}`))
	f.Add([]byte(`{"sent_ms": 0}`))
}

// checkRun holds for every run Read accepts: records serialise and read
// back, and the summary counts what the records hold.
func checkRun(t *testing.T, r *Run) {
	if r.Records == nil {
		return
	}
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	for i := range r.Records {
		if err := w.Write(&r.Records[i]); err != nil {
			t.Fatalf("record %d does not serialise: %v", i, err)
		}
	}
	w.Flush()
	back, err := record.ReadAll(&buf)
	if err != nil || len(back) != len(r.Records) {
		t.Fatalf("round trip: %d of %d, %v", len(back), len(r.Records), err)
	}
	measured := 0
	for i := range r.Records {
		if !r.Records[i].Warmup {
			measured++
		}
	}
	if r.Summary.Requests != measured {
		t.Fatalf("summary counts %d requests, records hold %d measured", r.Summary.Requests, measured)
	}
}

func FuzzVLLM(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		runs, err := readVLLM(data)
		if err != nil {
			return
		}
		for i := range runs {
			checkRun(t, &runs[i])
		}
	})
}

func FuzzRecords(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := readRecords(data)
		if err != nil {
			return
		}
		checkRun(t, r)
	})
}

func FuzzRead(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		runs, err := Read(data)
		if err != nil {
			return
		}
		for i := range runs {
			checkRun(t, &runs[i])
		}
	})
}

// An older vLLM (benchmarks/benchmark_serving.py) writes detailed results
// without start_times: the run's time base must come from the file's own
// duration and aggregates, not from every request placed at t=0.
func TestVLLMDetailedWithoutStartTimes(t *testing.T) {
	runs, err := Read(mustRead(t, "vllm_detailed_no_start_times.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	s := r.Summary
	if len(r.Records) != 210 || s.Requests != 210 || s.Completed != 210 {
		t.Fatalf("%d records, summary %d/%d", len(r.Records), s.Requests, s.Completed)
	}
	// The file's own figures: duration 28.89 s, 7.27 req/s, 1786 tok/s.
	if !near(s.DurationS, 28.894936894616194) || !near(s.RequestThroughputRPS, 7.267709244906776) ||
		!near(s.OutputTokenThroughputTPS, 1786.4721486766084) {
		t.Errorf("duration %v s, %v req/s, %v tok/s; want the file's 28.89 s, 7.27 req/s, 1786 tok/s",
			s.DurationS, s.RequestThroughputRPS, s.OutputTokenThroughputTPS)
	}
	// request_rate 9 with no max_concurrency: requests were sent about 1/9 s
	// apart, so no more than a few dozen were ever in flight at once.
	if s.PeakInFlight <= 0 || s.PeakInFlight > 60 {
		t.Errorf("peak in flight %d; want an estimate well below 210 (requests were spread over the run)", s.PeakInFlight)
	}
	if last := r.Records[209].Sent; last < 20*time.Second || last > 29*time.Second {
		t.Errorf("last request sent at %v; want it spread over the 28.9 s run", last)
	}
	if len(s.TimeSeries) != 0 {
		t.Errorf("a per-second series drawn from estimated send times")
	}
	// TTFT is per request and stays what vLLM measured.
	if math.Abs(s.TTFT.Mean-mustFloat(t, "vllm_detailed_no_start_times.json", "mean_ttft_ms")) > 1 {
		t.Errorf("ttft mean %v", s.TTFT.Mean)
	}
	notes := strings.Join(r.Notes, " ")
	if !strings.Contains(notes, "no start_times") || !strings.Contains(notes, "reconstructed") || !strings.Contains(notes, "duration") {
		t.Errorf("notes do not say the send times are reconstructed: %v", r.Notes)
	}
}

func mustFloat(t *testing.T, file, key string) float64 {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustRead(t, file), &m); err != nil {
		t.Fatal(err)
	}
	f, ok := m[key].(float64)
	if !ok {
		t.Fatalf("%s: no number %q", file, key)
	}
	return f
}

// With max_concurrency and an infinite rate, the reconstruction is a closed
// loop: never more than max_concurrency in flight.
func TestVLLMReconstructClosedLoop(t *testing.T) {
	e2e := []time.Duration{time.Second, 2 * time.Second, time.Second, time.Second, 500 * time.Millisecond}
	sched, sent := reconstructSends(e2e, math.Inf(1), 2)
	want := []time.Duration{0, 0, time.Second, 2 * time.Second, 2 * time.Second}
	for i := range want {
		if sent[i] != want[i] || sched[i] != 0 {
			t.Errorf("request %d: scheduled %v sent %v; want 0 and %v", i, sched[i], sent[i], want[i])
		}
	}
	sched, sent = reconstructSends(e2e, 4, 0)
	if sent[4] != time.Second || sched[4] != time.Second {
		t.Errorf("open loop at 4 req/s: request 4 at %v/%v, want 1s", sched[4], sent[4])
	}
}
