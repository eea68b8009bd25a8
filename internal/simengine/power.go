package simengine

import "math"

// The power model: a GPU draws its idle power between steps, and during a
// step its idle power plus a share of the range up to its TDP that follows
// how busy the step keeps its arithmetic and its memory. Arithmetic-bound
// kernels (prefill GEMMs) run near the TDP; memory-bound decode draws less:
// ML.ENERGY's benchmark (Chung et al., "The ML.ENERGY Benchmark", 2025)
// measures H100 decode well below 700 W at small batches, rising with the
// batch as the GEMMs grow. The weights below are a first model, stated so
// they can be scored against published measurements; they are not fitted.
const (
	// powerBusyFloor is the share of the range any step draws (clocks
	// up, kernel launches, caches) whatever its kernels do.
	powerBusyFloor = 0.15
	// powerComputeWeight and powerMemoryWeight are the shares of the
	// range a step draws per unit of its time that its arithmetic and its
	// memory traffic take.
	powerComputeWeight = 0.85
	powerMemoryWeight  = 0.45
)

// HasPower reports whether the GPU has a power model (a TDP).
func (g GPU) HasPower() bool { return g.TDPWatts > 0 }

// IdlePowerW is the GPU's draw with a model loaded and no step running.
func (g GPU) IdlePowerW() float64 {
	if g.IdleWatts > 0 {
		return g.IdleWatts
	}
	return g.TDPWatts / 10
}

// Activity is how busy one step keeps a GPU, as shares of the step's time
// (each 0..1): SM is the time any kernel runs (DCGM's SM_ACTIVE: an SM has
// a warp), Compute the time its arithmetic takes, DRAM the time its
// memory traffic takes (DCGM's DRAM_ACTIVE).
type Activity struct {
	SM, Compute, DRAM float64
}

// PowerW is one GPU's draw during a step with activity a.
func (g GPU) PowerW(a Activity) float64 {
	idle := g.IdlePowerW()
	u := math.Min(1, powerBusyFloor+powerComputeWeight*a.Compute+powerMemoryWeight*a.DRAM)
	return idle + (g.TDPWatts-idle)*u
}

// activity is a step's Activity from its priced terms (scaled as the step
// is): the shares of the step's modelled time.
func (c *costModel) activity(t StepTerms) Activity {
	total := t.NS(c.t0NS, c.perSeqNS, 1, 1)
	if total <= 0 {
		return Activity{}
	}
	kernels := math.Max(t.WeightNS, t.LinearNS) + math.Max(t.KVNS, t.AttnNS) + t.AllReduceNS
	return Activity{
		SM:      math.Min(1, kernels/total),
		Compute: math.Min(1, t.CmpNS()/total),
		DRAM:    math.Min(1, t.MemNS()/total),
	}
}
