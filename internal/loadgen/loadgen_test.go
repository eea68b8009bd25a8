package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

func run(t testing.TB, cfg Config, src Source) *Result {
	t.Helper()
	r, err := Start(context.Background(), cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	return r.Wait()
}

// p99abs is the 99th percentile of |d|.
func p99abs(ds []time.Duration) time.Duration {
	a := make([]time.Duration, len(ds))
	for i, d := range ds {
		a[i] = max(d, -d)
	}
	slices.Sort(a)
	return a[int(math.Ceil(0.99*float64(len(a))))-1]
}

// TestTruth holds reported TTFT and ITL to the server's recorded write
// times: 50 concurrent streams of 50 tokens, p99 error within 1 ms.
//
// The error includes how promptly the OS runs this process, which on a
// shared 2-core machine is not the client's doing. So each run also
// measures that floor: a bare reader on a raw loopback socket, fed at the
// same cadence in the same process at the same time. The client must be
// within 1 ms of the truth beyond that floor (on a quiet machine the floor
// is tens of microseconds, so this is the plain 1 ms bound). A run that
// misses is repeated (three at most), and every run's figures are logged.
// A client that timestamps wrongly (after parsing, per event instead of
// per read, ...) fails all three.
func TestTruth(t *testing.T) {
	var pt, pi, floor time.Duration
	var stamps string
	for attempt := 1; attempt <= 3; attempt++ {
		stopFloor := schedulingFloor(t, 20, 10*time.Millisecond)
		var res *Result
		pt, pi, res = truthRun(t, 50, 50, 10*time.Millisecond)
		floor = stopFloor()
		t.Logf("run %d: truth error p99: ttft %v, itl %v; bare-socket floor p99 %v; %d streams stamped in user space",
			attempt, pt, pi, floor, res.UserStampedStreams)
		// Every stream must use the kernel's stamps where it has them. A
		// run can still miss a few (the kernel switches stamping on
		// through deferred work); a client that never uses them misses
		// in every run.
		stamps = ""
		if res.KernelTimestamps != kernelStampsSupported || (kernelStampsSupported && res.UserStampedStreams != 0) {
			stamps = fmt.Sprintf("KernelTimestamps %v with %d streams stamped in user space; kernel stamps supported: %v",
				res.KernelTimestamps, res.UserStampedStreams, kernelStampsSupported)
		}
		if raceEnabled {
			if stamps != "" {
				continue
			}
			t.Skip("race detector on: records checked, timing bound not")
		}
		if stamps == "" && pt <= time.Millisecond+floor && pi <= time.Millisecond+floor {
			return
		}
	}
	if stamps != "" {
		t.Error(stamps)
	}
	if !raceEnabled && (pt > time.Millisecond+floor || pi > time.Millisecond+floor) {
		t.Errorf("p99 error ttft %v itl %v, want <= 1ms beyond the floor %v (3 runs)", pt, pi, floor)
	}
}

// schedulingFloor runs `pairs` bare loopback TCP pairs, each writing a
// few bytes every gap and reading them back, until the returned function
// is called; that function returns the p99 delay from write to read: the
// best any reader in this process could do at that moment.
func schedulingFloor(t *testing.T, pairs int, gap time.Duration) func() time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var mu sync.Mutex
	var delays []time.Duration
	var wg sync.WaitGroup
	for range pairs {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		sent := make(chan time.Time, 64)
		wg.Add(2)
		go func() { // writer
			defer wg.Done()
			defer s.Close()
			tick := time.NewTicker(gap)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					sent <- time.Now()
					if _, err := s.Write([]byte("x")); err != nil {
						return
					}
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			defer c.Close()
			buf := make([]byte, 64)
			for {
				n, err := c.Read(buf)
				at := time.Now()
				if err != nil {
					return
				}
				for range n {
					w := <-sent
					mu.Lock()
					delays = append(delays, at.Sub(w))
					mu.Unlock()
				}
			}
		}()
	}
	ln.Close()
	return func() time.Duration {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(delays) == 0 {
			return 0
		}
		return p99abs(delays)
	}
}

// truthRun streams two rounds of `streams` concurrent requests of
// `tokens` tokens each, one every gap (the second round on the first's
// kept-alive connections), checks every record, and returns the p99
// absolute error of TTFT and ITL against the server's write times.
func truthRun(t *testing.T, streams, tokens int, gap time.Duration) (ttftP99, itlP99 time.Duration, res *Result) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: tokens, first: 20 * time.Millisecond, gap: gap} })
	res = run(t, Config{BaseURL: ts.URL, Model: "m", Concurrency: streams, Requests: int64(2 * streams)}, promptSource(tokens))
	if len(res.Records) != 2*streams {
		t.Fatalf("%d records, want %d", len(res.Records), 2*streams)
	}
	var ttftErr, itlErr []time.Duration
	for i := range res.Records {
		rec := &res.Records[i]
		if !rec.OK() {
			t.Fatalf("request %d: %s %s", rec.ID, rec.Error, rec.ErrorMessage)
		}
		if rec.OutputTokens != tokens || rec.InputTokens != 7 || rec.TokenSource != record.TokensFromUsage ||
			len(rec.TokenTimes) != tokens || rec.FinishReason != "length" || rec.HTTPStatus != 200 {
			t.Fatalf("request %d: out %d in %d source %q chunks %d finish %q status %d", rec.ID, rec.OutputTokens,
				rec.InputTokens, rec.TokenSource, len(rec.TokenTimes), rec.FinishReason, rec.HTTPStatus)
		}
		truth := ts.truth("req-" + itoa(rec.ID))
		if len(truth) != tokens {
			t.Fatalf("request %d: server wrote %d tokens", rec.ID, len(truth))
		}
		if len(rec.ServerWriteTimes) != tokens {
			t.Fatalf("request %d: %d server write times, want %d", rec.ID, len(rec.ServerWriteTimes), tokens)
		}
		for k, w := range truth {
			off := w.Sub(res.Start)
			// Causality: a chunk cannot be read before it was written.
			if rec.TokenTimes[k] < off {
				t.Fatalf("request %d token %d read at %v, before its write at %v", rec.ID, k, rec.TokenTimes[k], off)
			}
			// The reported write times are the server's, on its origin.
			if d := (rec.ServerWriteTimes[k] - rec.ServerWriteTimes[0]) - w.Sub(truth[0]); d > time.Microsecond || d < -time.Microsecond {
				t.Fatalf("request %d token %d: server write time %v (first %v), truth %v after the first",
					rec.ID, k, rec.ServerWriteTimes[k], rec.ServerWriteTimes[0], w.Sub(truth[0]))
			}
			if k == 0 {
				ttft, _ := rec.TTFT()
				ttftErr = append(ttftErr, ttft-(off-rec.Sent))
			} else {
				itl := rec.TokenTimes[k] - rec.TokenTimes[k-1]
				itlErr = append(itlErr, itl-truth[k].Sub(truth[k-1]))
			}
		}
		if rec.ServerPhases == nil || rec.ServerPhases.Queue != 1500*time.Microsecond || rec.ServerPhases.Prefill != 20*time.Millisecond ||
			len(rec.ServerTokenTimes) != 2 {
			t.Fatalf("request %d: server phases %+v token times %v", rec.ID, rec.ServerPhases, rec.ServerTokenTimes)
		}
	}
	return p99abs(ttftErr), p99abs(itlErr), res
}

// TestTimestampSource: kernel receive stamps by default where supported,
// on kept-alive connections too (every token at or after its write and
// the stream's own order kept); user-space ones when asked or when the
// caller brings its own transport, and the Result says which.
func TestTimestampSource(t *testing.T) {
	const streams, requests, tokens = 4, 40, 5
	ts := newTruthServer(t, func(string) plan { return plan{tokens: tokens, first: 2 * time.Millisecond, gap: time.Millisecond} })
	for _, c := range []struct {
		name       string
		cfg        Config
		wantKernel bool
	}{
		{"default", Config{}, kernelStampsSupported},
		{"user-space asked", Config{UserSpaceTimestamps: true}, false},
		{"own transport", Config{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.BaseURL, cfg.Model, cfg.Concurrency, cfg.Requests = ts.URL, "m", streams, requests
			conns0 := ts.conns.Load()
			res := run(t, cfg, promptSource(tokens))
			if conns := ts.conns.Load() - conns0; conns > streams {
				t.Errorf("%d connections for %d workers: not kept alive", conns, streams)
			}
			if res.KernelTimestamps != c.wantKernel {
				t.Errorf("KernelTimestamps %v, want %v (%d streams stamped in user space)", res.KernelTimestamps, c.wantKernel, res.UserStampedStreams)
			}
			if want := int64(requests); !c.wantKernel && res.UserStampedStreams != want {
				t.Errorf("%d streams stamped in user space, want %d", res.UserStampedStreams, want)
			}
			for i := range res.Records {
				rec := &res.Records[i]
				truth := ts.truth("req-" + itoa(rec.ID))
				if !rec.OK() || len(rec.TokenTimes) != len(truth) {
					t.Fatalf("request %d: %s %s; %d chunks for %d writes", rec.ID, rec.Error, rec.ErrorMessage, len(rec.TokenTimes), len(truth))
				}
				for k, w := range truth {
					if at := rec.TokenTimes[k]; at < w.Sub(res.Start) || (k > 0 && at < rec.TokenTimes[k-1]) || at > rec.StreamEnd {
						t.Fatalf("request %d token %d at %v: written at %v, previous %v, stream end %v",
							rec.ID, k, at, w.Sub(res.Start), rec.TokenTimes[max(k-1, 0)], rec.StreamEnd)
					}
				}
			}
		})
	}
}

func itoa(i int64) string { return strings.TrimPrefix(promptSource(0)(i).Prompt, "req-") }

// TestErrorKinds runs one load against a server misbehaving in every way
// SPEC §2 names, and checks each request's kind while the good ones stay
// intact.
func TestErrorKinds(t *testing.T) {
	cases := []struct {
		plan    plan
		kind    record.ErrorKind
		status  int
		message string
	}{
		{plan{tokens: 3}, record.ErrNone, 200, ""},
		{plan{status: 404}, record.ErrHTTP4xx, 404, "test says 404"},
		{plan{status: 500}, record.ErrHTTP5xx, 500, "500 Internal Server Error"},
		{plan{status: 429}, record.ErrRejected, 429, "Retry-After: 2"},
		{plan{status: 503}, record.ErrRejected, 503, "503"},
		{plan{html: true}, record.ErrBadPayload, 200, "502 Bad Gateway"},
		{plan{tokens: 5, cutAfter: 2}, record.ErrStreamBroken, 200, ""},
		{plan{tokens: 5, errorEvent: true}, record.ErrHTTP5xx, 200, "engine died"},
		{plan{tokens: 3, noDone: true}, record.ErrNone, 200, ""},                    // finish_reason is enough
		{plan{tokens: 3, noUsage: true}, record.ErrNone, 200, ""},                   // counts chunks
		{plan{tokens: 6, perChunk: 3}, record.ErrNone, 200, ""},                     // multi-token chunks
		{plan{tokens: 4, stall: 2 * time.Second}, record.ErrTimeout, 0, "deadline"}, // RequestTimeout
	}
	ts := newTruthServer(t, func(prompt string) plan { return cases[promptID(prompt)%int64(len(cases))].plan })
	n := int64(len(cases) * 2)
	res := run(t, Config{BaseURL: ts.URL + "/v1", Model: "m", Concurrency: 8, Requests: n, RequestTimeout: 500 * time.Millisecond},
		promptSource(16))
	if int64(len(res.Records)) != n {
		t.Fatalf("%d records, want %d", len(res.Records), n)
	}
	for i := range res.Records {
		rec := &res.Records[i]
		c := cases[rec.ID%int64(len(cases))]
		if rec.Error != c.kind || rec.HTTPStatus != c.status || !strings.Contains(rec.ErrorMessage, c.message) {
			t.Errorf("case %d (%+v): got kind %q status %d message %q; want %q %d containing %q",
				rec.ID%int64(len(cases)), c.plan, rec.Error, rec.HTTPStatus, rec.ErrorMessage, c.kind, c.status, c.message)
		}
		switch {
		case c.plan.perChunk > 0:
			if rec.OutputTokens != 6 || len(rec.TokenTimes) != 2 || !slices.Equal(rec.TokenCounts, []int32{3, 3}) {
				t.Errorf("multi-token: out %d chunks %d counts %v", rec.OutputTokens, len(rec.TokenTimes), rec.TokenCounts)
			}
		case c.plan.noUsage:
			if rec.TokenSource != record.TokensFromChunks || rec.OutputTokens != 3 || rec.InputTokens != 7 {
				t.Errorf("no usage: source %q out %d in %d", rec.TokenSource, rec.OutputTokens, rec.InputTokens)
			}
			// Without the final knee_timing, the phase headers still count.
			if rec.ServerPhases == nil || rec.ServerPhases.Queue != 1500*time.Microsecond || rec.ServerTokenTimes != nil {
				t.Errorf("no usage: server phases %+v token times %v, want queue 1.5ms from the header", rec.ServerPhases, rec.ServerTokenTimes)
			}
		case c.plan.cutAfter > 0:
			if len(rec.TokenTimes) != 2 || rec.FirstToken == 0 {
				t.Errorf("cut stream kept %d chunks, want the 2 received", len(rec.TokenTimes))
			}
		case c.kind == record.ErrNone:
			if rec.OutputTokens != c.plan.tokens || rec.TokenSource != record.TokensFromUsage {
				t.Errorf("ok case %+v: out %d source %q", c.plan, rec.OutputTokens, rec.TokenSource)
			}
		}
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	res := run(t, Config{BaseURL: "http://" + addr, Model: "m", Concurrency: 2, Requests: 4}, promptSource(4))
	if len(res.Records) != 4 {
		t.Fatalf("%d records", len(res.Records))
	}
	for _, rec := range res.Records {
		if rec.Error != record.ErrConnect || !strings.Contains(rec.ErrorMessage, "refused") {
			t.Errorf("request %d: %q %q, want connect / refused", rec.ID, rec.Error, rec.ErrorMessage)
		}
	}
}

// TestGraceCancels: at the end of the run, in-flight requests get the
// grace period, then are recorded as canceled; the run's other results
// stay.
func TestGraceCancels(t *testing.T) {
	ts := newTruthServer(t, func(prompt string) plan {
		if promptID(prompt) == 0 {
			return plan{tokens: 2}
		}
		return plan{tokens: 100, first: 10 * time.Millisecond, gap: 50 * time.Millisecond}
	})
	r, err := Start(context.Background(), Config{BaseURL: ts.URL, Model: "m", RateRPS: 20, Duration: 150 * time.Millisecond,
		Grace: 100 * time.Millisecond}, promptSource(100))
	if err != nil {
		t.Fatal(err)
	}
	res := r.Wait()
	if len(res.Records) != 3 {
		t.Fatalf("%d records, want 3 (arrivals at 0, 50, 100 ms)", len(res.Records))
	}
	if !res.Records[0].OK() {
		t.Errorf("first request %q %s", res.Records[0].Error, res.Records[0].ErrorMessage)
	}
	for _, rec := range res.Records[1:] {
		if rec.Error != record.ErrCanceled || len(rec.TokenTimes) == 0 || rec.Warmup {
			t.Errorf("request %d: %q with %d chunks (warmup %v), want canceled with its chunks so far, still measured: the grace ran out, nobody interrupted", rec.ID, rec.Error, len(rec.TokenTimes), rec.Warmup)
		}
	}
	if res.Interrupted != 0 {
		t.Errorf("Interrupted = %d after a grace expiry, want 0", res.Interrupted)
	}
	if s := r.Snapshot(); s.Sent != 3 || s.InFlight != 0 || s.ErrorsByKind[record.ErrCanceled] != 2 || s.Issuing {
		t.Errorf("snapshot %+v", s)
	}
}

func TestClosedLoop(t *testing.T) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 4, gap: time.Millisecond} })
	var seen atomic.Int64
	res := run(t, Config{BaseURL: ts.URL, Model: "m", API: "completions", Concurrency: 4, Requests: 40, WarmupRequests: 8,
		APIKey: "sk-secret", IgnoreEOS: true, MinTokens: true,
		OnRecord: func(*record.Request) { seen.Add(1) }}, promptSource(4))
	for i, b := range ts.bodies {
		if !strings.Contains(b, `"prompt":"req-`) || !strings.Contains(b, `"ignore_eos":true`) || !strings.Contains(b, `"min_tokens":4`) ||
			!strings.Contains(b, `"max_tokens":4`) || !strings.Contains(b, `"include_usage":true`) || ts.authHdr[i] != "Bearer sk-secret" {
			t.Fatalf("request body %s, Authorization %q", b, ts.authHdr[i])
		}
	}
	if len(res.Records) != 40 || seen.Load() != 40 || res.PeakInFlight > 4 || res.PeakInFlight < 1 || res.OfferedRateRPS != 0 {
		t.Fatalf("records %d seen %d peak %d offered %g", len(res.Records), seen.Load(), res.PeakInFlight, res.OfferedRateRPS)
	}
	for i, rec := range res.Records {
		if rec.ID != int64(i) || !rec.OK() || rec.InFlightAtSend > 4 || rec.Warmup != (i < 8) || rec.Sent < rec.Scheduled {
			t.Errorf("record %d: %+v", i, rec)
		}
		if strings.Contains(rec.ErrorMessage, "sk-secret") {
			t.Errorf("record %d leaks the API key", i)
		}
	}
}

// TestClosedLoopRamp: workers start spread evenly over the ramp.
func TestClosedLoopRamp(t *testing.T) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 1, stall: 500 * time.Millisecond} })
	res := run(t, Config{BaseURL: ts.URL, Model: "m", Concurrency: 4, Requests: 4, Ramp: 400 * time.Millisecond}, promptSource(1))
	var sched []time.Duration
	for _, rec := range res.Records {
		sched = append(sched, rec.Scheduled)
	}
	slices.Sort(sched)
	for k, s := range sched {
		// Worker k may not start before k·ramp/4 (lower bounds only: a
		// busy machine can only make it later).
		if lo := time.Duration(k) * 100 * time.Millisecond; s < lo {
			t.Errorf("worker start %d at %v, before %v", k, s, lo)
		}
	}
}

// expSchedule is a Poisson process: exponential gaps at rate, seeded.
type expSchedule struct {
	rng  *rand.Rand
	rate float64
	t    float64
}

func (e *expSchedule) Next() time.Duration {
	at := e.t
	e.t += e.rng.ExpFloat64() / e.rate
	return time.Duration(at * float64(time.Second))
}

// TestOpenLoopFidelity: Poisson arrivals at 200/s against a server that
// stalls every tenth response for seconds. The dispatcher must send every
// arrival on time regardless.
func TestOpenLoopFidelity(t *testing.T) {
	const rate, dur = 200.0, 2500 * time.Millisecond
	ts := newTruthServer(t, func(prompt string) plan {
		if promptID(prompt)%10 == 3 {
			return plan{tokens: 2, stall: 3 * time.Second}
		}
		return plan{tokens: 3, gap: time.Millisecond}
	})
	// The offered load is this schedule's realized arrivals in the window.
	probe := &expSchedule{rng: rand.New(rand.NewPCG(1, 2)), rate: rate}
	offered := 0
	for probe.Next() < dur {
		offered++
	}
	res := run(t, Config{BaseURL: ts.URL, Model: "m", Arrivals: &expSchedule{rng: rand.New(rand.NewPCG(1, 2)), rate: rate},
		RateRPS: rate, Duration: dur, Grace: -1}, promptSource(3))
	sent := len(res.Records)
	var lags []time.Duration
	stalledInFlight := 0
	for _, rec := range res.Records {
		lags = append(lags, rec.Lag())
		if rec.ID%10 == 3 {
			stalledInFlight++
		}
	}
	achieved := float64(sent) / dur.Seconds()
	offeredRate := float64(offered) / dur.Seconds()
	p99lag := p99abs(lags)
	t.Logf("offered %.1f/s (%d arrivals, nominal %.0f/s), achieved send rate %.1f/s, p99 lag %v, %d stalled requests, peak in flight %d",
		offeredRate, offered, rate, achieved, p99lag, stalledInFlight, res.PeakInFlight)
	if math.Abs(achieved-offeredRate)/offeredRate > 0.02 {
		t.Errorf("achieved %.1f/s, offered %.1f/s: off by more than 2%%", achieved, offeredRate)
	}
	// Stalls keep requests in flight for seconds; the sender must not care.
	if res.PeakInFlight < stalledInFlight/2 {
		t.Errorf("peak in flight %d with %d stalled requests: stalls throttled the sender", res.PeakInFlight, stalledInFlight)
	}
	// A sender throttled by the 3 s stalls would lag by seconds; scheduling
	// noise on a busy machine (or the race detector) costs milliseconds.
	slices.Sort(lags)
	if med := lags[len(lags)/2]; med > 250*time.Millisecond || lags[0] < 0 {
		t.Errorf("lag median %v min %v: the dispatcher fell behind", med, lags[0])
	}
	if res.OfferedRateRPS != rate {
		t.Errorf("OfferedRateRPS %g", res.OfferedRateRPS)
	}
}

// TestMaxConcurrencyLagAndDrops: with a cap, arrivals wait for a slot;
// the wait is lag, and those still waiting at the end are dropped.
func TestMaxConcurrencyLagAndDrops(t *testing.T) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 1, stall: 200 * time.Millisecond} })
	res := run(t, Config{BaseURL: ts.URL, Model: "m", RateRPS: 100, MaxConcurrency: 2, Duration: 500 * time.Millisecond, Grace: -1},
		promptSource(1))
	maxLag := time.Duration(0)
	for _, rec := range res.Records {
		if rec.InFlightAtSend > 2 {
			t.Errorf("request %d sent with %d in flight, cap 2", rec.ID, rec.InFlightAtSend)
		}
		maxLag = max(maxLag, rec.Lag())
	}
	t.Logf("%d sent, %d dropped, max lag %v", len(res.Records), res.Dropped, maxLag)
	if res.PeakInFlight > 2 || maxLag < 100*time.Millisecond || res.Dropped < 10 || len(res.Records)+int(res.Dropped) > 50 {
		t.Errorf("peak %d max lag %v dropped %d sent %d", res.PeakInFlight, maxLag, res.Dropped, len(res.Records))
	}
}

func TestRampWarp(t *testing.T) {
	ramp := 10 * time.Second
	// Arrivals of a 1/s schedule: during the ramp the rate rises linearly,
	// so the k-th arrival is sent at sqrt(2·ramp·k); after the ramp every
	// arrival is shifted by ramp/2.
	for _, c := range [][2]time.Duration{{0, 0}, {2 * time.Second, time.Duration(math.Sqrt(40) * 1e9)}, {5 * time.Second, 10 * time.Second}, {20 * time.Second, 25 * time.Second}} {
		got := rampWarp(c[0], ramp)
		if d := got - c[1]; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("rampWarp(%v) = %v, want %v", c[0], got, c[1])
		}
	}
	if rampWarp(3*time.Second, 0) != 3*time.Second {
		t.Error("no ramp must not warp")
	}
}

func TestConfigErrors(t *testing.T) {
	src := promptSource(1)
	base := Config{BaseURL: "http://127.0.0.1:1", Model: "m"}
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) {}, "give a concurrency"},
		{func(c *Config) { c.Concurrency, c.RateRPS = 2, 5 }, "not both"},
		{func(c *Config) { c.Concurrency, c.MaxConcurrency = 2, 5 }, "open loop"},
		{func(c *Config) { c.Concurrency, c.API = 2, "images" }, "images"},
		{func(c *Config) { c.Concurrency, c.API, c.RerankPath = 2, "rerank", "/v3/rank" }, "want /v1/rerank"},
		{func(c *Config) { c.Concurrency, c.API, c.Items = 2, "embeddings", -1 }, "items -1"},
		{func(c *Config) {
			c.Concurrency, c.Images, c.ImageWidth, c.ImageHeight, c.ImageFormat = 2, 1, 0, 10, "png"
		}, "image size"},
		{func(c *Config) {
			c.Concurrency, c.Images, c.ImageWidth, c.ImageHeight, c.ImageFormat = 2, 1, 10, 10, "gif"
		}, "png or jpeg"},
		{func(c *Config) { c.Concurrency, c.BaseURL = 2, "localhost:8000" }, "base URL"},
		{func(c *Config) { c.Concurrency, c.Duration, c.Warmup = 2, time.Second, time.Second }, "warm-up"},
		{func(c *Config) { c.RateRPS = -1 }, "rate"},
	} {
		cfg := base
		c.mod(&cfg)
		_, err := Start(context.Background(), cfg, src)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want ErrConfig mentioning %q", err, c.want)
		}
	}
}

// TestHugeConcurrencyCostsOnlyWhatRuns: a closed loop far wider than its
// request count starts no more workers than there are requests, and a
// canceled context stops it before it starts them all.
func TestHugeConcurrencyCostsOnlyWhatRuns(t *testing.T) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 2} })
	res := run(t, Config{BaseURL: ts.URL, Model: "m", Concurrency: 1 << 30, Requests: 5}, promptSource(2))
	if len(res.Records) != 5 || res.StoppedBy != StopRequests {
		t.Fatalf("%d records, stopped by %q; want 5, requests", len(res.Records), res.StoppedBy)
	}
	for _, rec := range res.Records {
		if !rec.OK() {
			t.Errorf("request %d: %q %s", rec.ID, rec.Error, rec.ErrorMessage)
		}
	}

	// Bounded only by time, 2^30 slots, and the caller has already
	// canceled (Ctrl-C): Wait returns without starting a billion workers.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Start(ctx, Config{BaseURL: ts.URL, Model: "m", Concurrency: 1 << 30, Duration: time.Hour}, promptSource(2))
	if err != nil {
		t.Fatal(err)
	}
	res = r.Wait()
	if res.StoppedBy != StopInterrupted || len(res.Records) > 1000 {
		t.Errorf("canceled run: stopped by %q with %d records; want interrupted, next to none", res.StoppedBy, len(res.Records))
	}
}

// TestStoppedBy: the result says which limit ended issuing.
func TestStoppedBy(t *testing.T) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 2, gap: time.Millisecond} })
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"closed, requests", Config{Concurrency: 2, Requests: 6}, StopRequests},
		{"closed, duration", Config{Concurrency: 2, Duration: 100 * time.Millisecond}, StopDuration},
		{"closed, duration before requests", Config{Concurrency: 1, Duration: 100 * time.Millisecond, Requests: 1 << 40}, StopDuration},
		{"open, requests", Config{RateRPS: 200, Requests: 5}, StopRequests},
		{"open, duration", Config{RateRPS: 50, Duration: 100 * time.Millisecond}, StopDuration},
	} {
		c.cfg.BaseURL, c.cfg.Model = ts.URL, "m"
		res := run(t, c.cfg, promptSource(2))
		if res.StoppedBy != c.want {
			t.Errorf("%s: stopped by %q, want %q", c.name, res.StoppedBy, c.want)
		}
	}
	r, err := Start(context.Background(), Config{BaseURL: ts.URL, Model: "m", Concurrency: 1, Duration: time.Hour}, promptSource(2))
	if err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if res := r.Wait(); res.StoppedBy != StopCalled {
		t.Errorf("Stop: stopped by %q, want %q", res.StoppedBy, StopCalled)
	}
}

// TestInterruptAbandonsQueuedBuilds: prompts are built at most GOMAXPROCS
// at a time, and requests still waiting to be built at Ctrl-C are never
// built, so a wide closed loop stops at once instead of first building a
// prompt for every slot.
func TestInterruptAbandonsQueuedBuilds(t *testing.T) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 2} })
	procs := runtime.GOMAXPROCS(0)
	var calls atomic.Int64
	blocked := make(chan struct{}, 1000)
	release := make(chan struct{})
	src := func(i int64) Request {
		calls.Add(1)
		blocked <- struct{}{}
		<-release
		return Request{Prompt: fmt.Sprintf("req-%d", i), MaxTokens: 2}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{BaseURL: ts.URL, Model: "m", Concurrency: 500, Duration: time.Hour}, src)
	if err != nil {
		t.Fatal(err)
	}
	for range procs {
		<-blocked // procs builds under way
	}
	cancel()
	close(release)
	res := r.Wait()
	if n := calls.Load(); n > int64(procs) {
		t.Errorf("%d prompts built for 500 slots after an interrupt with %d building; want at most %d", n, procs, procs)
	}
	if res.StoppedBy != StopInterrupted {
		t.Errorf("stopped by %q", res.StoppedBy)
	}
}

// TestErrorMessagesNeverHoldTheKey: a server that quotes the key it
// refused does not put it into the records.
func TestErrorMessagesNeverHoldTheKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"Incorrect API key provided: `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	key := "sk-proj-Zq8aXh2bNt5rKd0LmWv3"
	res := run(t, Config{BaseURL: srv.URL, Model: "m", APIKey: key, Concurrency: 1, Requests: 2}, promptSource(2))
	for _, rec := range res.Records {
		if rec.Error != record.ErrHTTP4xx || strings.Contains(rec.ErrorMessage, key) || !strings.Contains(rec.ErrorMessage, "(the API key)") {
			t.Errorf("record %d: %q %q", rec.ID, rec.Error, rec.ErrorMessage)
		}
	}
}

// TestOpenLoopPreparesAhead: an open loop builds and encodes each request
// while it waits for the request's time, so a slow Source (a long prompt,
// 30 ms here) is not send lag — also in a burst, whose arrivals 1 ms apart
// are prepared in the wait before it. Every Source call but the first
// (due at once) must come before its request's time, and the lag must be
// less than the build: a dispatcher that builds at the due time lags by at
// least that on every request, by three builds at a burst's end.
func TestOpenLoopPreparesAhead(t *testing.T) {
	const build = 30 * time.Millisecond
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 2, gap: time.Millisecond} })
	var mu sync.Mutex
	var start time.Time
	builtAt := map[int64]time.Duration{}
	src := func(i int64) Request {
		mu.Lock()
		builtAt[i] = time.Since(start)
		mu.Unlock()
		time.Sleep(build)
		return promptSource(2)(i)
	}
	ms := time.Millisecond
	sched := &listSchedule{at: []time.Duration{0, 200 * ms, 400 * ms, 401 * ms, 402 * ms, 600 * ms}}
	start = time.Now()
	res := run(t, Config{BaseURL: ts.URL, Model: "m", Arrivals: sched, RateRPS: 10, Requests: int64(len(sched.at))}, src)
	if len(res.Records) != len(sched.at) {
		t.Fatalf("%d records, want %d", len(res.Records), len(sched.at))
	}
	for _, rec := range res.Records {
		if !rec.OK() {
			t.Fatalf("request %d failed: %s", rec.ID, rec.ErrorMessage)
		}
		mu.Lock()
		b := builtAt[rec.ID]
		mu.Unlock()
		t.Logf("request %d: scheduled %v, built from %v, lag %v", rec.ID, rec.Scheduled, b, rec.Lag())
		if rec.ID == 0 {
			continue
		}
		// start is taken just before Start, so a build logged before the
		// schedule's offset is a build before the request's time.
		if b >= rec.Scheduled {
			t.Errorf("request %d built from %v, not before its time %v", rec.ID, b, rec.Scheduled)
		}
		if rec.Lag() >= build {
			t.Errorf("request %d lagged %v: its %v build counted as lag", rec.ID, rec.Lag(), build)
		}
	}
}

// listSchedule is a fixed list of arrival times; after it, none.
type listSchedule struct {
	at []time.Duration
	n  int
}

func (s *listSchedule) Next() time.Duration {
	if s.n == len(s.at) {
		return time.Duration(math.MaxInt64)
	}
	s.n++
	return s.at[s.n-1]
}
