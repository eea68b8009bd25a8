package simengine

import (
	"math"
	"testing"
)

// An engine whose cost has a linear step model prices its steps by it: a
// lone request's first token comes after one prefill step of its prompt,
// every later token after a decode step of one sequence over its context
// so far, exactly as LinearStepNS says (the formula knee calibrate fits).
func TestLinearStepCost(t *testing.T) {
	lin := &LinearStepCost{BaseNS: 2e6, PerPrefillTokenNS: 1e6, PerDecodeSeqNS: 3e6, PerAttentionPairNS: 4e3}
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
		cost := DefaultCost
		cost.Linear = lin
		c.Cost = &cost
	})
	const in, out = 100, 5
	if err := e.Submit(1, in, out); err != nil {
		t.Fatal(err)
	}
	var times []int64
	for e.HasWork() {
		e.Step(func(em Emission) { times = append(times, em.Time) })
	}
	if len(times) != out {
		t.Fatalf("%d tokens, want %d", len(times), out)
	}
	want := lin.LinearStepNS(PrefillShape(in), 0) // 2 + 100 + 0.4 ms
	if got := float64(times[0]); math.Abs(got-want) > 1 {
		t.Errorf("first token at %.0f ns, want one prefill step of %.0f ns", got, want)
	}
	for i := 1; i < out; i++ {
		// The i-th decode step reads the prompt and the i tokens made so far.
		want := lin.LinearStepNS(DecodeShape(1, int64(in+i-1)), 1)
		if got := float64(times[i] - times[i-1]); math.Abs(got-want) > 1 {
			t.Errorf("gap %d: %.0f ns, want %.0f ns", i, got, want)
		}
	}
}

// A prompt curve prices the prompt tokens of a step by interpolating the
// measured lengths (holding below the first, the last slope above the
// last), decoding sequences and attention on top. A decode curve prices a
// decode-only step the same way by its decoding sequences; a step with
// prompt tokens keeps the per-sequence line for those. Without a decode
// curve, decode-only steps keep the line.
func TestStepCurves(t *testing.T) {
	prompt := LinearStepCost{BaseNS: 2e6, PerPrefillTokenNS: 1e6, PerDecodeSeqNS: 3e6, PerAttentionPairNS: 10,
		PromptCurve: []CurvePoint{{8, 10e6}, {64, 40e6}, {128, 104e6}}}
	decode := LinearStepCost{BaseNS: 2e6, PerPrefillTokenNS: 1e6, PerDecodeSeqNS: 3e6, PerAttentionPairNS: 10,
		DecodeCurve: []CurvePoint{{1, 5e6}, {2, 7e6}, {4, 11e6}}}
	for _, c := range []struct {
		l                   LinearStepCost
		prompt, decode, ctx int64
		want                float64
	}{
		{prompt, 4, 0, 4, 10e6 + 10*4*4},               // below the first point: held
		{prompt, 36, 0, 36, 25e6 + 10*36*36},           // halfway from 8 to 64
		{prompt, 96, 2, 300, 72e6 + 2*3e6 + 10*98*300}, // with two decoding sequences
		{prompt, 192, 0, 192, 168e6 + 10*192*192},      // beyond the last: its slope
		{prompt, 0, 3, 300, 2e6 + 3*3e6 + 10*3*300},    // decode only, no decode curve: the line
		{decode, 0, 1, 40, 5e6 + 10*1*40},
		{decode, 0, 3, 120, 9e6 + 10*3*120},                  // halfway from 2 to 4
		{decode, 0, 6, 240, 15e6 + 10*6*240},                 // beyond the last: its slope
		{decode, 16, 2, 100, 2e6 + 16e6 + 2*3e6 + 10*18*100}, // a prompt in the step: the line
	} {
		s := StepShape{NewTokens: c.prompt + c.decode, CtxTokens: c.ctx}
		if got := c.l.LinearStepNS(s, c.decode); math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("%d prompt + %d decode tokens: %.0f ns, want %.0f", c.prompt, c.decode, got, c.want)
		}
	}
}

// Step-time noise keeps the mean step and has the spread asked for, is a
// function of the seed, and is absent at 0.
func TestStepNoise(t *testing.T) {
	n := newStepNoise(0.25, 7)
	var sum, sq float64
	const steps = 200_000
	for i := int64(0); i < steps; i++ {
		f := n.scale(i)
		sum += f
		sq += f * f
	}
	mean := sum / steps
	cv := math.Sqrt(sq/steps-mean*mean) / mean
	if math.Abs(mean-1) > 0.005 || math.Abs(cv-0.25) > 0.01 {
		t.Errorf("mean factor %.4f, coefficient of variation %.4f; want 1 and 0.25", mean, cv)
	}
	if n.scale(42) != newStepNoise(0.25, 7).scale(42) || n.scale(42) == newStepNoise(0.25, 8).scale(42) {
		t.Error("the factor of a step must be a function of the seed and the step")
	}
	if f := newStepNoise(0, 7).scale(3); f != 1 {
		t.Errorf("no spread: factor %v, want 1", f)
	}
	// An engine with the spread keeps its busy time close to the exact
	// engine's over a long run, and differs step by step.
	busy := func(cv float64) (int64, int64) {
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
			cost := DefaultCost
			cost.StepTimeCV = cv
			c.Cost = &cost
			c.Seed = 3
		})
		if err := e.Submit(1, 200, 2000); err != nil {
			t.Fatal(err)
		}
		first := e.Step(nil)
		for e.HasWork() {
			e.Step(nil)
		}
		return e.Stats().BusyNS, first
	}
	exact, firstExact := busy(0)
	noisy, firstNoisy := busy(0.2)
	if r := float64(noisy) / float64(exact); math.Abs(r-1) > 0.03 || firstNoisy == firstExact {
		t.Errorf("busy time with 20%% spread / without: %.3f (want within 3%% of 1); first step %d vs %d ns (want different)", r, firstNoisy, firstExact)
	}
}
