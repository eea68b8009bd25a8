package stats

import (
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

func ms_(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }

// req builds a completed request from millisecond offsets: scheduled, sent,
// and the arrival of each content chunk (one token each unless counts say).
func req(id int64, sched, sent float64, chunks []float64, counts ...int32) record.Request {
	r := record.Request{ID: id, Scheduled: ms_(sched), Sent: ms_(sent), TokenSource: record.TokensFromUsage}
	for _, c := range chunks {
		r.TokenTimes = append(r.TokenTimes, ms_(c))
	}
	r.TokenCounts = counts
	n := 0
	for i := range r.TokenTimes {
		n += r.TokensInChunk(i)
	}
	r.OutputTokens = n
	r.InputTokens = 100
	if len(chunks) > 0 {
		r.FirstToken = r.TokenTimes[0]
		r.Done = r.TokenTimes[len(r.TokenTimes)-1]
		r.StreamEnd = r.Done + ms_(1)
	}
	return r
}

func failed(id int64, sent, end float64, kind record.ErrorKind) record.Request {
	return record.Request{ID: id, Scheduled: ms_(sent), Sent: ms_(sent), StreamEnd: ms_(end), Error: kind}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// TestDefinitions pins each per-request definition of SPEC §2 as the summary
// applies it, on one request at a time.
func TestDefinitions(t *testing.T) {
	cases := []struct {
		name   string
		rec    record.Request
		metric func(Summary) Dist
		want   float64 // the one value (ms) the distribution holds
	}{
		{"ttft = first_token − sent", req(1, 0, 50, []float64{150, 200}), func(s Summary) Dist { return s.TTFT }, 100},
		{"ttft_sched = first_token − scheduled (includes lag)", req(1, 0, 50, []float64{150, 200}), func(s Summary) Dist { return s.TTFTSched }, 150},
		{"lag = sent − scheduled", req(1, 0, 50, []float64{150, 200}), func(s Summary) Dist { return s.Lag }, 50},
		{"e2e = done − sent (last content chunk, not stream end)", req(1, 0, 50, []float64{150, 200, 450}), func(s Summary) Dist { return s.E2E }, 400},
		// 4 tokens: first at 100, last at 400 → (400−100)/(4−1) = 100, not 400/4.
		{"tpot excludes the first token", req(1, 0, 0, []float64{100, 200, 300, 400}), func(s Summary) Dist { return s.TPOT }, 100},
		// Chunks of 1, 3 and 2 tokens: 6 tokens, tpot = (160−100)/5 = 12 ms.
		{"tpot counts every token of multi-token chunks", req(1, 0, 0, []float64{100, 120, 160}, 1, 3, 2), func(s Summary) Dist { return s.TPOT }, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.metric(Summarize([]record.Request{c.rec}, Options{}))
			if d.Count != 1 || !near(d.Mean, c.want) || !near(d.P50, c.want) || !near(d.Max, c.want) {
				t.Errorf("got %+v, want one value %v ms", d, c.want)
			}
		})
	}
}

func TestITLIsPerChunk(t *testing.T) {
	// Chunks at 100, 120 (3 tokens), 160: two gaps, 20 and 40 — not five.
	s := Summarize([]record.Request{req(1, 0, 0, []float64{100, 120, 160}, 1, 3, 1)}, Options{})
	if s.ITL.Count != 2 || !near(s.ITL.Mean, 30) || !near(s.ITL.Max, 40) || !near(s.ITL.P50, 30) {
		t.Errorf("ITL = %+v, want gaps {20, 40}", s.ITL)
	}
	if s.Chunks != 3 || s.MultiTokenChunks != 1 {
		t.Errorf("chunks = %d, multi-token = %d; want 3 and 1", s.Chunks, s.MultiTokenChunks)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "ITL is the gap between chunks") {
		t.Errorf("warnings %q do not say ITL is per chunk", s.Warnings)
	}
	if s.OutputTokens != 5 {
		t.Errorf("output tokens = %d, want 5", s.OutputTokens)
	}
}

func TestSingleTokenHasNoTPOTOrITL(t *testing.T) {
	s := Summarize([]record.Request{req(1, 0, 0, []float64{100})}, Options{})
	if s.TPOT.Count != 0 || s.ITL.Count != 0 || s.TTFT.Count != 1 {
		t.Errorf("one-token request: tpot %d, itl %d, ttft %d values; want 0, 0, 1", s.TPOT.Count, s.ITL.Count, s.TTFT.Count)
	}
}

// run is a hand-made run: 2 warm-up requests, 5 measured (3 completed, one
// rejected, one timeout). Times in ms.
func run() []record.Request {
	w1 := req(100, 0, 0, []float64{100, 200})
	w1.Warmup = true
	w2 := req(101, 50, 60, []float64{150, 300})
	w2.Warmup = true
	a := req(1, 1000, 1000, []float64{1100, 1200, 1300}) // ends 1301
	b := req(2, 1500, 1600, []float64{1900, 2000})       // lag 100, ends 2001
	c := req(3, 2000, 2000, []float64{2200, 2400, 2600, 2800})
	c.ServerPhases = &record.Phases{Queue: ms_(10), Prefill: ms_(190), Decode: ms_(600)}
	a.ServerPhases = &record.Phases{Queue: ms_(0), Prefill: ms_(100), Decode: ms_(200)}
	a.InputTokens, b.InputTokens, c.InputTokens = 100, 200, 300
	d := failed(4, 2500, 2510, record.ErrRejected)
	e := failed(5, 2600, 3000, record.ErrTimeout) // last measured end: 3000
	return []record.Request{w1, w2, a, b, c, d, e}
}

func TestWindowThroughputAndRates(t *testing.T) {
	s := Summarize(run(), Options{OfferedRateRPS: 2})
	if s.Requests != 5 || s.Completed != 3 || s.Errors != 2 || s.Rejected != 1 {
		t.Fatalf("requests/completed/errors/rejected = %d/%d/%d/%d, want 5/3/2/1", s.Requests, s.Completed, s.Errors, s.Rejected)
	}
	if s.ErrorKinds["rejected"] != 1 || s.ErrorKinds["timeout"] != 1 || len(s.ErrorKinds) != 2 {
		t.Errorf("error kinds = %v", s.ErrorKinds)
	}
	// Window: first measured send 1000 ms → last measured end 3000 ms.
	if s.Window.StartMS != 1000 || s.Window.EndMS != 3000 || s.DurationS != 2 {
		t.Errorf("window = %+v, duration %v s; want 1000..3000 ms, 2 s", s.Window, s.DurationS)
	}
	if s.Window.ExcludedWarmup != 2 || s.Window.ExcludedCooldown != 0 {
		t.Errorf("excluded = %+v, want 2 warm-up", s.Window)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"request throughput = 3 completed / 2 s", s.RequestThroughputRPS, 1.5},
		{"output tok/s = (3+2+4) / 2 s", s.OutputTokenThroughputTPS, 4.5},
		{"input tok/s = (100+200+300) / 2 s", s.InputTokenThroughputTPS, 300},
		{"total tok/s", s.TotalTokenThroughputTPS, 304.5},
		{"error rate = 2/5", s.ErrorRate, 0.4},
		{"rejection rate = 1/5", s.RejectionRate, 0.2},
		// Sends at 1000, 1600, 2000, 2500, 2600: 4 intervals over 1.6 s.
		{"achieved rate = (5−1) / 1.6 s", s.AchievedRateRPS, 2.5},
		{"offered rate copied", s.OfferedRateRPS, 2},
		{"failed latency mean = (10 + 400) / 2", s.FailedE2E.Mean, 205},
		{"lag over all measured: max 100", s.Lag.Max, 100},
		{"lag mean = 100/5", s.Lag.Mean, 20},
		{"shape: input p50", s.Shape.InputTokens.P50, 200},
		{"shape: output max", s.Shape.OutputTokens.Max, 4},
		{"server prefill mean over reporting requests", s.ServerPrefill.Mean, 145},
		{"server decode max", s.ServerDecode.Max, 600},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.GoodputRPS != nil {
		t.Errorf("goodput = %v with no SLOs, want nil", *s.GoodputRPS)
	}
	if s.ServerQueue == nil || s.ServerQueue.Count != 2 {
		t.Errorf("server queue = %+v, want 2 values", s.ServerQueue)
	}
}

func TestGoodput(t *testing.T) {
	// Good: TTFT under 150 ms. a (100) and c (200)? c is 200 → not good; b is 300.
	good := func(r *record.Request) bool { v, ok := r.TTFT(); return ok && v < ms_(150) }
	s := Summarize(run(), Options{Good: good})
	if s.GoodRequests == nil || *s.GoodRequests != 1 || !near(*s.GoodputRPS, 0.5) {
		t.Fatalf("good = %v, goodput = %v; want 1 request, 0.5 rps", s.GoodRequests, s.GoodputRPS)
	}
	// Failed requests are never offered to Good.
	all := func(*record.Request) bool { return true }
	s = Summarize(run(), Options{Good: all})
	if *s.GoodRequests != 3 {
		t.Errorf("accept-all good = %d, want the 3 completed", *s.GoodRequests)
	}
}

func TestAdjustedTTFTCountsFailuresAsInfinite(t *testing.T) {
	s := Summarize(run(), Options{})
	// TTFTs of completed: 100, 300, 200; two failures = +Inf. Sorted:
	// 100, 200, 300, Inf, Inf. p50 = 300; p90 lands between Inf values.
	a := s.AdjustedTTFT
	if a.Count != 5 || a.P50 != 300 || !math.IsInf(a.P90, 1) || !math.IsInf(a.Max, 1) || !math.IsInf(a.Mean, 1) {
		t.Errorf("adjusted TTFT = %+v", a)
	}
	if s.TTFT.Count != 3 || s.TTFT.P50 != 200 || s.TTFT.Max != 300 {
		t.Errorf("TTFT = %+v, want completed only", s.TTFT)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("summary with infinite percentiles must marshal: %v", err)
	}
	if !strings.Contains(string(b), `"adjusted_ttft_ms":{"count":5,"mean":null,"p50":300,"p90":null`) {
		t.Errorf("adjusted TTFT JSON: %s", b)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(back.AdjustedTTFT.P99, 1) || back.AdjustedTTFT.P50 != 300 || back.TTFT.Max != 300 {
		t.Errorf("round trip: %+v", back.AdjustedTTFT)
	}
}

func TestPeakInFlight(t *testing.T) {
	mk := func(sent, end float64, warm bool) record.Request {
		r := failed(0, sent, end, record.ErrTimeout)
		r.Warmup = warm
		return r
	}
	recs := []record.Request{
		mk(0, 100, true), // warm-up, overlaps the window's start
		mk(50, 300, false),
		mk(100, 200, false), // sent at the instant the warm-up one ends: no overlap
		mk(150, 400, false), // 3 in flight: 50..300, 100..200, 150..400
		mk(200, 250, false), // the 100..200 one ended at 200: still 3
		mk(500, 600, false),
	}
	s := Summarize(recs, Options{Series: true})
	if s.PeakInFlight != 3 {
		t.Errorf("peak in flight = %d, want 3", s.PeakInFlight)
	}
	if len(s.TimeSeries) != 1 || s.TimeSeries[0].InFlight != 3 || s.TimeSeries[0].Errors != 6 {
		t.Errorf("series = %+v", s.TimeSeries)
	}
}

func TestTimeSeries(t *testing.T) {
	a := req(1, 0, 0, []float64{500, 900, 1100, 1200}) // TTFT 500, tokens: 2 in s0, 2 in s1, ends s1
	b := req(2, 0, 800, []float64{1000, 2500})         // TTFT 200 in s1, long request spans s1..s2
	c := failed(3, 2100, 2200, record.ErrHTTP5xx)
	s := Summarize([]record.Request{a, b, c}, Options{Series: true})
	want := []Second{
		{T: 0, InFlight: 2, Completions: 0, Errors: 0, OutputTPS: 2, TTFTP50MS: 500, TTFTP95MS: 500},
		{T: 1, InFlight: 2, Completions: 1, Errors: 0, OutputTPS: 3, TTFTP50MS: 200, TTFTP95MS: 200},
		{T: 2, InFlight: 2, Completions: 1, Errors: 1, OutputTPS: 1},
	}
	if len(s.TimeSeries) != len(want) {
		t.Fatalf("series = %+v, want %d seconds", s.TimeSeries, len(want))
	}
	for i, w := range want {
		if s.TimeSeries[i] != w {
			t.Errorf("second %d = %+v, want %+v", i, s.TimeSeries[i], w)
		}
	}
	if s := Summarize([]record.Request{a}, Options{}); s.TimeSeries != nil {
		t.Errorf("series without Options.Series: %+v", s.TimeSeries)
	}
}

func TestCooldownAndEmpty(t *testing.T) {
	a := req(1, 0, 0, []float64{100})
	late := req(2, 500, 500, []float64{600})
	late.Warmup = true
	s := Summarize([]record.Request{a, late}, Options{})
	if s.Window.ExcludedCooldown != 1 || s.Window.ExcludedWarmup != 0 || s.Requests != 1 {
		t.Errorf("window %+v, requests %d: a Warmup record sent after the window started is cool-down", s.Window, s.Requests)
	}
	e := Summarize(nil, Options{Series: true})
	if e.Requests != 0 || e.DurationS != 0 || e.RequestThroughputRPS != 0 || len(e.Warnings) != 1 {
		t.Errorf("empty summary = %+v", e)
	}
	if _, err := json.Marshal(e); err != nil {
		t.Error(err)
	}
}

func TestNoContentAndTokenSourceWarnings(t *testing.T) {
	empty := record.Request{ID: 1, Sent: 0, StreamEnd: ms_(50), TokenSource: record.TokensFromTokenizer}
	s := Summarize([]record.Request{empty, req(2, 0, 0, []float64{10, 20})}, Options{})
	if s.Completed != 2 || s.TTFT.Count != 1 || s.AdjustedTTFT.Count != 2 || !math.IsInf(s.AdjustedTTFT.Max, 1) {
		t.Errorf("completed %d, ttft %+v, adjusted %+v", s.Completed, s.TTFT, s.AdjustedTTFT)
	}
	w := strings.Join(s.Warnings, "\n")
	for _, want := range []string{"1 completed requests carried no content", "1 counted by knee's tokenizer"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", s.Warnings, want)
		}
	}
	if s.TokenSources["usage"] != 1 || s.TokenSources["tokenizer"] != 1 {
		t.Errorf("token sources = %v", s.TokenSources)
	}
}

func TestAbsurdTimestampsStayBounded(t *testing.T) {
	r := req(1, 0, 0, []float64{100, float64(1e12)}) // a token 31 years in
	s := Summarize([]record.Request{r}, Options{Series: true})
	if len(s.TimeSeries) > maxSeriesSeconds {
		t.Errorf("series has %d seconds", len(s.TimeSeries))
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "time series stops") {
		t.Errorf("warnings = %q", s.Warnings)
	}
}

func TestAccumulatorMatchesSummarizeAndIsConcurrent(t *testing.T) {
	recs := run()
	want := Summarize(recs, Options{Series: true})
	a := NewAccumulator(Options{Series: true})
	var wg sync.WaitGroup
	for i := range recs {
		wg.Add(1)
		go func() { defer wg.Done(); a.Add(&recs[i]); _ = a.Summary() }()
	}
	wg.Wait()
	got, _ := json.Marshal(a.Summary())
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("concurrent accumulation differs:\n got %s\nwant %s", got, exp)
	}
}

// bigRecord is one completed request with 256 one-token chunks 20 ms apart.
func bigRecord(id int64) record.Request {
	chunks := make([]float64, 256)
	for i := range chunks {
		chunks[i] = float64(id) + 200 + 20*float64(i)
	}
	return req(id, float64(id), float64(id), chunks)
}

func BenchmarkAdd256TokenRecord(b *testing.B) {
	a := NewAccumulator(Options{Series: true, Good: func(*record.Request) bool { return true }})
	r := bigRecord(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Sent = ms_(float64(i))
		a.Add(&r)
	}
}

// TestMillionRequestsMemory is the memory claim at scale; it takes a few
// seconds, so it is skipped with -short.
func TestMillionRequestsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := NewAccumulator(Options{Series: true})
	r := bigRecord(0)
	for i := range 1_000_000 {
		off := ms_(float64(i) * 3) // 333 rps for 50 minutes
		r.Scheduled, r.Sent = off, off
		r.FirstToken, r.Done, r.StreamEnd = off+ms_(200), off+ms_(200+20*255), off+ms_(200+20*255+1)
		for j := range r.TokenTimes {
			r.TokenTimes[j] = off + ms_(200+20*float64(j))
		}
		a.Add(&r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("accumulator heap after 1M records of 256 tokens: %.1f MiB", float64(heap)/(1<<20))
	// 16 bytes per request for in-flight, slice growth slack, histograms.
	if heap > 64<<20 {
		t.Errorf("accumulator holds %d MiB after 1M records, want < 64", heap>>20)
	}
	s := a.Summary()
	if s.Requests != 1_000_000 || math.Abs(s.ITL.P99-20) > 0.02 || math.Abs(s.TTFT.P50-200) > 0.2 {
		t.Errorf("requests %d, itl p99 %v, ttft p50 %v", s.Requests, s.ITL.P99, s.TTFT.P50)
	}
	// 5301 ms requests sent every 3 ms: the one sent 5301 ms earlier ends at
	// the instant of a send, so 1767 overlap.
	if s.PeakInFlight != 1767 {
		t.Errorf("peak in flight = %d, want 1767", s.PeakInFlight)
	}
}

// TestPromptCheckAndRetries: served prompt lengths are compared with the
// requested ones over completed requests counted from usage, and a median
// beyond 2% is a warning; connection retries are summed.
func TestPromptCheckAndRetries(t *testing.T) {
	var recs []record.Request
	for i, served := range []int{100, 100, 101, 104, 110} {
		r := req(int64(i), 0, 1, []float64{10, 20})
		r.PromptTokensRequested, r.InputTokens, r.ConnectionRetries = 100, served, i%2
		recs = append(recs, r)
	}
	chunks := req(9, 0, 1, []float64{10})
	chunks.TokenSource, chunks.PromptTokensRequested, chunks.InputTokens = record.TokensFromChunks, 100, 100
	recs = append(recs, chunks, failed(10, 1, 2, record.ErrHTTP5xx))
	s := Summarize(recs, Options{})
	pc := s.PromptCheck
	if pc == nil || pc.Compared != 5 || pc.Exact != 2 || pc.WithinOne != 3 || math.Abs(pc.MedianOffPct-1) > 1e-6 || pc.Off() {
		t.Fatalf("prompt check %+v, want 5 compared, 2 exact, 3 within one, median +1%%", pc)
	}
	if s.ConnectionRetries != 2 {
		t.Errorf("connection retries %d, want 2", s.ConnectionRetries)
	}
	for _, w := range s.Warnings {
		if strings.Contains(w, "served prompts") {
			t.Errorf("a median of +1%% must not warn: %s", w)
		}
	}
	for i := range recs[:5] {
		recs[i].InputTokens += 10
	}
	s = Summarize(recs, Options{})
	if !s.PromptCheck.Off() || !strings.Contains(strings.Join(s.Warnings, "\n"), "a median 11.0% longer than requested") {
		t.Errorf("median +11%%: check %+v, warnings %q", s.PromptCheck, s.Warnings)
	}
}
