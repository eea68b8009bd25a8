// Package refit is the simulator as a guided sweep's model (sweep.Model):
// it predicts a step by simulating it with the sweep's workload, and after
// every measured step refits the engine's step costs to the steps measured
// so far (calibrate.FitFrom, as knee calibrate --from does), so the next
// prediction is of this host, not of knee's defaults.
//
// Read Model, then Refit and Predict.
package refit

import (
	"context"
	"fmt"
	"math"

	"github.com/knee-dev/knee/internal/calibrate"
	"github.com/knee-dev/knee/internal/simengine"
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
	return nil
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
