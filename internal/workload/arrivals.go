package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Arrivals is an open-loop schedule: each call to Next returns the offset
// from run start at which the next request should be sent. The sequence is
// a pure function of its parameters and seed (no clock is read), so the
// same seed gives the same schedule and a test can check it by counting.
// An Arrivals value is a cursor and is not safe for concurrent use; the
// load generator's single scheduler goroutine (or the simulator) owns it.
type Arrivals interface {
	Next() time.Duration
}

// Arrival kinds accepted by NewArrivals.
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
)

// NewArrivals returns the arrival schedule of the given kind at mean rate
// rateRPS requests per second. The first arrival is at offset 0, as in
// vLLM's bench serve (it sends, then sleeps a gap).
//
//   - constant: gaps of exactly 1/rate.
//   - poisson: exponential gaps with mean 1/rate (coefficient of variation 1).
//   - gamma: gamma-distributed gaps with shape = burstiness and scale =
//     1/(rate·burstiness), so the mean rate is kept whatever the burstiness;
//     CV² of the gaps is 1/burstiness. Burstiness 1 is Poisson; below 1 is
//     burstier (clumps and long silences); above 1 is smoother, tending to
//     constant. This is the definition of vLLM bench serve's --burstiness.
//
// burstiness is only meaningful for gamma; the other kinds accept 0 or 1
// (what a CLI default passes) and reject anything else rather than silently
// ignoring it. For gamma, 0 means 1.
func NewArrivals(kind string, rateRPS, burstiness float64, seed uint64) (Arrivals, error) {
	if math.IsNaN(rateRPS) || math.IsInf(rateRPS, 0) || rateRPS <= 0 {
		return nil, fmt.Errorf("arrival rate must be a positive number of requests per second, got %g", rateRPS)
	}
	if math.IsNaN(burstiness) || math.IsInf(burstiness, 0) || burstiness < 0 {
		return nil, fmt.Errorf("burstiness must be a positive number (1 = Poisson, <1 burstier, >1 smoother), got %g", burstiness)
	}
	meanGapNs := 1e9 / rateRPS
	k := strings.ToLower(strings.TrimSpace(kind))
	if k != ArrivalGamma && burstiness != 0 && burstiness != 1 {
		return nil, fmt.Errorf("burstiness %g applies only to --arrival gamma, not %q", burstiness, kind)
	}
	switch k {
	case ArrivalConstant:
		return &constantArrivals{gapNs: meanGapNs}, nil
	case ArrivalPoisson:
		return &poissonArrivals{meanGapNs: meanGapNs, rng: newRand(seed, streamArrivals)}, nil
	case ArrivalGamma:
		if burstiness == 0 {
			burstiness = 1
		}
		return &gammaArrivals{shape: burstiness, scaleNs: meanGapNs / burstiness, rng: newRand(seed, streamArrivals)}, nil
	default:
		return nil, fmt.Errorf("unknown arrival process %q; expected constant, poisson or gamma", kind)
	}
}

// Offsets are accumulated in float64 nanoseconds and rounded on the way
// out, so rounding never drifts the mean rate over a long run.

type constantArrivals struct {
	gapNs float64
	n     int64
}

func (a *constantArrivals) Next() time.Duration {
	// Multiplying (not summing) keeps the schedule exact at any length.
	t := float64(a.n) * a.gapNs
	a.n++
	return toDuration(t)
}

type poissonArrivals struct {
	meanGapNs float64
	tNs       float64
	started   bool
	rng       *rand.Rand
}

func (a *poissonArrivals) Next() time.Duration {
	if a.started {
		a.tNs += a.rng.ExpFloat64() * a.meanGapNs
	}
	a.started = true
	return toDuration(a.tNs)
}

type gammaArrivals struct {
	shape, scaleNs float64
	tNs            float64
	started        bool
	rng            *rand.Rand
}

func (a *gammaArrivals) Next() time.Duration {
	if a.started {
		a.tNs += sampleGamma(a.rng, a.shape) * a.scaleNs
	}
	a.started = true
	return toDuration(a.tNs)
}

func toDuration(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(ns))
}

// sampleGamma draws from Gamma(shape, 1) by Marsaglia and Tsang's method
// ("A simple method for generating gamma variables", 2000). For shape < 1
// it uses the identity Gamma(a) = Gamma(a+1)·U^(1/a).
func sampleGamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return sampleGamma(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if u > 0 && math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Random streams: every consumer of randomness derives its own PCG stream
// from (seed, stream), so adding draws to one never shifts another.
const (
	streamArrivals uint64 = 0x6172726976616c73 // "arrivals"
	streamLengths  uint64 = 0x6c656e6774687300 // "lengths"
	streamPrompt   uint64 = 0x70726f6d70740000 // "prompt"
	streamPrefix   uint64 = 0x7072656669780000 // "prefix"
	streamDataset  uint64 = 0x6461746173657400 // "dataset"
)

func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// mix64 is SplitMix64's finaliser: it spreads request indices so that
// streams for i and i+1 share no structure.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
