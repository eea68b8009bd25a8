package simengine

import "testing"

// With asynchronous scheduling (vLLM's default) a request that arrives
// while steps run joins the step after next: the next one was scheduled
// before it came. At an idle engine it starts at once, and with
// synchronous scheduling, or a linear (llama.cpp) profile, it joins the
// next step.
func TestAsyncSchedulingAdmission(t *testing.T) {
	firstSched := func(mod func(*Config), idle bool) (stepsWaited int) {
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, mod)
		if !idle {
			if err := e.Submit(1, 64, 1000); err != nil {
				t.Fatal(err)
			}
			e.Step(nil)
			e.Step(nil) // decoding now
		}
		// Arrives halfway through the step that runs next (or at once).
		start := e.Now()
		var admitted bool
		for step := 0; step < 5 && !admitted; step++ {
			at := e.Now()
			if step == 0 && !idle {
				at = start // the step below runs from start; the request comes during it
			}
			if step == 0 {
				if err := e.SubmitAt(2, 32, 4, at); err != nil {
					t.Fatal(err)
				}
			}
			e.Step(func(em Emission) {
				if em.ID == 2 && em.Index == 0 {
					admitted = true
				}
			})
			if admitted {
				return step
			}
		}
		t.Fatal("request 2 never got its first token")
		return -1
	}
	// Busy engine, request arriving as step k starts (it is not in step k
	// under either policy: it came as k was scheduled).
	if got := firstSched(nil, false); got != 1 {
		t.Errorf("async, busy: first token in step %d after arrival, want 1 (the step after next)", got)
	}
	sync := func(c *Config) { c.NoAsyncScheduling = true }
	if got := firstSched(sync, false); got != 0 {
		t.Errorf("sync, busy: first token in step %d after arrival, want 0 (the next)", got)
	}
	if got := firstSched(nil, true); got != 0 {
		t.Errorf("async, idle: first token in step %d, want 0 (at once)", got)
	}
	linear := func(c *Config) {
		cost := DefaultCost
		cost.Linear = &LinearStepCost{BaseNS: 5e6, PerPrefillTokenNS: 1e5, PerDecodeSeqNS: 1e6}
		c.Cost = &cost
	}
	if got := firstSched(linear, false); got != 0 {
		t.Errorf("linear profile, busy: first token in step %d, want 0 (llama.cpp schedules between batches)", got)
	}
}
