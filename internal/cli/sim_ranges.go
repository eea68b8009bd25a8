package cli

import (
	"fmt"
	"strings"

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
		res.Notes = append(res.Notes, fmt.Sprintf("at %s (%g): %s (%s)", pt.label, pt.p.Load, strings.Join(parts, "; "), pr.Basis))
	}
}
