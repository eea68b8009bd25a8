package sim

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
)

// A short prompt at low load: TTFT is mostly the front end (HTTP, template,
// tokenization), not the ~7 ms prefill step; with the front end switched
// off it collapses to the step alone, as before the front-end cost existed.
func TestShortPromptTTFTIncludesFrontEnd(t *testing.T) {
	run := func(cost *simengine.CostParams) (ttft, prefill time.Duration) {
		cfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
		cfg.Cost = cost
		recs, _, err := Collect(context.Background(), Config{Engine: cfg, Gen: fixed{200, 64}, Concurrency: 1, Requests: 20})
		if err != nil {
			t.Fatal(err)
		}
		var sum, pre time.Duration
		for _, r := range recs {
			v, _ := r.TTFT()
			sum += v
			pre += r.ServerPhases.Prefill
		}
		return sum / time.Duration(len(recs)), pre / time.Duration(len(recs))
	}
	ttft, prefill := run(nil)
	none := simengine.DefaultCost
	none.FrontEndNS, none.FrontEndPerTokenNS, none.FrontEndSerialNS = 0, 0, 0
	bare, _ := run(&none)
	t.Logf("200-token prompt, 1 in flight: TTFT %v (prefill step %v); without the front end %v", ttft, prefill, bare)
	// One request at a time finds the serial lane idle: it pays the
	// fitted latency, the serial admission and its tokenization.
	fe := time.Duration(simengine.FittedFrontEndNS + simengine.DefaultCost.FrontEndSerialNS + int64(200*simengine.DefaultCost.FrontEndPerTokenNS))
	// The jitter averages out over 20 requests to within a few ms.
	if d := ttft - bare; d < fe*7/10 || d > fe*13/10 {
		t.Errorf("front end adds %v to TTFT, want about the fitted %v", d, fe)
	}
	if bare > 12*time.Millisecond || prefill > 12*time.Millisecond {
		t.Errorf("without the front end TTFT is %v (prefill %v): want one short step", bare, prefill)
	}
}

// The front end's one-at-a-time part spreads requests that arrive together:
// the n-th of a burst reaches the engine after n tokenizations.
func TestFrontEndQueueSerializes(t *testing.T) {
	var q simengine.FrontEndQueue
	admit := func(at int64) int64 {
		c := simengine.FrontEndCost{SerialNS: 10, LatencyNS: 1000}
		done, last := q.Next(at, &c)
		if !last {
			t.Fatalf("a cost without a first part took more than one turn")
		}
		return done
	}
	var got []int64
	for range 4 {
		got = append(got, admit(100))
	}
	if want := []int64{1110, 1120, 1130, 1140}; !slices.Equal(got, want) {
		t.Fatalf("burst admitted at %v, want %v", got, want)
	}
	if at := admit(5000); at != 6010 {
		t.Errorf("an arrival after the burst waits for nobody: %d, want 6010", at)
	}
}

// A request with a first part takes two turns at the lane: its second
// queues behind every turn that joined before its first ended, those of
// requests that arrived after it included, and a request that finds the
// lane idle pays both parts back to back.
func TestFrontEndQueueSecondTurnQueuesBehind(t *testing.T) {
	var q simengine.FrontEndQueue
	cost := simengine.FrontEndCost{FirstNS: 10, SerialNS: 30, LatencyNS: 1000}
	first := func(at int64, c *simengine.FrontEndCost) int64 {
		*c = cost
		done, last := q.Next(at, c)
		if last {
			t.Fatalf("a cost with a first part took one turn")
		}
		return done
	}
	cs := make([]simengine.FrontEndCost, 4)
	var firsts []int64
	for i := range 3 { // a burst at 100
		firsts = append(firsts, first(100, &cs[i]))
	}
	firsts = append(firsts, first(115, &cs[3])) // arrives while the burst's first turns run
	if want := []int64{110, 120, 130, 140}; !slices.Equal(firsts, want) {
		t.Fatalf("first turns done at %v, want %v", firsts, want)
	}
	// Each second turn joins when its first is done, in that order.
	var engine []int64
	for i, at := range firsts {
		done, last := q.Next(at, &cs[i])
		if !last {
			t.Fatalf("request %d: a third turn", i)
		}
		engine = append(engine, done)
	}
	if want := []int64{1170, 1200, 1230, 1260}; !slices.Equal(engine, want) {
		t.Errorf("engine arrivals %v, want %v: every second turn after all four first ones", engine, want)
	}
	var c simengine.FrontEndCost
	if at, _ := q.Next(first(5000, &c), &c); at != 6040 {
		t.Errorf("a request on an idle lane reaches the engine at %d, want 6040 (10 + 30 + 1000 after it arrived)", at)
	}
}

// Mixture-of-experts and FP8 presets run end to end, conserve tokens, and
// behave as their physics says: an FP8 model decodes faster than its BF16
// twin (half the weight bytes), and a MoE model reads more expert weights
// as the batch grows.
func TestMoEAndFP8PresetsRun(t *testing.T) {
	tpot := func(gpu, model string, tp, users int) float64 {
		cfg := engineConfig(t, gpu, model, tp)
		var n int
		var sum float64
		res, err := Run(context.Background(), Config{Engine: cfg, Gen: fixed{512, 128}, Concurrency: users, Requests: int64(users * 4)}, func(r *record.Request) {
			if v, ok := r.TPOT(); ok {
				sum += float64(v) / 1e6
				n++
			}
		})
		if err != nil {
			t.Fatalf("%s on %s tp %d: %v", model, gpu, tp, err)
		}
		if res.Completed != int64(users*4) || res.Tokens != int64(users*4*128) {
			t.Fatalf("%s: completed %d, tokens %d", model, res.Completed, res.Tokens)
		}
		return sum / float64(n)
	}
	bf, f8 := tpot("h100", "llama-3.1-70b", 4, 1), tpot("h100", "llama-3.1-70b-fp8", 4, 1)
	t.Logf("Llama-3.1-70B TP4 H100 TPOT: bf16 %.2f ms, fp8 %.2f ms", bf, f8)
	if f8 > 0.7*bf {
		t.Errorf("FP8 TPOT %.2f ms vs BF16 %.2f ms: want well under (half the weight bytes)", f8, bf)
	}
	q1, q64 := tpot("h100", "qwen3-30b-a3b", 1, 1), tpot("h100", "qwen3-30b-a3b", 1, 64)
	m1, m8 := tpot("h100", "mixtral-8x7b", 2, 1), tpot("h100", "mixtral-8x7b", 2, 8)
	t.Logf("Qwen3-30B-A3B TPOT 1 / 64 streams: %.2f / %.2f ms; Mixtral-8x7B TP2 1 / 8 streams: %.2f / %.2f ms", q1, q64, m1, m8)
	if q64 < 1.5*q1 || m8 < 1.3*m1 {
		t.Errorf("MoE decode should slow as more experts are touched: Qwen3 %.2f→%.2f, Mixtral %.2f→%.2f", q1, q64, m1, m8)
	}
	// A dense model of the same total size would read all weights at batch 1.
	g, _ := simengine.LookupGPU("h100")
	mx, _ := simengine.LookupModel("mixtral-8x7b")
	if _, err := simengine.NewEngine(simengine.DefaultConfig(g, mx, 1)); !errors.Is(err, simengine.ErrDoesNotFit) || !strings.Contains(err.Error(), "87.0 GiB of weights") {
		t.Errorf("Mixtral on one H100: %v; want ErrDoesNotFit naming its 87.0 GiB of weights (every expert is resident)", err)
	}
}

// The fast path for inter-token statistics (gaps grouped per engine step,
// no token times in the records) gives the same ITL distribution as the
// exact path over every token time, warm-up requests left out of both.
func TestGapsFastPathMatchesTokenTimes(t *testing.T) {
	cfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	base := Config{Engine: cfg, Gen: varied{64, 3000, 1, 400}, Requests: 4000, WarmupRequests: 300}
	exact, fast := stats.NewAccumulator(stats.Options{}), stats.NewAccumulator(stats.Options{})
	withTimes := base
	withTimes.StreamTokenTimes, withTimes.Arrivals = true, poisson(t, 25, 3)
	if _, err := Run(context.Background(), withTimes, exact.Add); err != nil {
		t.Fatal(err)
	}
	grouped := base
	grouped.OnGaps, grouped.Arrivals = fast.AddGaps, poisson(t, 25, 3)
	if _, err := Run(context.Background(), grouped, fast.Add); err != nil {
		t.Fatal(err)
	}
	e, f := exact.Summary().ITL, fast.Summary().ITL
	t.Logf("ITL exact %+v\nITL fast  %+v", e, f)
	if e.Count != f.Count || e.Count < 100_000 {
		t.Fatalf("gap counts: exact %d, fast %d", e.Count, f.Count)
	}
	for name, v := range map[string][2]float64{"mean": {e.Mean, f.Mean}, "p50": {e.P50, f.P50}, "p90": {e.P90, f.P90},
		"p99": {e.P99, f.P99}, "p999": {e.P999, f.P999}, "max": {e.Max, f.Max}} {
		// Same values, so the same buckets: equal up to float rounding.
		if d := v[0] - v[1]; d > 1e-6*v[0] || d < -1e-6*v[0] {
			t.Errorf("ITL %s: exact %v, fast %v", name, v[0], v[1])
		}
	}
	if ex, fs := exact.Summary().TTFT, fast.Summary().TTFT; ex != fs {
		t.Errorf("TTFT differs between the paths: %+v vs %+v", ex, fs)
	}
}

// A front end that takes whole requests one at a time
// (CostParams.FrontEndSerialNS, as on the kvcached host of the validation
// table) paces a burst: the k-th request of 50 sent together reaches the
// engine k serial costs after the first, so the TTFTs rise evenly across
// the burst and no more than one request per serial cost is admitted.
// Without it the burst is admitted within the front end's latency.
func TestFrontEndSerialPacesABurst(t *testing.T) {
	const n, serial = 50, 20 * time.Millisecond
	spread := func(serialNS int64) (time.Duration, time.Duration) {
		cfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
		cost := simengine.DefaultCost
		// No jitter: the gaps are the pacing and the steps'. One turn a
		// request (no split): the lane's order is the arrivals'.
		cost.FrontEndSerialNS, cost.FrontEndJitter, cost.FrontEndSerialSplit = serialNS, 0, 0
		cfg.Cost = &cost
		recs, _, err := Collect(context.Background(), Config{Engine: cfg, Gen: fixed{64, 4}, Concurrency: n, Requests: n})
		if err != nil {
			t.Fatal(err)
		}
		var ttfts []time.Duration
		for _, r := range recs {
			v, _ := r.TTFT()
			ttfts = append(ttfts, v)
		}
		slices.Sort(ttfts)
		var minGap time.Duration = math.MaxInt64
		for i := 1; i < len(ttfts); i++ {
			minGap = min(minGap, ttfts[i]-ttfts[i-1])
		}
		return ttfts[len(ttfts)-1] - ttfts[0], minGap
	}
	paced, gap := spread(int64(serial))
	free, _ := spread(0)
	t.Logf("TTFT spread of a burst of %d: %v with %v a request serial (smallest gap %v), %v without", n, paced, serial, gap, free)
	if want := (n - 1) * serial; paced < want*9/10 || paced > want*11/10 {
		t.Errorf("TTFTs spread over %v, want about %v (one request per %v)", paced, want, serial)
	}
	if gap < serial/2 { // a first token waits for its step's end: up to one ~7 ms step
		t.Errorf("two first tokens %v apart: the front end admitted faster than one request per %v", gap, serial)
	}
	if free > 100*time.Millisecond {
		t.Errorf("without the serial cost the burst still spreads over %v", free)
	}
}
