package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
)

// The front-end clock runs at full speed while the engine idles and at its
// rate during steps; when finds the moment a front end's work is done.
func TestFrontEndClock(t *testing.T) {
	c := newFrontEndClock(0.25)
	c.idle(100)
	if v := c.at(100); v != 100 {
		t.Fatalf("after 100 ns idle the front end has worked %v ns, want 100", v)
	}
	c.step(500) // a step from 100 to 500: 100 ns of front-end work
	if v := c.at(500); v != 200 {
		t.Errorf("after a 400 ns step: %v, want 200", v)
	}
	if v := c.at(300); v != 150 {
		t.Errorf("halfway through the step: %v, want 150", v)
	}
	if w := c.when(180, 300); w != 420 {
		t.Errorf("work reaching 180 within the step: at %d, want 420", w)
	}
	if w := c.when(260, 500); w != 560 {
		t.Errorf("work reaching 260 after the step: at %d (idle from 500), want 560", w)
	}
	if !c.done(200, 500) || c.done(201, 500) {
		t.Error("done at 500: want 200 done and 201 not")
	}
	if r := newFrontEndClock(0).rate; r != 1 {
		t.Errorf("rate 0 means cores of its own: clock rate %v, want 1", r)
	}
}

// A front end slowed during steps delays a request that arrives while
// another decodes, and not one that arrives at an idle engine.
func TestFrontEndSlowedDuringSteps(t *testing.T) {
	ttft := func(rate float64, concurrency int) time.Duration {
		cfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
		cost := legacyDefaultCost                                                       // no serial admission
		cost.Linear = &simengine.LinearStepCost{BaseNS: 10e6, PerPrefillTokenNS: 0.1e6} // 10 ms decode steps
		cost.FrontEndNS, cost.FrontEndPerTokenNS, cost.FrontEndJitter = 5e6, 0, 0
		cost.FrontEndRateInSteps = rate
		cfg.Cost = &cost
		recs, _, err := Collect(context.Background(), Config{Engine: cfg, Gen: unevenOutputs{}, Concurrency: concurrency, Requests: 40, WarmupRequests: 8})
		if err != nil {
			t.Fatal(err)
		}
		var sum time.Duration
		n := 0
		for _, r := range recs {
			if !r.Warmup {
				v, _ := r.TTFT()
				sum += v
				n++
			}
		}
		return sum / time.Duration(n)
	}
	// Alone: 5 ms front end on idle cores, then one 12 ms prompt step.
	// (Two streams of uneven answers overlap: one's next request reaches
	// the server while the other decodes.)
	if a, b := ttft(1, 1), ttft(0.1, 1); a != b || math.Abs(float64(a-17*time.Millisecond)) > float64(time.Millisecond) {
		t.Errorf("one stream: TTFT %v at full speed, %v at a tenth: want both 17 ms", a, b)
	}
	// Two streams: the other's 10 ms steps run while a request's front end
	// works, at a tenth of its speed, about 50 ms instead of 5.
	full, slow := ttft(1, 2), ttft(0.1, 2)
	t.Logf("two streams: TTFT %v with the front end at full speed, %v at a tenth during steps", full, slow)
	if slow < full+30*time.Millisecond {
		t.Errorf("two streams: TTFT %v at a tenth, %v at full speed: want the slowed front end to add tens of ms", slow, full)
	}
}

// unevenOutputs alternates 50- and 73-token answers, so that two streams
// do not finish together.
type unevenOutputs struct{}

func (unevenOutputs) Lengths(id int64) (int, int) { return 20, 50 + 23*int(id%2) }
