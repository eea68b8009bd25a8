package simengine

import (
	"math"
	"testing"
)

// decodeRun runs batch requests of in/out tokens together and returns the
// engine's stats, and the sum of power × step time over its steps.
func decodeRun(t *testing.T, e *Engine, batch, in, out int) (EngineStats, float64) {
	t.Helper()
	for i := range batch {
		if err := e.Submit(int64(i), in, out); err != nil {
			t.Fatal(err)
		}
	}
	integral := 0.0
	for e.HasWork() {
		dt := e.Step(nil)
		integral += e.Stats().LastStepPowerW * float64(dt) / 1e9
	}
	return e.Stats(), integral
}

func TestPowerFollowsTheSteps(t *testing.T) {
	t.Parallel()
	e := mustEngine(t, "H100-SXM", "llama-3.1-8b", 2, nil)
	st, integral := decodeRun(t, e, 4, 512, 64)
	g := e.Config().GPU
	if st.GPUs != 2 || st.IdlePowerW != g.IdleWatts {
		t.Fatalf("GPUs %d idle %v, want 2 and %v", st.GPUs, st.IdlePowerW, g.IdleWatts)
	}
	// Busy all along (no gaps): all GPUs' energy is the steps' integral.
	if st.Now != st.BusyNS {
		t.Fatalf("now %d busy %d: the run has idle gaps", st.Now, st.BusyNS)
	}
	if got, want := st.EnergyJ, 2*integral; math.Abs(got-want) > 1e-9*want {
		t.Errorf("energy %v J, want 2 × Σ power × dt = %v", got, want)
	}
	avg := st.StepEnergyJ / (float64(st.BusyNS) / 1e9)
	if avg <= g.IdleWatts || avg >= g.TDPWatts {
		t.Errorf("average step power %v W, want between idle %v and TDP %v", avg, g.IdleWatts, g.TDPWatts)
	}
	// Idle time adds the idle draw of every GPU.
	e.AdvanceTo(st.Now + 2e9)
	if got, want := e.Stats().EnergyJ-st.EnergyJ, 2*2*g.IdleWatts; math.Abs(got-want) > 1e-6 {
		t.Errorf("2 s idle on 2 GPUs added %v J, want %v", got, want)
	}
}

func TestPrefillDrawsMoreThanSmallDecode(t *testing.T) {
	t.Parallel()
	e := mustEngine(t, "H100-SXM", "llama-3.1-8b", 1, nil)
	if err := e.Submit(1, 4096, 2); err != nil {
		t.Fatal(err)
	}
	e.Step(nil) // a long prompt chunk: arithmetic-bound
	prefill := e.Stats().LastStepPowerW
	e.Step(nil) // one decode of one sequence: weight reads
	decode := e.Stats().LastStepPowerW
	if !(prefill > decode) {
		t.Errorf("prefill step %v W, decode step %v W: prefill should draw more", prefill, decode)
	}
	if a := e.Stats().LastStepActivity; a.DRAM < a.Compute {
		t.Errorf("a batch-1 decode step is memory-bound, got activity %+v", a)
	}
}

// Bigger decode batches spend fewer joules per token (ML.ENERGY's finding
// the power model has to keep).
func TestBiggerBatchFewerJoulesPerToken(t *testing.T) {
	t.Parallel()
	var prev float64
	for _, b := range []int{1, 8, 64} {
		e := mustEngine(t, "A100-80GB", "llama-3.1-8b", 1, nil)
		st, _ := decodeRun(t, e, b, 256, 128)
		jpt := st.EnergyJ / float64(st.OutputTokens)
		if prev > 0 && !(jpt < prev) {
			t.Errorf("batch %d: %v J/token, not below the smaller batch's %v", b, jpt, prev)
		}
		prev = jpt
	}
}

func TestNoPowerModelNoEnergy(t *testing.T) {
	t.Parallel()
	e := mustEngine(t, "H100-SXM", "llama-3.1-8b", 1, func(c *Config) { c.GPU.TDPWatts, c.GPU.IdleWatts = 0, 0 })
	st, _ := decodeRun(t, e, 1, 16, 4)
	if st.EnergyJ != 0 || st.IdlePowerW != 0 {
		t.Errorf("a GPU without a TDP got energy %v J, idle %v W", st.EnergyJ, st.IdlePowerW)
	}
	g := e.Config().GPU
	g.TDPWatts, g.IdleWatts = 100, 200
	if g.Validate() == nil {
		t.Error("idle above the TDP was accepted")
	}
}
