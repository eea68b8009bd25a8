package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/knee-dev/knee/internal/slo"
)

// Runner measures one load level. The simulator and a real target (through
// the load generator) both satisfy it.
type Runner interface {
	Run(ctx context.Context, load Load) (Step, error)
}

// Plan says which loads to measure: explicit Loads, or automatic growth
// from Min by Factor up to Max, stopping when an SLO fails or throughput
// grows less than MinGain, then Refine bisection steps between the last
// good and the first bad load.
type Plan struct {
	Kind  string
	Loads []float64 // explicit steps; empty means automatic

	Min, Max float64 // automatic bounds (inclusive)
	Factor   float64 // growth per step; 0 = 2
	MinGain  float64 // relative throughput growth below which the curve has flattened; 0 = 0.05
	Refine   int     // bisection steps after the stop; 0 = 3, <0 = none
	Metric   string  // throughput for the flattening test; "" = output_tps
}

// Auto reports whether the plan grows automatically.
func (p *Plan) Auto() bool { return len(p.Loads) == 0 }

// Validate checks the plan; errors name what was wrong.
func (p *Plan) Validate() error {
	if p.Kind != Concurrency && p.Kind != Rate {
		return fmt.Errorf("load kind %q: want %s or %s", p.Kind, Concurrency, Rate)
	}
	for _, l := range p.Loads {
		if !(l > 0) || math.IsInf(l, 0) {
			return fmt.Errorf("load %v: want a positive number", l)
		}
		if p.Kind == Concurrency && l != math.Trunc(l) {
			return fmt.Errorf("concurrency %v: want a whole number", l)
		}
	}
	if p.Auto() {
		if !(p.Min > 0) || !(p.Max >= p.Min) || math.IsInf(p.Max, 0) {
			return fmt.Errorf("automatic sweep from %v to %v: want 0 < min <= max", p.Min, p.Max)
		}
		if p.Factor != 0 && !(p.Factor > 1) {
			return fmt.Errorf("growth factor %v: want more than 1", p.Factor)
		}
	}
	return nil
}

// Run measures the plan's loads with r, judging each step against set, and
// analyses the curve. progress (may be nil) sees each step as it finishes.
// On a runner error (or ctx cancellation) the steps measured so far are
// analysed and returned with the error, so nothing measured is lost.
func Run(ctx context.Context, r Runner, p Plan, set slo.Set, progress func(Step)) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var steps []Step
	var notes []string
	measure := func(v float64, refined bool) (Step, error) {
		if p.Kind == Concurrency {
			v = math.Round(v)
		}
		s, err := r.Run(ctx, Load{Kind: p.Kind, Value: v})
		if err != nil {
			return s, fmt.Errorf("step %s: %w", Load{Kind: p.Kind, Value: v}, err)
		}
		s.Load = Load{Kind: p.Kind, Value: v}
		s.Refined = refined
		Judge(&s, set)
		steps = append(steps, s)
		if progress != nil {
			progress(s)
		}
		return s, nil
	}
	var err error
	if p.Auto() {
		notes, err = runAuto(ctx, p, measure)
	} else {
		notes, err = runLoads(p, measure)
	}
	if len(steps) == 0 {
		if err == nil {
			err = errors.New("no steps measured")
		}
		return nil, err
	}
	res, aerr := Analyze(steps, Options{SLOs: Objectives(set), Metric: p.Metric})
	if aerr != nil {
		return nil, errors.Join(err, aerr)
	}
	res.Notes = append(res.Notes, notes...)
	return res, err
}

func runAuto(ctx context.Context, p Plan, measure func(float64, bool) (Step, error)) ([]string, error) {
	factor, minGain, refine := p.Factor, p.MinGain, p.Refine
	if factor == 0 {
		factor = 2
	}
	if minGain == 0 {
		minGain = 0.05
	}
	if refine == 0 {
		refine = 3
	}
	metric := p.Metric
	if metric == "" {
		metric = MetricOutputTPS
	}
	var notes []string
	var good, bad *Step
	plateau := false
	for x := p.Min; ; x *= factor {
		if p.Kind == Concurrency && math.Round(x) <= lastLoad(good) {
			continue // factors below 2 can round to the same concurrency
		}
		if x > p.Max*(1+1e-9) {
			notes = append(notes, fmt.Sprintf("automatic sweep reached its upper bound %s without an SLO failure or a flat throughput", Load{p.Kind, p.Max}))
			break
		}
		s, err := measure(x, false)
		if err != nil {
			return notes, err
		}
		if s.Unreachable != "" {
			return append(notes, unreachableNote(s)), nil
		}
		if !s.SLOMet {
			bad = &s
			notes = append(notes, fmt.Sprintf("automatic sweep stopped growing at %s: an SLO failed", s.Load))
			break
		}
		if s.Oversaturated != "" {
			bad = &s
			notes = append(notes, fmt.Sprintf("automatic sweep stopped growing at %s: the step stopped over-saturated, its queue growing without bound", s.Load))
			break
		}
		if saturated(&s) {
			bad = &s
			notes = append(notes, fmt.Sprintf("automatic sweep stopped growing at %s: the server's waiting queue grew without bound through the step (saturation seen in its own metrics)", s.Load))
			break
		}
		if good != nil && gain(good, &s, metric) < minGain {
			bad, plateau = &s, true
			notes = append(notes, fmt.Sprintf("automatic sweep stopped growing at %s: throughput grew only %+.1f%% over %s (< %.0f%%)",
				s.Load, 100*gain(good, &s, metric), good.Load, 100*minGain))
			break
		}
		good = &s
		if ctx.Err() != nil {
			return notes, ctx.Err()
		}
	}
	if good == nil || bad == nil || refine < 0 {
		if good == nil && bad != nil {
			notes = append(notes, fmt.Sprintf("the first step %s already fails: lower --min to find a safe load", bad.Load))
		}
		return notes, nil
	}
	lo, hi := *good, *bad
	for i := 0; i < refine; i++ {
		mid := math.Sqrt(lo.Load.Value * hi.Load.Value)
		if p.Kind == Concurrency {
			mid = math.Round(mid)
		} else {
			mid = roundSig(mid, 3) // 47.6 req/s, not 47.5683
		}
		if mid <= lo.Load.Value || mid >= hi.Load.Value || hi.Load.Value/lo.Load.Value < 1.2 {
			break
		}
		s, err := measure(mid, true)
		if err != nil {
			return notes, err
		}
		if s.Unreachable != "" {
			return append(notes, unreachableNote(s)), nil
		}
		switch {
		case !plateau && s.SLOMet && !saturated(&s) && s.Oversaturated == "":
			lo = s
		case !plateau:
			hi = s
		case gain(&s, &hi, metric) < minGain: // already flat at mid
			hi = s
		default:
			lo = s
		}
	}
	notes = append(notes, fmt.Sprintf("refined by bisection between %s and %s", lo.Load, hi.Load))
	return notes, nil
}

// runLoads measures the plan's explicit loads in order. After a step that
// stopped over-saturated no higher load is measured: it would only queue
// more; the note names the loads left out.
func runLoads(p Plan, measure func(float64, bool) (Step, error)) ([]string, error) {
	var notes []string
	limit := math.Inf(1)
	var skipped []string
	for i, v := range p.Loads {
		if v > limit {
			skipped = append(skipped, Load{p.Kind, v}.String())
			continue
		}
		s, err := measure(v, false)
		if err != nil {
			return notes, err
		}
		if s.Unreachable != "" {
			note := unreachableNote(s)
			if rest := p.Loads[i+1:]; len(rest) > 0 {
				left := make([]string, len(rest))
				for j, l := range rest {
					left[j] = Load{p.Kind, l}.String()
				}
				note += "; left out: " + strings.Join(left, ", ")
			}
			return append(notes, note), nil
		}
		if s.Oversaturated != "" && v < limit {
			limit = v
		}
	}
	if len(skipped) > 0 {
		notes = append(notes, fmt.Sprintf("the step at %s stopped over-saturated, so no higher load was measured: %s left out",
			Load{p.Kind, limit}, strings.Join(skipped, ", ")))
	}
	return notes, nil
}

// unreachableNote says the sweep stopped at step s, its target gone.
func unreachableNote(s Step) string {
	return fmt.Sprintf("the sweep stopped at %s: %s; no further step was measured", s.Load, s.Unreachable)
}

func lastLoad(s *Step) float64 {
	if s == nil {
		return 0
	}
	return s.Load.Value
}

func gain(from, to *Step, metric string) float64 {
	a := from.Throughput(metric)
	if a <= 0 {
		return math.Inf(1)
	}
	return to.Throughput(metric)/a - 1
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 {
		return 0
	}
	scale := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}
