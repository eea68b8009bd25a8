package simengine

import "math"

// stepNoise varies step times around the cost model's price: each step's
// time is multiplied by an independent lognormal draw of mean 1 and
// coefficient of variation CostParams.StepTimeCV, a deterministic function
// of the step's number and Config.Seed. A CPU server's steps vary with
// what else the machine runs (ggml's threads wait for each other at every
// layer, so one descheduled thread stalls the step); without the spread a
// closed loop of identical requests repeats one schedule exactly and every
// TTFT quantile collapses onto a few values.
type stepNoise struct {
	mu, sigma float64 // of the log of the factor
	seed      uint64
}

func newStepNoise(cv float64, seed int64) stepNoise {
	if !(cv > 0) {
		return stepNoise{}
	}
	s2 := math.Log1p(cv * cv)
	// A stream of its own: FrontEnd draws splitmix64(seed ^ id·φ), and
	// step k's factor must not follow request k's jitter.
	const stream = 0xd1b54a32d192ed03
	return stepNoise{mu: -s2 / 2, sigma: math.Sqrt(s2), seed: uint64(seed) ^ stream}
}

// scale is the factor of step number step (1 when there is no noise).
func (n stepNoise) scale(step int64) float64 {
	if n.sigma == 0 {
		return 1
	}
	a := splitmix64(n.seed ^ uint64(step)*0x9e3779b97f4a7c15)
	b := splitmix64(a)
	u1 := (float64(a>>11) + 0.5) / (1 << 53) // (0, 1): log is finite
	u2 := float64(b>>11) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return math.Exp(n.mu + n.sigma*z)
}
