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
