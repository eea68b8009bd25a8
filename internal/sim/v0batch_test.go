package sim

import (
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
)

// vLLM's V0 engine did each sequence's scheduling, input preparation,
// sampling and output processing between steps, so its steps grow with
// the batch beyond the roofline (simengine.VLLMV0StepPerSeqNS). Against
// the V0 batch sweep of the validation table that starts at batch 1
// (oci-mi300x: Llama 3.1 405B FP8 at TP8 on MI300X, one offline batch of
// 128 in / 128 out at batch 1-64), the vllm-v0 profile's time per output token grows with
// the batch, and a batch's latency grows from batch 1 as the published
// one does, within 10%; the profile without the cost per sequence (the
// V1 defaults before the refit, everything else alike) falls short of
// it by more.
func TestV0ProfileTPOTGrowsWithBatch(t *testing.T) {
	published := map[int]float64{1: 3.530, 16: 4.375, 32: 5.130, 64: 6.919} // s a batch
	run := func(profile string, batch int) measured {
		cfg := engineConfig(t, "mi300x", "llama-3.1-405b-fp8", 8)
		cfg.Model.KVPrecision = "fp8"
		c := profileNamed(profile).Cost(simengine.DefaultCost)
		cfg.Cost = &c
		return offlineBatch(t, cfg, batch, 128, 128)
	}
	latency := func(m measured, batch int) float64 { return float64(batch*128) / m.outputTPS }
	v0One, v1One := run("vllm-v0", 1), run("vllm-before-refit", 1)
	prevTPOT := v0One.tpotMS
	for _, b := range []int{16, 32, 64} {
		v0, v1 := run("vllm-v0", b), run("vllm-before-refit", b)
		if v0.tpotMS <= prevTPOT {
			t.Errorf("vllm-v0 at batch %d: TPOT %.2f ms, not above the smaller batch's %.2f", b, v0.tpotMS, prevTPOT)
		}
		prevTPOT = v0.tpotMS
		// The V0 step's work per sequence: the TPOT grows by it beside V1's.
		extra := (v0.tpotMS - v0One.tpotMS) - (v1.tpotMS - v1One.tpotMS)
		if want := float64(b-1) * simengine.VLLMV0StepPerSeqNS / 1e6; extra < 0.9*want {
			t.Errorf("batch %d: V0's TPOT grows %.2f ms more than V1's from batch 1, want about %.2f (%d sequences × %d µs)", b, extra, want, b-1, simengine.VLLMV0StepPerSeqNS/1000)
		}
		measuredGrowth := published[b] / published[1]
		v0Growth := latency(v0, b) / latency(v0One, 1)
		v1Growth := latency(v1, b) / latency(v1One, 1)
		t.Logf("batch %d: latency ×%.3f of batch 1 measured, vllm-v0 ×%.3f, without V0's cost per sequence ×%.3f", b, measuredGrowth, v0Growth, v1Growth)
		if e := v0Growth/measuredGrowth - 1; e < -0.10 || e > 0.10 {
			t.Errorf("batch %d: vllm-v0's batch latency grows ×%.3f from batch 1, Oracle measured ×%.3f (%+.1f%%; want within 10%%)", b, v0Growth, measuredGrowth, e*100)
		}
		if v1Growth >= v0Growth {
			t.Errorf("batch %d: without V0's cost per sequence the latency grows ×%.3f, not less than vllm-v0's ×%.3f", b, v1Growth, v0Growth)
		}
	}
}
