package report

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/knee-dev/knee/internal/sweep"
)

// guidedSteps are a guided sweep's steps in the order they were measured
// (the result's log, or a stored sweep's steps, which keep their own);
// nil when the sweep was not guided.
func guidedSteps(r *sweep.Result) []sweep.GuidedStep {
	if r.Guided != nil {
		return r.Guided.Steps
	}
	var out []sweep.GuidedStep
	for i := range r.Steps {
		if g := r.Steps[i].Guided; g != nil {
			out = append(out, *g)
		}
	}
	slices.SortStableFunc(out, func(a, b sweep.GuidedStep) int { return a.Order - b.Order })
	return out
}

// guidedTable is the guided sweep's loop: per step, in measuring order,
// what the model predicted before it (value and range) and what was
// measured, and whether the measurement fell in the range.
func guidedTable(r *sweep.Result) (header []string, rows [][]string) {
	steps := guidedSteps(r)
	if len(steps) == 0 {
		return nil, nil
	}
	unit := "tok/s"
	if r.KneeMetric == sweep.MetricThroughputRPS {
		unit = "req/s"
	}
	header = []string{"#", sweep.LoadColumn(r.LoadKind), "predicted " + unit, "measured"}
	for _, o := range r.SLOs {
		header = append(header, "predicted "+o, "measured")
	}
	header = append(header, "in range", "why")
	for _, s := range steps {
		row := []string{strconv.Itoa(s.Order), strconv.FormatFloat(s.Load.Value, 'g', 6, 64)}
		figure := func(f *sweep.Figure) string {
			if f == nil {
				return none
			}
			return fmt.Sprintf("%s (%s–%s)", fnum(f.Value, 1), fnum(f.Low, 1), fnum(f.High, 1))
		}
		var tput *sweep.Figure
		if s.Predicted != nil {
			tput = &s.Predicted.Throughput
		}
		row = append(row, figure(tput), fnum(s.Measured.Throughput, 1))
		for j := range r.SLOs {
			var f *sweep.Figure
			if s.Predicted != nil && j < len(s.Predicted.SLOs) {
				f = &s.Predicted.SLOs[j]
			}
			m := none
			if j < len(s.Measured.SLOs) {
				m = fnum(s.Measured.SLOs[j], 1)
			}
			row = append(row, figure(f), m)
		}
		in := none
		if s.InRange != nil {
			in = map[bool]string{true: "yes", false: "no"}[*s.InRange]
		}
		rows = append(rows, append(row, in, s.Why))
	}
	return header, rows
}
