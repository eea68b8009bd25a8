package sim

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/workload"
)

var update = flag.Bool("update", false, "rewrite golden files")

// varied is a deterministic workload of varied lengths.
type varied struct{ inLo, inHi, outLo, outHi int }

func (v varied) Lengths(i int64) (int, int) {
	h := uint64(i)*0x9e3779b97f4a7c15 + 1
	h ^= h >> 29
	in := v.inLo + int(h%uint64(v.inHi-v.inLo+1))
	out := v.outLo + int((h>>20)%uint64(v.outHi-v.outLo+1))
	return in, out
}

func poisson(t testing.TB, rate float64, seed uint64) workload.Arrivals {
	t.Helper()
	a, err := workload.NewArrivals("poisson", rate, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Every request completes or is rejected; token totals match exactly; each
// record is internally consistent.
func TestConservation(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ecfg.QueueLimit = 20
	gen := varied{32, 3000, 1, 400}
	recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: gen, Arrivals: poisson(t, 60, 7), Requests: 3000, KeepTokenTimes: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected == 0 {
		t.Fatalf("want some rejections at 60 req/s with a queue limit of 20; got none")
	}
	if int64(len(recs)) != res.Issued || res.Issued != 3000 || res.Completed+res.Rejected != res.Issued {
		t.Fatalf("records %d, issued %d, completed %d + rejected %d", len(recs), res.Issued, res.Completed, res.Rejected)
	}
	seen := map[int64]bool{}
	var outSum, wantOut, inSum int64
	for _, r := range recs {
		if seen[r.ID] {
			t.Fatalf("request %d recorded twice", r.ID)
		}
		seen[r.ID] = true
		in, out := gen.Lengths(r.ID)
		if r.Error == record.ErrRejected {
			if r.HTTPStatus != 429 || r.PromptTokensRequested != in || r.HasFirstToken() {
				t.Errorf("rejected record %+v", r)
			}
			continue
		}
		if !r.OK() || r.InputTokens != in || r.OutputTokens != out || len(r.TokenTimes) != out || r.TokenSource != record.TokensFromSim {
			t.Fatalf("record %d: in %d/%d out %d/%d times %d source %q", r.ID, r.InputTokens, in, r.OutputTokens, out, len(r.TokenTimes), r.TokenSource)
		}
		if !slices.IsSorted(r.TokenTimes) || r.TokenTimes[0] != r.FirstToken || r.TokenTimes[out-1] != r.Done || r.FirstToken <= r.Sent {
			t.Fatalf("record %d: token times not ordered from first token to done", r.ID)
		}
		p := r.ServerPhases
		// The phases are the engine's; with the front end they add up to
		// E2E (and queue + prefill + front end to TTFT).
		fe := r.Done - r.Sent - (p.Queue + p.Prefill + p.Decode)
		// The front end's latency at its most, plus waits at its serial
		// lane: at 60 req/s the lane (8 ms a request and the prompt's
		// tokenization) is busy about two thirds of the time, and a wait
		// of ten turns does not happen in this run.
		c := simengine.DefaultCost
		turn := float64(c.FrontEndSerialNS) + c.FrontEndPerTokenNS*float64(gen.inHi)
		maxFE := time.Duration(float64(c.FrontEndNS)*(1+c.FrontEndJitter)+c.FrontEndPerTokenNS*float64(in)+10*turn) + 50*time.Millisecond
		if p == nil || p.Queue < 0 || p.Prefill <= 0 || p.Decode < 0 || fe < 0 || fe > maxFE || p.Queue+p.Prefill+fe != r.FirstToken-r.Sent {
			t.Fatalf("record %d: phases %+v and front end %v do not add up to e2e %v", r.ID, p, fe, r.Done-r.Sent)
		}
		outSum += int64(r.OutputTokens)
		inSum += int64(r.InputTokens)
		wantOut += int64(out)
	}
	if outSum != res.Tokens || outSum != wantOut || res.Engine.OutputTokens != outSum {
		t.Errorf("output tokens: records %d, engine %d, asked %d", outSum, res.Tokens, wantOut)
	}
	if res.Engine.PrefillTokens < inSum {
		t.Errorf("prefill tokens %d < prompt tokens %d", res.Engine.PrefillTokens, inSum)
	}
	if s := res.Engine; s.Running != 0 || s.Waiting != 0 || s.KVBlocksUsed != 0 {
		t.Errorf("engine not drained: %+v", s)
	}
}

// Under KV pressure requests are preempted and recomputed, and still every
// token is delivered exactly once.
func TestKVPressurePreempts(t *testing.T) {
	ecfg := engineConfig(t, "l4", "llama-2-7b", 1)
	recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: fixed{1000, 1000}, Concurrency: 48, Requests: 200, KeepTokenTimes: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("KV cache %d tokens; %d preemptions over %d requests", res.Engine.KVCapacityTokens, res.Engine.Preemptions, len(recs))
	if res.Engine.Preemptions == 0 {
		t.Fatal("no preemptions with 48 × 2000 tokens of demand in a cache of", res.Engine.KVCapacityTokens)
	}
	var out int64
	for _, r := range recs {
		if !r.OK() || len(r.TokenTimes) != 1000 {
			t.Fatalf("record %d: %v, %d tokens", r.ID, r.Error, len(r.TokenTimes))
		}
		out += int64(r.OutputTokens)
	}
	if out != 200*1000 || res.Engine.OutputTokens != out {
		t.Errorf("tokens %d, engine %d, want 200000", out, res.Engine.OutputTokens)
	}
	if res.Engine.PrefillTokens <= 200*1000 {
		t.Errorf("prefill tokens %d: recomputation should add to the 200000 prompt tokens", res.Engine.PrefillTokens)
	}
}

type point struct {
	rate, tput, ttftP50, tpotMax float64
}

func runAt(t *testing.T, ecfg simengine.Config, gen Lengths, rate float64, d time.Duration) point {
	t.Helper()
	var ttfts []float64
	var tpotMax float64
	var done int64
	var lastDone time.Duration
	_, err := Run(context.Background(), Config{Engine: ecfg, Gen: gen, Arrivals: poisson(t, rate, 3), Duration: d}, func(r *record.Request) {
		if !r.OK() {
			return
		}
		done++
		lastDone = max(lastDone, r.Done)
		v, _ := r.TTFT()
		ttfts = append(ttfts, float64(v)/1e6)
		if v, ok := r.TPOT(); ok {
			tpotMax = max(tpotMax, float64(v)/1e6)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ttfts)
	return point{rate: rate, tput: float64(done) / lastDone.Seconds(), ttftP50: ttfts[len(ttfts)/2], tpotMax: tpotMax}
}

// Throughput rises with load and saturates; past saturation TTFT grows with
// the length of the run (without bound) while the per-token time stays
// bounded by the largest batch.
func TestSaturation(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ecfg.MaxNumSeqs = 128
	gen := fixed{512, 128}
	capRPS := capacity(t, ecfg, gen, 512, 10000)
	t.Logf("saturated throughput %.1f req/s", capRPS)
	var pts []point
	for _, f := range []float64{0.25, 0.5, 0.8, 1.5, 3} {
		pts = append(pts, runAt(t, ecfg, gen, f*capRPS, 60*time.Second))
	}
	for _, p := range pts {
		t.Logf("offered %6.1f req/s: throughput %6.1f req/s, p50 TTFT %8.1f ms, max TPOT %5.1f ms", p.rate, p.tput, p.ttftP50, p.tpotMax)
	}
	for i := 1; i < 3; i++ {
		if pts[i].tput < pts[i-1].tput*1.3 {
			t.Errorf("below saturation throughput should follow load: %.1f then %.1f req/s", pts[i-1].tput, pts[i].tput)
		}
	}
	// Overloaded open loops complete what the engine can: at least what
	// the closed loop measured (whose identical requests are admitted and
	// finish in lockstep batches, so it underestimates a batch that is
	// refilled continuously), and not much more.
	for _, p := range pts[3:] {
		if p.tput < capRPS*0.88 || p.tput > capRPS*1.35 {
			t.Errorf("overloaded at %.1f req/s: throughput %.1f, want at least the closed loop's %.1f (-12%%, +35%%)", p.rate, p.tput, capRPS)
		}
	}
	// Past saturation TTFT keeps growing with the run: doubling it roughly
	// doubles the median.
	long := runAt(t, ecfg, gen, 1.5*capRPS, 120*time.Second)
	if long.ttftP50 < 1.6*pts[3].ttftP50 {
		t.Errorf("overload p50 TTFT %.0f ms over 120 s vs %.0f ms over 60 s: want unbounded growth", long.ttftP50, pts[3].ttftP50)
	}
	if long.tpotMax > 1.2*pts[3].tpotMax || pts[4].tpotMax > 5*pts[0].tpotMax {
		t.Errorf("TPOT should stay bounded: max %.1f (120 s), %.1f (60 s), %.1f (3×), %.1f (light)", long.tpotMax, pts[3].tpotMax, pts[4].tpotMax, pts[0].tpotMax)
	}
	if pts[0].ttftP50 > 100 {
		t.Errorf("light load p50 TTFT %.1f ms; want about one prefill", pts[0].ttftP50)
	}
}

// The same seed gives byte-identical records (golden file), and a different
// seed does not.
func TestDeterminismGolden(t *testing.T) {
	run := func(seed uint64) []byte {
		ecfg := engineConfig(t, "a100", "llama-3.1-8b", 1)
		ecfg.QueueLimit = 8
		var buf bytes.Buffer
		w := record.NewWriter(&buf)
		_, err := Run(context.Background(), Config{Engine: ecfg, Gen: varied{16, 2048, 1, 64}, Arrivals: poisson(t, 40, seed), Requests: 60, WarmupRequests: 5, StreamTokenTimes: true},
			func(r *record.Request) {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b := run(42), run(42)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with seed 42 differ")
	}
	if bytes.Equal(a, run(43)) {
		t.Fatal("seeds 42 and 43 gave the same records")
	}
	golden := filepath.Join("testdata", "seed42.jsonl")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, a, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(a, want) {
		t.Errorf("records differ from %s (if the model changed on purpose, run go test -update)", golden)
	}
	if !bytes.Contains(a, []byte(`"error":"rejected"`)) || !bytes.Contains(a, []byte(`"warmup":true`)) {
		t.Errorf("golden run should exercise rejections and warm-up flags")
	}
}

func TestTooLongStopsRun(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-2-7b", 1)
	var n int
	_, err := Run(context.Background(), Config{Engine: ecfg, Gen: varied{100, 5000, 10, 10}, Concurrency: 2, Requests: 100}, func(*record.Request) { n++ })
	if !errors.Is(err, simengine.ErrTooLong) {
		t.Fatalf("err = %v, want ErrTooLong", err)
	}
	t.Log(err)
}

func TestClosedLoop(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: fixed{256, 32}, Concurrency: 4, Requests: 40})
	if err != nil {
		t.Fatal(err)
	}
	if res.PeakInFlight != 4 || len(recs) != 40 {
		t.Fatalf("peak in flight %d, records %d; want 4 and 40", res.PeakInFlight, len(recs))
	}
	// Each user sends its next request the moment the previous one is done.
	dones := map[time.Duration]int{}
	for _, r := range recs {
		dones[r.Done]++
		if r.Scheduled != r.Sent || r.TokenTimes != nil {
			t.Fatalf("record %d: scheduled %v sent %v, %d token times", r.ID, r.Scheduled, r.Sent, len(r.TokenTimes))
		}
	}
	for _, r := range recs {
		if r.Sent > 0 && dones[r.Sent] == 0 {
			t.Errorf("request %d sent at %v, when no request finished", r.ID, r.Sent)
		}
	}
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	_, err := Run(ctx, Config{Engine: ecfg, Gen: fixed{128, 2000}, Concurrency: 4, Requests: 10000}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// A duration bounds issuing (requests in flight still finish); a warm-up
// duration flags the requests sent before it. Collect copies streamed token
// times, so records stay intact after the run.
func TestDurationWarmupAndCollectCopies(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: varied{100, 900, 5, 50}, Arrivals: poisson(t, 20, 5),
		Duration: 10 * time.Second, Warmup: 2 * time.Second, StreamTokenTimes: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Issued < 150 || res.Issued > 250 || int64(len(recs)) != res.Issued {
		t.Fatalf("issued %d in 10 s at 20 req/s; %d records", res.Issued, len(recs))
	}
	warm := 0
	for _, r := range recs {
		if r.Sent >= 10*time.Second {
			t.Errorf("request %d sent at %v, after the duration", r.ID, r.Sent)
		}
		if r.Warmup != (r.Sent < 2*time.Second) {
			t.Errorf("request %d sent at %v: warmup %v", r.ID, r.Sent, r.Warmup)
		}
		if r.Warmup {
			warm++
		}
		if len(r.TokenTimes) != r.OutputTokens || r.TokenTimes[len(r.TokenTimes)-1] != r.Done {
			t.Fatalf("request %d: token times overwritten after the callback", r.ID)
		}
	}
	if warm == 0 {
		t.Error("no warm-up requests")
	}
}

// With MaxConcurrency an open loop holds arrivals in the client until a
// slot frees: never more in flight than the cap, lateness recorded as lag.
func TestMaxConcurrencyHoldsArrivals(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: fixed{512, 64}, Arrivals: poisson(t, 50, 9), MaxConcurrency: 4, Requests: 300})
	if err != nil {
		t.Fatal(err)
	}
	if res.PeakInFlight != 4 || len(recs) != 300 || res.Completed != 300 {
		t.Fatalf("peak in flight %d (want 4), %d records, %d completed", res.PeakInFlight, len(recs), res.Completed)
	}
	late := 0
	type ev struct {
		t     time.Duration
		delta int
	}
	var evs []ev
	for _, r := range recs {
		if r.Sent < r.Scheduled {
			t.Fatalf("request %d sent before its schedule", r.ID)
		}
		if r.Lag() > 0 {
			late++
		}
		// The phases count from the engine's receipt, after the send and
		// the front end (tens of ms at most).
		if q, fe := r.ServerPhases.Queue, r.FirstToken-r.Sent-r.ServerPhases.Queue-r.ServerPhases.Prefill; q < 0 || fe < 0 || fe > 50*time.Millisecond {
			t.Fatalf("request %d: phases %+v do not count from the send (front end %v)", r.ID, r.ServerPhases, fe)
		}
		evs = append(evs, ev{r.Sent, 1}, ev{r.Done, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return a.delta - b.delta // ends before sends at the same instant
	})
	n := 0
	for _, e := range evs {
		if n += e.delta; n > 4 {
			t.Fatalf("%d in flight at %v", n, e.t)
		}
	}
	if late == 0 {
		t.Error("at 50 req/s with 4 slots some requests must wait in the client")
	}
}

// A ramp starts the load gently: an open loop's first half-ramp carries a
// quarter of the ramp's arrivals; closed-loop users start one by one.
func TestRamp(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	recs, _, err := Collect(context.Background(), Config{Engine: ecfg, Gen: fixed{64, 4}, Arrivals: poisson(t, 100, 2), Ramp: 20 * time.Second, Duration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var first, second int
	for _, r := range recs {
		if r.Scheduled < 10*time.Second {
			first++
		} else {
			second++
		}
	}
	// Expected: 250 arrivals in the first 10 s, 750 in the next 10 s.
	if first < 200 || first > 300 || second < 680 || second > 820 {
		t.Errorf("ramped arrivals: %d in the first half, %d in the second; want about 250 and 750", first, second)
	}
	recs, _, err = Collect(context.Background(), Config{Engine: ecfg, Gen: fixed{64, 1000}, Concurrency: 4, Ramp: 4 * time.Second, Requests: 4})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(recs, func(a, b record.Request) int { return int(a.ID - b.ID) })
	for i, r := range recs {
		if r.Scheduled != time.Duration(i)*time.Second {
			t.Errorf("user %d started at %v, want %ds", i, r.Scheduled, i)
		}
	}
}

// With TooLongAsErrors a request beyond the context becomes an HTTP 400
// record, as a real server answers, and the run goes on.
func TestTooLongAsErrors(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-2-7b", 1)
	for _, closed := range []bool{false, true} {
		cfg := Config{Engine: ecfg, Gen: varied{100, 5000, 10, 10}, Requests: 200, TooLongAsErrors: true}
		if closed {
			cfg.Concurrency = 3
		} else {
			cfg.Arrivals = poisson(t, 20, 4)
		}
		recs, res, err := Collect(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, r := range recs {
			in, out := cfg.Gen.Lengths(r.ID)
			tooLong := in+out > 4096
			if tooLong != (r.Error == record.ErrHTTP4xx) {
				t.Fatalf("request %d (%d+%d tokens): error %q", r.ID, in, out, r.Error)
			}
			if tooLong {
				bad++
				if r.HTTPStatus != 400 || !strings.Contains(r.ErrorMessage, "4096") {
					t.Fatalf("request %d: %d %q", r.ID, r.HTTPStatus, r.ErrorMessage)
				}
			}
		}
		if bad == 0 || int64(bad) != res.Failed || res.Completed+res.Failed != 200 {
			t.Errorf("closed %v: %d too long, result %+v", closed, bad, res)
		}
	}
}
