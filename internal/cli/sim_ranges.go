package cli

import (
	"fmt"
	"strings"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// heldOutRanges gives a simulated summary's headline figures the ranges
// of knee's held-out errors (simengine.HeldOutRanges). They describe
// knee's defaults on hosts it has not seen: a run on a calibrated profile
// (--profile) is a fit to that host and gets none. They depend on the
// run's GPU, model and batch (simengine.RangeIn); the basis says why one was
// widened.
func heldOutRanges(s *stats.Summary, calibrated bool, gpu, model string, replicas int) *report.PredictionRanges {
	if calibrated {
		return nil
	}
	d := simengine.DomainOf(gpu, model, s.RequestThroughputRPS, s.E2E.Mean, replicas)
	return report.PredictionsFor(s, func(field string) (float64, float64, bool) {
		r, ok := simengine.RangeIn(field, simengine.HeldOutShare, d)
		return r.Low, r.High, ok
	}, simengine.HeldOutShare, simengine.RangeBasisIn(d))
}

// addSweepRanges gives a simulated sweep's knee and SLO-safe point their
// held-out ranges, in JSON and as a note each.
func addSweepRanges(res *sweep.Result, calibrated bool, gpu, model string, replicas int) {
	for _, pt := range []struct {
		name, label string
		p           sweep.Point
	}{{"knee", "the knee", res.Knee}, {"slo_safe", "the SLO-safe point", res.SLOSafe}} {
		if !pt.p.Found() || pt.p.Index >= len(res.Steps) {
			continue
		}
		sum := res.Steps[pt.p.Index].Summary
		pr := heldOutRanges(&sum, calibrated, gpu, model, replicas)
		if pr == nil || len(pr.Figures) == 0 {
			continue
		}
		var parts []string
		for _, f := range pr.Figures {
			res.Ranges = append(res.Ranges, sweep.PredictionRange{Point: pt.name, Metric: f.Metric, Value: f.Value, Low: f.Low, High: f.High, Unit: f.Unit})
			parts = append(parts, f.String())
		}
		// The step's energy figures carry their own ranges
		// (energyRanges); the note shows them beside the latency's.
		if e := res.Steps[pt.p.Index].Energy; e != nil && e.Ranges != nil && e.JPerOutputToken != nil && e.Ranges.JPerOutputToken != nil {
			parts = append(parts, report.PredictionFigure{Label: "energy per output token", Value: *e.JPerOutputToken,
				Low: e.Ranges.JPerOutputToken.Low, High: e.Ranges.JPerOutputToken.High, Unit: "J"}.String())
		}
		res.Notes = append(res.Notes, fmt.Sprintf("at %s (%g): %s (%s)", pt.label, pt.p.Load, strings.Join(parts, "; "), pr.Basis))
	}
}

// energyRanges gives a simulated run's power-model figures their ranges
// (energy.Figures.WithRanges): energy per token's from the power model's
// held-out errors, the throughput's from knee's held-out latency errors.
// A calibrated profile's throughput is a fit (no range), and an open loop
// the server kept up with has its load's throughput: then $ per token has
// none and power only energy per token's.
func energyRanges(e *energy.Figures, s *stats.Summary, calibrated bool, gpu simengine.GPU, model string, replicas int) {
	if e == nil {
		return
	}
	d := simengine.DomainOf(gpu.Name, model, s.RequestThroughputRPS, s.E2E.Mean, replicas)
	keptUp := s.OfferedRateRPS > 0 && s.RequestThroughputRPS >= 0.9*s.OfferedRateRPS
	r, ok := simengine.RangeIn("output_token_throughput_tps", simengine.HeldOutShare, d)
	e.WithRanges(r.Low, r.High, ok && !calibrated && !keptUp, gpu.Name, gpu.TDPWatts)
}
