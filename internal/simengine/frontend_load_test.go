package simengine

import (
	"math"
	"testing"
)

// FrontEndLoadNS adds front-end latency in proportion to the tokens a
// second the engine streams: none before any step, load × rate / 1000 once
// a steady decode batch has run for many windows, and it fades while the
// engine idles.
func TestFrontEndLoadFollowsTheStreamedRate(t *testing.T) {
	const loadNS = 10_000_000 // 10 ms per 1,000 tok/s
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
		p := DefaultCost
		p.FrontEndJitter, p.FrontEndLoadNS = 0, loadNS
		c.Cost = &p
	})
	base := e.FrontEnd(1, 100).LatencyNS
	if base != FittedFrontEndNS {
		t.Fatalf("front-end latency before any step %d ns, want the base %d", base, FittedFrontEndNS)
	}
	const seqs = 32
	for i := range seqs {
		if err := e.Submit(int64(i), 16, 100_000); err != nil {
			t.Fatal(err)
		}
	}
	var tokens, steps int64
	start := e.Now()
	for e.Now()-start < 3e9 { // 15 windows of 200 ms
		e.Step(func(Emission) { tokens++ })
		steps++
	}
	// The last steps are all decodes of the same batch: the rate is theirs.
	rate := seqs * 1e9 / float64(e.Stats().LastStepNS)
	if got := e.StreamRate(); math.Abs(got-rate) > 0.01*rate {
		t.Errorf("stream rate %.0f tok/s after %d steps, want the batch's %.0f (%d tokens in %.1f s)", got, steps, rate, tokens, float64(e.Now()-start)/1e9)
	}
	lat := e.FrontEnd(2, 100).LatencyNS
	want := float64(base) + loadNS*rate/1000
	if math.Abs(float64(lat)-want) > 0.01*want {
		t.Errorf("front-end latency %.1f ms at %.0f tok/s, want %.1f (base + 10 ms per 1,000 tok/s)", float64(lat)/1e6, rate, want/1e6)
	}
	// A second of idle engine time (five windows) before the next step:
	// the rate that step folds in is mostly that of the idle time.
	for _, id := range []int64{0, 1} {
		e.Cancel(id)
	}
	e.AdvanceTo(e.Now() + 1e9)
	before := e.StreamRate()
	e.Step(nil)
	if after := e.StreamRate(); after > before*0.05+seqs*1e9/float64(e.Stats().LastStepNS)*0.05 {
		t.Errorf("stream rate %.0f tok/s after a second idle, from %.0f: want it faded", after, before)
	}
}

// Without FrontEndLoadNS the engine keeps no rate and the latency is the
// base alone, however much it streams.
func TestFrontEndLoadOffByDefault(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
		p := DefaultCost
		p.FrontEndJitter = 0
		c.Cost = &p
	})
	for i := range 8 {
		if err := e.Submit(int64(i), 16, 64); err != nil {
			t.Fatal(err)
		}
	}
	for e.HasWork() {
		e.Step(nil)
	}
	if lat := e.FrontEnd(9, 100).LatencyNS; lat != FittedFrontEndNS || e.StreamRate() != 0 {
		t.Errorf("front-end latency %d ns, stream rate %v: want the base %d and no rate kept", lat, e.StreamRate(), FittedFrontEndNS)
	}
}
