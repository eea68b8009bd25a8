// Package refit is the simulator as a guided sweep's model (sweep.Model):
// it predicts a step by simulating it with the sweep's workload, and after
// every measured step refits the engine's step costs to the steps measured
// so far (calibrate.FitFrom, as knee calibrate --from does), so the next
// prediction is of this host, not of knee's defaults. What the costs
// cannot express (a front end, a cache, a scheduler knee does not model)
// is left as a residual: at each measured load the ratio of measured to
// simulated figures, interpolated in log-load between measured loads and
// held beyond them, multiplies the simulation. The curve then passes
// through the measured steps and the simulator gives its shape between.
//
// Read Model, then Refit and Predict.
package refit

import (
	"context"
	"fmt"
	"math"

	"github.com/knee-dev/knee/internal/calibrate"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// Model predicts steps with Runner (its Engine's cost is refitted) and
// states ranges: before any fit the held-out ranges of knee's defaults
// (Prior), after one the fit's own (twice its worst error on the measured
// steps, calibrate's stated range, kept within MinRange and MaxRange).
type Model struct {
	Runner *sweep.SimRunner
	// Prior are the ranges before any fit (the simulator's held-out
	// errors on hosts it has not seen).
	Prior sweep.Ranges
	// Seed makes the refit's simulations reproducible.
	Seed uint64
	// SimRequests bounds each refit reproduction (0: 200).
	SimRequests int

	base   simengine.Config
	ranges sweep.Ranges
	fitted bool
	resid  []residual // by load
	// Fit is the last refit's result (nil before the first).
	Fit *calibrate.FromResult
}

// MinRange is the narrowest relative range a refitted prediction states:
// a step's own noise at a few hundred requests. MaxRange is the widest: a
// fit whose worst error is wider than ×1.5 is no guide, and a range that
// wide would never see a measurement fall outside it.
const (
	MinRange = 0.10
	MaxRange = 0.5
)

// New makes a model of runner's engine with the prior ranges.
func New(runner *sweep.SimRunner, prior sweep.Ranges, seed uint64) *Model {
	return &Model{Runner: runner, Prior: prior, Seed: seed, base: runner.Engine, ranges: prior}
}

// Refit fits the step costs to the measured steps. A step with no
// completed request or no token counts cannot be fitted and is left out;
// with none left the prior stands.
func (m *Model) Refit(ctx context.Context, measured []sweep.Step) error {
	var obs []calibrate.Observation
	for _, s := range measured {
		conc, rate := 0.0, 0.0
		if s.Load.Kind == sweep.Concurrency {
			conc = s.Load.Value
		} else {
			rate = s.Load.Value
		}
		o, err := calibrate.ObservationOf(s.Load.String(), s.Summary, conc, rate)
		if err != nil {
			continue
		}
		obs = append(obs, o)
	}
	if len(obs) == 0 {
		return nil
	}
	n := m.SimRequests
	if n == 0 {
		n = 200
	}
	res, err := calibrate.FitFrom(ctx, calibrate.FromConfig{Engine: m.base, Observations: obs, SimRequests: n, Seed: m.Seed})
	if err != nil {
		return fmt.Errorf("refit to %d measured steps: %w", len(obs), err)
	}
	cost := res.Fit.Cost
	m.Runner.Engine.Cost = &cost
	m.Fit, m.fitted = res, true
	r := res.Range
	m.ranges = sweep.Ranges{TTFT: rangeOr(r.TTFTMax), TPOT: rangeOr(r.TPOTMax), Throughput: rangeOr(r.TPSMax)}
	m.resid = m.resid[:0]
	for _, s := range measured {
		if s.Summary.Completed == 0 {
			continue
		}
		p, err := m.Runner.Run(ctx, s.Load)
		if err != nil {
			return err
		}
		m.resid = append(m.resid, residual{load: s.Load.Value,
			tps:  ratio(s.Summary.OutputTokenThroughputTPS, p.Summary.OutputTokenThroughputTPS),
			rps:  ratio(s.Summary.RequestThroughputRPS, p.Summary.RequestThroughputRPS),
			ttft: ratio(s.Summary.TTFT.P95, p.Summary.TTFT.P95),
			tpot: ratio(s.Summary.TPOT.P50, p.Summary.TPOT.P50),
			e2e:  ratio(s.Summary.E2E.P95, p.Summary.E2E.P95)})
	}
	return nil
}

// residual is measured ÷ simulated at one measured load, per figure.
type residual struct{ load, tps, rps, ttft, tpot, e2e float64 }

// ratio is a/b, 1 where either is missing.
func ratio(a, b float64) float64 {
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return 1
	}
	return a / b
}

// residualAt interpolates the residuals in log-load (geometric in the
// ratios), holding the nearest beyond the measured loads.
func (m *Model) residualAt(load float64) residual {
	rs := m.resid
	if len(rs) == 0 {
		return residual{load: load, tps: 1, rps: 1, ttft: 1, tpot: 1, e2e: 1}
	}
	if load <= rs[0].load {
		return rs[0]
	}
	for i := 1; i < len(rs); i++ {
		if load <= rs[i].load {
			a, b := rs[i-1], rs[i]
			w := math.Log(load/a.load) / math.Log(b.load/a.load)
			mix := func(x, y float64) float64 { return math.Exp((1-w)*math.Log(x) + w*math.Log(y)) }
			return residual{load: load, tps: mix(a.tps, b.tps), rps: mix(a.rps, b.rps), ttft: mix(a.ttft, b.ttft), tpot: mix(a.tpot, b.tpot), e2e: mix(a.e2e, b.e2e)}
		}
	}
	return rs[len(rs)-1]
}

// scale multiplies a distribution's figures.
func scale(d *stats.Dist, f float64) {
	d.Mean, d.P50, d.P90, d.P95, d.P99, d.P999, d.Max = d.Mean*f, d.P50*f, d.P90*f, d.P95*f, d.P99*f, d.P999*f, d.Max*f
}

// rangeOr is a stated range within MinRange and MaxRange (MinRange when
// the fit had no such figure).
func rangeOr(v float64) float64 {
	if math.IsNaN(v) {
		return MinRange
	}
	return min(max(v, MinRange), MaxRange)
}

// Predict simulates the step at load.
func (m *Model) Predict(ctx context.Context, load sweep.Load) (sweep.Prediction, error) {
	s, err := m.Runner.Run(ctx, load)
	if err != nil {
		return sweep.Prediction{}, err
	}
	r := m.residualAt(load.Value)
	sum := &s.Summary
	sum.OutputTokenThroughputTPS *= r.tps
	sum.RequestThroughputRPS *= r.rps
	scale(&sum.TTFT, r.ttft)
	scale(&sum.TPOT, r.tpot)
	scale(&sum.ITL, r.tpot)
	scale(&sum.E2E, r.e2e)
	return sweep.Prediction{Step: s, Ranges: m.ranges}, nil
}

// PriorRanges are the simulator's held-out ranges for gpu and model
// (widened where knee has no source on them), as relative ranges: the
// wider side of each.
func PriorRanges(gpu, model string) sweep.Ranges {
	rel := func(metric string) float64 {
		r, ok := simengine.RangeIn(metric, simengine.HeldOutShare, simengine.Domain{GPU: gpu, Model: model})
		if !ok {
			return 0.5
		}
		return max(r.High-1, 1-r.Low, MinRange)
	}
	return sweep.Ranges{TTFT: rel("ttft"), TPOT: rel("tpot"), Throughput: rel("throughput")}
}

// Profile is the last refit's step costs as a cost profile (the format
// knee calibrate writes and knee sim, serve and plan read with --profile),
// target naming what was measured; false before any fit. The residuals
// are not in it: a profile holds step costs only, so knee sim with it
// reproduces the measured steps within the fit's stated range (Fit.Range),
// not exactly.
func (m *Model) Profile(target string) (calibrate.Profile, bool) {
	if m.Fit == nil {
		return calibrate.Profile{}, false
	}
	p := calibrate.NewProfileFrom(m.base, target, m.Fit)
	r := m.Fit.Range
	p.Note = fmt.Sprintf("fitted by knee sweep --guided to its %d measured steps; stated range (twice the worst error on them): TTFT ±%.0f%%, TPOT ±%.0f%%, throughput ±%.0f%%",
		len(m.Fit.Fitted), 100*r.TTFTMax, 100*r.TPOTMax, 100*r.TPSMax)
	return p, true
}
