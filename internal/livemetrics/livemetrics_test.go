package livemetrics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
)

// streamer answers chat completions with tokens chunks; every fifth request
// gets a 500. Each request first waits for gate, and parked counts those
// waiting, so a test can look at the endpoint while requests are in flight.
type streamer struct {
	tokens int
	gate   chan struct{}
	parked atomic.Int64
	n      atomic.Int64
}

func (s *streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.n.Add(1)%5 == 0 {
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	}
	s.parked.Add(1)
	<-s.gate
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := range s.tokens {
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d \"},\"finish_reason\":null}]}\n\n", i)
		fl.Flush()
	}
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", s.tokens, s.tokens+7)
	fl.Flush()
}

func scrapeOnce(t *testing.T, addr string) scrape.Sample {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p, err := scrape.Parse(resp.Body, scrape.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Server != "knee-client" {
		t.Fatalf("the scraper read the endpoint as %q, want knee-client", p.Server)
	}
	return p.Sample
}

func TestEndpointAgreesWithSummary(t *testing.T) {
	srvImpl := &streamer{tokens: 6, gate: make(chan struct{})}
	target := httptest.NewServer(srvImpl)
	defer target.Close()
	m := New(Info{Kind: "bench", Run: "1", Model: "m", Target: "test"})
	ep, err := m.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()

	const concurrency, requests = 4, 30
	cfg := loadgen.Config{BaseURL: target.URL, Model: "m", Concurrency: concurrency, Requests: requests,
		WarmupRequests: 2, RequestTimeout: time.Minute, OnRecord: m.Observe}
	run, err := loadgen.Start(context.Background(), cfg, func(int64) loadgen.Request {
		return loadgen.Request{Prompt: "hello there", PromptTokens: 7, MaxTokens: 6}
	})
	if err != nil {
		t.Fatal(err)
	}
	m.SetInFlight(func() float64 { return float64(run.Snapshot().InFlight) })

	// During the run: every worker holds a request at the gate (the first
	// 500 has come and gone), so in-flight is the concurrency exactly.
	for srvImpl.parked.Load() < concurrency {
		time.Sleep(time.Millisecond) // waits for a state, asserts nothing on time
	}
	mid := scrapeOnce(t, ep.Addr())
	if got := mid.Values[scrape.InFlight]; got != concurrency {
		t.Errorf("in flight during the run: %v, want %d", got, concurrency)
	}
	if got := mid.Values[scrape.RequestsDone]; got != 0 {
		t.Errorf("completed before any stream was let go: %v, want 0", got)
	}
	close(srvImpl.gate)
	res := run.Wait()

	end := scrapeOnce(t, ep.Addr())
	sum := stats.Summarize(res.Records, stats.Options{})
	if sum.Errors == 0 || sum.Completed == 0 {
		t.Fatalf("the run must have both completions and errors: %+v", sum)
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"completed", end.Values[scrape.RequestsDone], float64(sum.Completed)},
		{"errors", end.Values[scrape.Failed], float64(sum.Errors)},
		{"output tokens", end.Values[scrape.GenerationTokens], float64(sum.OutputTokens)},
		{"input tokens", end.Values[scrape.PromptTokens], float64(sum.InputTokens)},
		{"in flight after the run", end.Values[scrape.InFlight], 0},
		{"TTFT count", end.Hists[scrape.TTFT].Count, float64(sum.TTFT.Count)},
		{"ITL count", end.Hists[scrape.ITL].Count, float64(sum.ITL.Count)},
		{"E2E count", end.Hists[scrape.E2E].Count, float64(sum.E2E.Count)},
		{"lag count", end.Hists[scrape.SendLag].Count, float64(sum.Lag.Count)},
	} {
		if c.got != c.want {
			t.Errorf("%s: endpoint %v, summary %v", c.what, c.got, c.want)
		}
	}
	// Sums agree to float rounding (the summary keeps ms, the endpoint s),
	// and to the summary's mean, rounded to a nanosecond: up to 0.5 ns a
	// request once multiplied back by the count (a run of 20 fast TTFTs
	// was 10 ns apart, past a bound of 1e-6 of the sum alone).
	if got, want := end.Hists[scrape.TTFT].Sum*1000, sum.TTFT.Mean*float64(sum.TTFT.Count); math.Abs(got-want) > 1e-6*want+0.5e-6*float64(sum.TTFT.Count) {
		t.Errorf("TTFT sum: endpoint %v ms, summary %v ms", got, want)
	}
}

func TestNamesPassPromlint(t *testing.T) {
	m := New(Info{Kind: "bench"})
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if len(mfs) < 12 {
		t.Errorf("%d families, want every metric registered", len(mfs))
	}
}

func TestResolveAddr(t *testing.T) {
	for _, c := range []struct {
		in, want string
		public   bool
	}{{":9464", "127.0.0.1:9464", false}, {"9464", "127.0.0.1:9464", false}, {"localhost:1", "localhost:1", false},
		{"0.0.0.0:9464", "0.0.0.0:9464", true}, {"[::1]:9", "[::1]:9", false}} {
		got, public, err := ResolveAddr(c.in)
		if err != nil || got != c.want || public != c.public {
			t.Errorf("ResolveAddr(%q) = %q, %v, %v; want %q, %v", c.in, got, public, err, c.want, c.public)
		}
	}
	if _, _, err := ResolveAddr("a:b:c"); err == nil {
		t.Error("a:b:c must be refused")
	}
}

// TestLinger: after the run, the endpoint answers until the linger ends or
// its context is done (Ctrl-C), then Close stops it.
func TestLinger(t *testing.T) {
	m := New(Info{Kind: "bench"})
	srv, err := m.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Linger(ctx, time.Hour); close(done) }()
	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape while lingering: %v %v", resp, err)
	}
	resp.Body.Close()
	select {
	case <-done:
		t.Fatal("Linger returned before its time or its context")
	default:
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Linger did not end when its context was done")
	}
	srv.Close()
	if _, err := http.Get("http://" + srv.Addr() + "/metrics"); err == nil {
		t.Error("the endpoint still answers after Close")
	}
	srv.Linger(context.Background(), 0) // 0: no wait
}

// TestBucketBoundsRounded: bounds read le="0.00166", not
// le="0.001662776841597282", and stay increasing.
func TestBucketBoundsRounded(t *testing.T) {
	m := New(Info{Kind: "bench"})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	re := regexp.MustCompile(`le="([^"]+)"`)
	matches := re.FindAllStringSubmatch(body, -1)
	if len(matches) == 0 {
		t.Fatalf("no buckets:\n%s", body)
	}
	for _, mm := range matches {
		if mm[1] == "+Inf" {
			continue
		}
		v, err := strconv.ParseFloat(mm[1], 64)
		if err != nil || strconv.FormatFloat(v, 'g', 3, 64) != strconv.FormatFloat(v, 'g', -1, 64) {
			t.Errorf("bucket bound le=%q: want 3 significant digits at most", mm[1])
		}
	}
	for _, bs := range [][]float64{roundBuckets(prometheus.ExponentialBucketsRange(0.001, 120, 24)), roundBuckets(prometheus.ExponentialBucketsRange(0.0005, 5, 20))} {
		for i := 1; i < len(bs); i++ {
			if bs[i] <= bs[i-1] {
				t.Errorf("bounds not increasing after rounding: %v", bs)
			}
		}
	}
}
