package scrape

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
)

func startKneeServe(t *testing.T) string {
	t.Helper()
	url, _ := simservertest.Start(t, func(c *simserver.Config) {
		c.Engine.MaxModelLen = 8192
		c.Engine.MaxNumSeqs = 4 // a small batch, so 12 streams queue on the server
	})
	return url
}

// TestScrapeKneeServeAgreesWithRecords: scraped histogram deltas over a run
// against knee serve hold exactly the run's requests, with means equal to
// the per-request truth the server sent each client and percentiles within
// a bucket of it.
func TestScrapeKneeServeAgreesWithRecords(t *testing.T) {
	url := startKneeServe(t)
	murl, err := MetricsURL(url + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	origin := time.Now()
	sc := Start(context.Background(), Config{URL: murl, Interval: 100 * time.Millisecond, Origin: origin})
	prompt := strings.Repeat("hello ", 200)
	run, err := loadgen.Start(context.Background(), loadgen.Config{BaseURL: url, API: "chat", Concurrency: 12, Requests: 48,
		IgnoreEOS: true, RequestTimeout: time.Minute}, func(int64) loadgen.Request {
		return loadgen.Request{Prompt: prompt, PromptTokens: 200, MaxTokens: 24}
	})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Wait()
	s := sc.Stop()
	if s.Server != "knee" {
		t.Fatalf("server detected as %q, want knee (notes %q)", s.Server, s.Notes)
	}
	w := s.Window(math.Inf(-1), math.Inf(1))
	if w == nil {
		t.Fatalf("no window from %d samples", len(s.Samples))
	}
	var queue, prefill, decode []float64
	for i := range res.Records {
		r := &res.Records[i]
		if !r.OK() || r.ServerPhases == nil {
			t.Fatalf("request %d: %s %s (server phases %v)", r.ID, r.Error, r.ErrorMessage, r.ServerPhases)
		}
		queue = append(queue, ms(r.ServerPhases.Queue))
		prefill = append(prefill, ms(r.ServerPhases.Prefill))
		decode = append(decode, ms(r.ServerPhases.Decode))
	}
	le := map[Metric][]float64{}
	for m, h := range s.Samples[len(s.Samples)-1].Hists {
		le[m] = h.LE
	}
	for _, c := range []struct {
		m     Metric
		truth []float64
	}{{Queue, queue}, {Prefill, prefill}, {Decode, decode}} {
		h, ok := w.Hists[c.m]
		if !ok {
			t.Fatalf("no %s histogram", c.m)
		}
		if int(h.Count) != len(c.truth) {
			t.Errorf("%s: scraped count %v, run has %d requests", c.m, h.Count, len(c.truth))
		}
		mean := 0.0
		for _, v := range c.truth {
			mean += v / float64(len(c.truth))
		}
		sort.Float64s(c.truth)
		p50 := c.truth[len(c.truth)/2]
		lo, hi := bucketAround(le[c.m], p50/1000)
		t.Logf("%s: scraped count %v mean %.2f ms p50 %.1f ms; records mean %.2f ms p50 %.1f ms (bucket %g–%g s)",
			c.m, h.Count, h.MeanMS, h.P50MS, mean, p50, lo, hi)
		// The header reports whole microseconds; the histogram sums float seconds.
		if math.Abs(h.MeanMS-mean) > 0.01 {
			t.Errorf("%s: scraped mean %.4f ms, records %.4f ms", c.m, h.MeanMS, mean)
		}
		if h.P50MS < 1000*lo-1e-6 || h.P50MS > 1000*hi+1e-6 {
			t.Errorf("%s: scraped p50 %.2f ms outside the bucket (%g, %g] s of the true p50 %.2f ms", c.m, h.P50MS, lo, hi, p50)
		}
	}
	if g := w.Gauges[Running]; g.Max > 4 || g.Max < 1 {
		t.Errorf("running max %v with max_num_seqs 4", g.Max)
	}
	if g := w.Gauges[Waiting]; g.Max < 1 {
		t.Errorf("waiting max %v: 12 streams on 4 slots must queue", g.Max)
	}
	sp := Join(res.Records, w)
	if sp == nil || sp.Source != SourcePerRequest || sp.ServerQueueMS <= 0 {
		t.Fatalf("split %+v", sp)
	}
	if math.Abs(sp.ServerQueueMS-w.Hists[Queue].MeanMS) > 0.01 {
		t.Errorf("per-request queue %.3f ms, scraped %.3f ms", sp.ServerQueueMS, w.Hists[Queue].MeanMS)
	}
	// Timings without the queue (llama.cpp's) do not split TTFT: the
	// histograms do. Nor do no timings at all.
	for i := range res.Records {
		res.Records[i].ServerPhases.QueueUnknown = true
	}
	if sq := Join(res.Records, w); sq.Source != SourceHistograms {
		t.Errorf("queue-less timings: split from %s", sq.Source)
	}
	for i := range res.Records {
		res.Records[i].ServerPhases = nil
	}
	sh := Join(res.Records, w)
	if sh.Source != SourceHistograms || math.Abs(sh.ServerQueueMS-sp.ServerQueueMS) > 0.01 || math.Abs(sh.ServerPrefillMS-sp.ServerPrefillMS) > 0.01 {
		t.Errorf("histogram split %+v, per-request %+v", sh, sp)
	}
	if sp.OverheadMS < -1 || sp.OverheadMS > sp.ClientTTFTMS {
		t.Errorf("overhead %.2f ms of client TTFT %.2f ms", sp.OverheadMS, sp.ClientTTFTMS)
	}
}

func bucketAround(le []float64, v float64) (lo, hi float64) {
	for _, b := range le {
		if v <= b {
			return lo, b
		}
		lo = b
	}
	return lo, math.Inf(1)
}

func TestScraperEndpointDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/metrics"
	srv.Close() // nothing listens now
	sc := Start(context.Background(), Config{URL: url, Interval: 50 * time.Millisecond})
	s := sc.Stop()
	if len(s.Samples) == 0 || s.Samples[0].OK() {
		t.Fatalf("samples %+v", s.Samples)
	}
	if len(s.Notes) == 0 || !strings.Contains(s.Notes[0], "scrapes of "+url+" failed") {
		t.Fatalf("notes %q", s.Notes)
	}
	if s.Window(0, 1e9) != nil {
		t.Error("a window from failed scrapes")
	}
}

func TestScraperSlowEndpointNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# TYPE vllm:num_requests_running gauge\n"))
		w.(http.Flusher).Flush()
		select { // a server that never finishes its answer
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	sc := Start(context.Background(), Config{URL: srv.URL + "/metrics", Interval: 50 * time.Millisecond, Timeout: 100 * time.Millisecond})
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Start took %v: it must return at once", d)
	}
	s := sc.Stop()
	// Generous bound for a busy machine: two timeouts of 100 ms, not forever.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Stop took %v with a hanging endpoint", d)
	}
	if len(s.Samples) == 0 || s.Samples[0].OK() || !strings.Contains(s.Samples[0].Err, "within") && !strings.Contains(s.Samples[0].Err, "timed out") {
		t.Fatalf("samples %+v", s.Samples)
	}
}

func TestMetricsURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:8000":            "http://localhost:8000/metrics",
		"http://localhost:8000/v1":         "http://localhost:8000/metrics",
		"https://u:p@gw.example/llm/v1/?k": "https://gw.example/llm/metrics",
	} {
		if got, err := MetricsURL(in); err != nil || got != want {
			t.Errorf("MetricsURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := MetricsURL("localhost:8000"); err == nil {
		t.Error("a URL without scheme accepted")
	}
}

// TestScraper20MBEndpointDuringLoad: a metrics endpoint answering 20 MB of
// series on every scrape, scraped every 50 ms while a load runs against
// knee serve: every request of the load completes, and each scrape is
// refused as too large (bounded read), not parsed whole.
func TestScraper20MBEndpointDuringLoad(t *testing.T) {
	url := startKneeServe(t)
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, &bigExposition{n: 20 << 20, line: []byte("vllm:num_requests_running{engine=\"0000000000\",model_name=\"m\"} 1.0\n")})
	}))
	defer huge.Close()
	sc := Start(context.Background(), Config{URL: huge.URL + "/metrics", Interval: 50 * time.Millisecond})
	run, err := loadgen.Start(context.Background(), loadgen.Config{BaseURL: url, API: "chat", Concurrency: 4, Requests: 24,
		IgnoreEOS: true, RequestTimeout: time.Minute}, func(int64) loadgen.Request {
		return loadgen.Request{Prompt: "hello there", PromptTokens: 2, MaxTokens: 16}
	})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Wait()
	s := sc.Stop()
	for i := range res.Records {
		if r := &res.Records[i]; !r.OK() {
			t.Errorf("request %d: %s %s", r.ID, r.Error, r.ErrorMessage)
		}
	}
	if len(res.Records) != 24 {
		t.Errorf("%d records, want 24", len(res.Records))
	}
	if len(s.Samples) == 0 {
		t.Fatal("no scrapes")
	}
	for _, smp := range s.Samples {
		if smp.OK() || !strings.Contains(smp.Err, "too large") && !strings.Contains(smp.Err, "within") {
			t.Fatalf("scrape of 20 MB: %+v; want refused as too large", smp)
		}
	}
	t.Logf("%d scrapes of a 20 MB endpoint during the load, each refused: %s", len(s.Samples), s.Samples[0].Err)
}
