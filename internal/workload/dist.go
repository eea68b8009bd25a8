package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxLengthTokens bounds every length a Dist can produce or be given. No
// model has a context this long; the bound keeps a heavy lognormal tail or a
// typo ("normal:5e12,1") from overflowing int arithmetic downstream.
const MaxLengthTokens = 10_000_000

// Dist is a distribution of token counts (input or output length).
// Sample always returns a value in [1, MaxLengthTokens].
type Dist interface {
	Sample(rng *rand.Rand) int
	// Mean is the nominal mean before clamping (for reports and sizing).
	Mean() float64
	// String is the canonical spelling, accepted back by ParseDist.
	String() string
}

// distHelp is appended to every ParseDist error so the user sees all forms.
const distHelp = `expected a token count like "512", a uniform range "256:1024", "normal:MEAN,STD" or "lognormal:MEAN,STD"`

// ParseDist parses a length distribution:
//
//	512                  every request exactly 512 tokens
//	256:1024             uniform over 256..1024 inclusive (also uniform:256,1024)
//	normal:512,128       normal with mean 512 and standard deviation 128, rounded
//	lognormal:512,256    lognormal whose own mean is 512 and own standard deviation
//	                     is 256 tokens (not the mu/sigma of the underlying normal;
//	                     they are derived: sigma² = ln(1+std²/mean²),
//	                     mu = ln(mean) − sigma²/2)
//
// Samples are rounded to the nearest integer and clamped to at least 1.
func ParseDist(s string) (Dist, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("length distribution is empty; %s", distHelp)
	}
	kind, args, hasKind := strings.Cut(s, ":")
	if hasKind {
		kind = strings.ToLower(strings.TrimSpace(kind))
	}
	switch {
	case !hasKind:
		n, err := parseCount(orig, s)
		if err != nil {
			return nil, err
		}
		return fixedDist(n), nil
	case kind == "fixed":
		n, err := parseCount(orig, args)
		if err != nil {
			return nil, err
		}
		return fixedDist(n), nil
	case kind == "uniform":
		lo, hi, ok := strings.Cut(args, ",")
		if !ok {
			return nil, fmt.Errorf("length distribution %q: uniform needs LO,HI, e.g. uniform:256,1024 (or 256:1024)", orig)
		}
		return parseUniform(orig, lo, hi)
	case kind == "normal" || kind == "lognormal":
		m, sd, ok := strings.Cut(args, ",")
		if !ok {
			return nil, fmt.Errorf("length distribution %q: %s needs MEAN,STD, e.g. %s:512,128", orig, kind, kind)
		}
		mean, err := parseReal(orig, "mean", m)
		if err != nil {
			return nil, err
		}
		std, err := parseReal(orig, "standard deviation", sd)
		if err != nil {
			return nil, err
		}
		if mean <= 0 {
			return nil, fmt.Errorf("length distribution %q: mean must be > 0, got %g", orig, mean)
		}
		if std < 0 {
			return nil, fmt.Errorf("length distribution %q: standard deviation must be >= 0, got %g", orig, std)
		}
		if kind == "normal" {
			return normalDist{mean: mean, std: std}, nil
		}
		return newLognormal(mean, std), nil
	default:
		// "256:1024": a kind that parses as a number is the uniform shorthand.
		if _, err := strconv.Atoi(strings.TrimSpace(kind)); err == nil {
			return parseUniform(orig, kind, args)
		}
		return nil, fmt.Errorf("length distribution %q: unknown kind %q; %s", orig, kind, distHelp)
	}
}

func parseCount(orig, s string) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("length distribution %q: %q is not a whole number of tokens; %s", orig, s, distHelp)
	}
	if n < 1 || n > MaxLengthTokens {
		return 0, fmt.Errorf("length distribution %q: token count must be between 1 and %d, got %d", orig, MaxLengthTokens, n)
	}
	return n, nil
}

func parseReal(orig, what, s string) (float64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("length distribution %q: %s %q is not a number", orig, what, s)
	}
	if v > MaxLengthTokens {
		return 0, fmt.Errorf("length distribution %q: %s %g is above the limit of %d tokens", orig, what, v, MaxLengthTokens)
	}
	return v, nil
}

func parseUniform(orig, loS, hiS string) (Dist, error) {
	lo, err := parseCount(orig, loS)
	if err != nil {
		return nil, err
	}
	hi, err := parseCount(orig, hiS)
	if err != nil {
		return nil, err
	}
	if lo > hi {
		return nil, fmt.Errorf("length distribution %q: uniform range is backwards (%d > %d); write LO:HI", orig, lo, hi)
	}
	return uniformDist{lo: lo, hi: hi}, nil
}

func clampLength(x float64) int {
	x = math.Round(x)
	if !(x >= 1) { // also catches NaN
		return 1
	}
	if x > MaxLengthTokens {
		return MaxLengthTokens
	}
	return int(x)
}

type fixedDist int

func (d fixedDist) Sample(*rand.Rand) int { return int(d) }
func (d fixedDist) Mean() float64         { return float64(d) }
func (d fixedDist) String() string        { return strconv.Itoa(int(d)) }

type uniformDist struct{ lo, hi int }

func (d uniformDist) Sample(rng *rand.Rand) int { return d.lo + rng.IntN(d.hi-d.lo+1) }
func (d uniformDist) Mean() float64             { return float64(d.lo+d.hi) / 2 }
func (d uniformDist) String() string            { return fmt.Sprintf("%d:%d", d.lo, d.hi) }

type normalDist struct{ mean, std float64 }

func (d normalDist) Sample(rng *rand.Rand) int {
	return clampLength(d.mean + d.std*rng.NormFloat64())
}
func (d normalDist) Mean() float64  { return d.mean }
func (d normalDist) String() string { return "normal:" + fmtReal(d.mean) + "," + fmtReal(d.std) }

// lognormalDist keeps the user's mean/std for String and the derived
// parameters of the underlying normal for sampling.
type lognormalDist struct{ mean, std, mu, sigma float64 }

func newLognormal(mean, std float64) lognormalDist {
	sigma2 := math.Log1p((std * std) / (mean * mean))
	return lognormalDist{mean: mean, std: std, mu: math.Log(mean) - sigma2/2, sigma: math.Sqrt(sigma2)}
}

func (d lognormalDist) Sample(rng *rand.Rand) int {
	return clampLength(math.Exp(d.mu + d.sigma*rng.NormFloat64()))
}
func (d lognormalDist) Mean() float64  { return d.mean }
func (d lognormalDist) String() string { return "lognormal:" + fmtReal(d.mean) + "," + fmtReal(d.std) }

func fmtReal(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
