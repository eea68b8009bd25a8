package calibrate

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
)

func engineConfig(t *testing.T, gpu, model string, tp int) simengine.Config {
	t.Helper()
	g, err := simengine.LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	m, err := simengine.LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	c := simengine.DefaultConfig(g, m, tp)
	c.MaxModelLen = 16384
	return c
}

func llama2(t *testing.T) simengine.Config {
	c := engineConfig(t, "h100", "llama-2-7b", 1)
	c.MaxModelLen = 0
	return c
}

// synthetic prices points exactly as the engine would under cost, plus a
// request overhead on TTFT.
func synthetic(t *testing.T, ec simengine.Config, cost simengine.CostParams, reqMS float64) []Point {
	var pts []Point
	add := func(kind string, s simengine.StepShape, in, b int) {
		k := simengine.StepCostTerms(ec.GPU, ec.Model, ec.TP, s)
		// Written out, not StepTerms.NS: the test checks the fit against
		// the engine's formula (TestStepCostTerms pins that).
		em, ecmp := cost.MemEfficiency, cost.ComputeEfficiency
		y := float64(cost.StepOverheadNS) + float64(cost.StepPerSeqNS)*k.Seqs + max(k.WeightNS/em, k.LinearNS/ecmp) + max(k.KVNS/em, k.AttnNS/ecmp) + k.AllReduceNS
		if kind == KindPrefill {
			y += reqMS * 1e6
		}
		pts = append(pts, newPoint(kind, in, b, 0, y/1e6, k))
	}
	for _, n := range []int{128, 512, 2048, 8192} {
		add(KindPrefill, simengine.PrefillShape(int64(n)), n, 1)
	}
	for _, b := range []int{1, 8, 64, 256} {
		add(KindDecode, simengine.DecodeShape(int64(b), 64), 64, b)
	}
	// A long-context batch, as DefaultDecodePoints has: short ones alone
	// cannot tell the KV reads' efficiency from a cost per sequence.
	add(KindDecode, simengine.DecodeShape(64, 2000), 2000, 64)
	return pts
}

// TestFitRecoversKnownCost fits points made from known constants, on
// several GPUs, models and TP degrees.
func TestFitRecoversKnownCost(t *testing.T) {
	for _, c := range []struct {
		gpu, model string
		tp         int
		cost       simengine.CostParams
		reqMS      float64
	}{
		{"h100", "llama-3.1-8b", 1, simengine.CostParams{StepOverheadNS: 1_200_000, MemEfficiency: 0.55, ComputeEfficiency: 0.31}, 2},
		{"a100-80gb", "llama-3.1-8b", 1, simengine.CostParams{StepOverheadNS: 400_000, MemEfficiency: 0.81, ComputeEfficiency: 0.62}, 0},
		{"h100", "llama-3.1-70b", 4, simengine.CostParams{StepOverheadNS: 2_000_000, MemEfficiency: 0.7, ComputeEfficiency: 0.4, AllReduceLatencyNS: 8000}, 5},
		// A CPU-bound engine's per-sequence cost (docs/simulator.md).
		{"h100", "llama-3.1-8b", 1, simengine.CostParams{StepOverheadNS: 800_000, StepPerSeqNS: 45_000, MemEfficiency: 0.7, ComputeEfficiency: 0.5}, 3},
		{"a100-80gb", "llama-2-70b", 2, simengine.CostParams{StepOverheadNS: 8_600_000, StepPerSeqNS: 290_000, MemEfficiency: 0.76, ComputeEfficiency: 0.6}, 0},
	} {
		ec := engineConfig(t, c.gpu, c.model, c.tp)
		c.cost.AllReduceLatencyNS = simengine.DefaultCost.AllReduceLatencyNS
		f := FitPoints(synthetic(t, ec, c.cost, c.reqMS), simengine.DefaultCost)
		if math.Abs(f.StepOverheadMS-float64(c.cost.StepOverheadNS)/1e6) > 0.02 || math.Abs(f.StepPerSeqUS-float64(c.cost.StepPerSeqNS)/1e3) > 0.5 ||
			math.Abs(f.MemEfficiency-c.cost.MemEfficiency) > 0.002 || math.Abs(f.ComputeEfficiency-c.cost.ComputeEfficiency) > 0.002 ||
			math.Abs(f.RequestOverheadMS-c.reqMS) > 0.05 || f.RMSRelError > 0.002 || f.Undetermined != "" {
			t.Errorf("%s/%s tp%d: fitted T0 %.3f ms + %.1f µs a sequence, η_mem %.4f η_cmp %.4f req %.3f ms (rms %.4f, %q); want %v, %.3f ms",
				c.gpu, c.model, c.tp, f.StepOverheadMS, f.StepPerSeqUS, f.MemEfficiency, f.ComputeEfficiency, f.RequestOverheadMS, f.RMSRelError, f.Undetermined, c.cost, c.reqMS)
		}
	}
}

// TestFitSaysWhatItCannotDetermine: with only memory-bound points the
// compute efficiency keeps the default and the fit says so.
func TestFitSaysWhatItCannotDetermine(t *testing.T) {
	ec := engineConfig(t, "h100", "llama-3.1-8b", 1)
	var mem []Point
	// A compute efficiency at which every decode step is memory-bound.
	fast := simengine.DefaultCost
	fast.ComputeEfficiency = 1
	for _, p := range synthetic(t, ec, fast, 0) {
		if p.Kind == KindDecode {
			mem = append(mem, p)
		}
	}
	f := FitPoints(mem, fast)
	if f.ComputeBound != 0 || f.ComputeEfficiency != fast.ComputeEfficiency || !strings.Contains(f.Undetermined, "compute") {
		t.Errorf("compute-free fit: η_cmp %v, %d compute-bound, undetermined %q", f.ComputeEfficiency, f.ComputeBound, f.Undetermined)
	}
	// One long prompt measured at a compute efficiency of 0.44 (of the
	// achievable matmul rate: 35% of the datasheet peak): a single point
	// could be matched exactly by any η_cmp, so it must not move it. (At
	// that efficiency the batch of 256 runs its GEMMs compute-bound: a
	// second point that informs η_cmp, left out.)
	cost := simengine.DefaultCost
	cost.ComputeEfficiency = 0.44
	var one []Point
	for _, p := range synthetic(t, ec, cost, 0) {
		if (p.Kind == KindDecode && p.Batch < 256) || p.InputTokens == 8192 {
			one = append(one, p)
		}
	}
	f = FitPoints(one, simengine.DefaultCost)
	if f.ComputeEfficiency != simengine.DefaultCost.ComputeEfficiency || !strings.Contains(f.Undetermined, "compute") {
		t.Errorf("one compute-bound point: η_cmp %v, undetermined %q; want the default, named", f.ComputeEfficiency, f.Undetermined)
	}
	if math.Abs(f.MemEfficiency-cost.MemEfficiency) > 0.005 {
		t.Errorf("one compute-bound point: η_mem %v, want %v from the decode points", f.MemEfficiency, cost.MemEfficiency)
	}
}

// TestCalibrateSimulatedServer calibrates knee's own simulated server,
// run with cost constants unlike the defaults: the fit must find them, and
// the fitted model must predict the held-out step it never measured.
func TestCalibrateSimulatedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("several seconds of load; run without -short")
	}
	// KV reads keep the default ratio to the weights' memory efficiency,
	// as the fit assumes. The server has a front end with the default
	// jitter, as a real one does. It also spends 40 µs per sequence of
	// every step, as a CPU-bound host does (docs/simulator.md, "The step's
	// cost per sequence").
	truth := simengine.CostParams{StepOverheadNS: 1_500_000, StepPerSeqNS: 40_000, MemEfficiency: 0.5, ComputeEfficiency: 0.3,
		KVMemEfficiency:    0.5 * simengine.KVToWeightEfficiency(),
		AllReduceLatencyNS: simengine.DefaultCost.AllReduceLatencyNS, ReserveFixedBytes: simengine.DefaultCost.ReserveFixedBytes,
		FrontEndNS: 5_000_000, FrontEndJitter: simengine.DefaultCost.FrontEndJitter}
	// Llama-2-7B: no grouped-query attention, so its KV reads grow fast
	// with the batch and short runs spread the memory term widely.
	served := engineConfig(t, "h100", "llama-2-7b", 1)
	served.MaxModelLen = 0
	served.Cost = &truth
	base, srv := simservertest.Start(t, func(c *simserver.Config) { c.Engine = served })

	var steps []string
	calibrate := func(seed uint64) *Result {
		steps = nil
		res, err := Run(context.Background(), Config{
			BaseURL: base, Model: srv.Model(), Engine: llama2(t), Seed: seed,
			PrefillLengths: []int{128, 1024, 3500}, PrefillRequests: 3,
			DecodePoints: []DecodePoint{{1, 64}, {16, 64}, {64, 64}, {64, 400}}, DecodeDuration: time.Second, DecodeWarmup: 300 * time.Millisecond,
			HoldOut:  HoldOutConfig{Concurrency: 8, Input: 512, Output: 64, Duration: 2 * time.Second, Warmup: 500 * time.Millisecond},
			Progress: func(s string) { steps = append(steps, s) },
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := calibrate(0)
	if len(res.Disturbed) > 0 {
		// The calibration says its measurements look disturbed (a busy
		// machine: decode points still so after a second measurement, or
		// points scattered about the formula): the whole calibration is
		// run once more, as a user told so would.
		t.Logf("disturbed, calibrating again: %q", res.Disturbed)
		res = calibrate(1 << 20)
	}
	f := res.Fit
	lag := srv.PacingLag()
	t.Logf("server pacing lag p50 %.3f ms p99 %.3f ms max %.3f ms over %d tokens", lag.P50MS, lag.P99MS, lag.MaxMS, lag.Tokens)
	t.Logf("held-out measured %+v predicted %+v", res.HoldOut.Measured, res.HoldOut.Predicted)
	t.Logf("fit: T0 %.3f ms + %.1f µs a sequence, η_mem %.4f, η_cmp %.4f, request overhead %.3f ms, rms %.4f; held-out TTFT %+.1f%% TPOT %+.1f%% throughput %+.1f%%",
		f.StepOverheadMS, f.StepPerSeqUS, f.MemEfficiency, f.ComputeEfficiency, f.RequestOverheadMS, f.RMSRelError,
		100*res.HoldOut.TTFTError, 100*res.HoldOut.TPOTError, 100*res.HoldOut.ThroughputError)
	again := 0 // decode points measured twice, each with its own line
	for _, s := range steps {
		if strings.Contains(s, ", again: ") {
			again++
		}
	}
	if len(res.Points) != 7 || len(steps)-again != 8 {
		t.Errorf("%d points, %d progress lines (%d repeats); want 7 and 8", len(res.Points), len(steps), again)
	}
	// The server adds its HTTP handling and pacing lag (well under a
	// millisecond) to every measurement; the fit is held to that.
	if math.Abs(f.StepOverheadMS-1.5) > 0.4 || math.Abs(f.StepPerSeqUS-40) > 8 || math.Abs(f.MemEfficiency-0.5) > 0.03 || math.Abs(f.ComputeEfficiency-0.3) > 0.02 || f.RMSRelError > 0.05 {
		t.Errorf("fitted T0 %.3f ms + %.1f µs a sequence, η_mem %.4f η_cmp %.4f (rms %.4f); the server runs 1.5 ms + 40 µs, 0.5, 0.3", f.StepOverheadMS, f.StepPerSeqUS, f.MemEfficiency, f.ComputeEfficiency, f.RMSRelError)
	}
	h := res.HoldOut
	if h.Measured.Requests == 0 || h.Predicted.Requests == 0 {
		t.Fatalf("held-out step: %d measured, %d predicted requests", h.Measured.Requests, h.Predicted.Requests)
	}
	for name, e := range map[string]float64{"TTFT p50": h.TTFTError, "TPOT p50": h.TPOTError, "throughput": h.ThroughputError} {
		if !(math.Abs(e) < 0.15) {
			t.Errorf("held-out %s: prediction off by %+.1f%%", name, 100*e)
		}
	}

	// The profile round-trips and carries the fitted cost.
	p := NewProfile(llama2(t), base, res)
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "profile.yaml")
	os.WriteFile(path, buf.Bytes(), 0o644)
	got, err := LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := got.CostParams(simengine.DefaultCost)
	if got.GPU != "H100-SXM" || got.Model != "Llama-2-7B" || c.MemEfficiency != f.MemEfficiency || c.ComputeEfficiency != f.ComputeEfficiency {
		t.Errorf("profile round trip: %+v", got)
	}
}

// TestGapDisagreement: streams seen as the server paced them agree with
// themselves; seen through a client that falls behind every 20 tokens and
// catches up a millisecond a token, the median gap moves off the step
// while the mean keeps it, and the point is called disturbed.
func TestGapDisagreement(t *testing.T) {
	const step = 10 * time.Millisecond
	streams := func(lagAt func(j int) time.Duration) []record.Request {
		var recs []record.Request
		for s := range 4 {
			r := record.Request{ID: int64(s), Sent: time.Duration(s) * 3 * time.Millisecond}
			for j := range 201 {
				r.TokenTimes = append(r.TokenTimes, r.Sent+5*time.Millisecond+time.Duration(j)*step+lagAt(j))
			}
			r.FirstToken = r.TokenTimes[0]
			recs = append(recs, r)
		}
		return recs
	}
	if d := gapDisagreement(streams(func(int) time.Duration { return 0 }), 0); d > 1e-9 {
		t.Errorf("steady streams disagree by %.3f", d)
	}
	// 16 ms behind at every 20th token, a millisecond less each token
	// after: gaps of 26 ms, then sixteen of 9 ms, then 10 ms.
	lagged := streams(func(j int) time.Duration { return time.Duration(max(16-(j%20), 0)) * time.Millisecond })
	if d := gapDisagreement(lagged, 0); d < maxGapDisagreement {
		t.Errorf("a client catching up: disagreement %.3f, want over %.2f", d, maxGapDisagreement)
	}
	if g, _ := decodeGaps(lagged, 0, nil); math.Abs(mean(g)-10) > 0.1 {
		t.Errorf("mean gap %.3f ms, want the 10 ms step", mean(g))
	}
	res := Result{Disturbed: []string{"decode at 64 streams of 64-token prompts: x"}}
	if w := res.Warnings(); len(w) != 1 || !strings.Contains(w[0], "look disturbed") || !strings.Contains(w[0], "decode at 64 streams") {
		t.Errorf("warnings %q", w)
	}
}
