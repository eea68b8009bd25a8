package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/sweep"
)

// guidedSteps are a guided sweep's steps in the order they were measured
// (the result's log, or a stored sweep's steps, which keep their own);
// nil when the sweep was not guided.
func guidedSteps(r *sweep.Result) []sweep.GuidedStep {
	var out []sweep.GuidedStep
	if r.Guided != nil {
		for _, g := range r.Guided.Steps {
			out = append(out, *g)
		}
		return out
	}
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
	// A mix: each class's objectives, from the first step that predicted
	// them.
	type classCol struct {
		class string
		j     int
	}
	var classCols []classCol
	for _, s := range steps {
		if s.Predicted != nil && len(s.Predicted.Classes) > 0 {
			for _, c := range s.Predicted.Classes {
				for j, f := range c.SLOs {
					classCols = append(classCols, classCol{c.Name, j})
					header = append(header, "predicted "+c.Name+": "+f.Name, "measured")
				}
			}
			break
		}
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
		for _, cc := range classCols {
			var f *sweep.Figure
			if s.Predicted != nil {
				if k := slices.IndexFunc(s.Predicted.Classes, func(c sweep.ClassFigures) bool { return c.Name == cc.class }); k >= 0 && cc.j < len(s.Predicted.Classes[k].SLOs) {
					f = &s.Predicted.Classes[k].SLOs[cc.j]
				}
			}
			m := none
			if k := slices.IndexFunc(s.Measured.Classes, func(c sweep.MeasuredClass) bool { return c.Name == cc.class }); k >= 0 && cc.j < len(s.Measured.Classes[k].SLOs) {
				m = fnum(s.Measured.Classes[k].SLOs[cc.j], 1)
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

// guidedSeries are a guided sweep's model on its charts: the curve the
// last refit drew over the grid, as a band (its range) around a dashed
// line, and the prediction made before each step, as a point with its
// range at the step's load (for TTFT when p95 TTFT is an SLO). None
// when the sweep was not guided or no refit drew a curve.
func guidedSeries(r *sweep.Result) (tput, ttft []chartSeries) {
	steps := guidedSteps(r)
	var curve []sweep.CurvePoint
	after := 0
	for _, s := range steps {
		if s.Curve != nil {
			curve, after = s.Curve, s.Order // the latest refit's
		}
	}
	if curve != nil {
		var xs, t, tl, th, f, fl, fh []float64
		for _, c := range curve {
			xs = append(xs, c.Load)
			t, tl, th = append(t, c.Throughput.Value), append(tl, c.Throughput.Low), append(th, c.Throughput.High)
			f, fl, fh = append(f, c.TTFTP95.Value), append(fl, c.TTFTP95.Low), append(fh, c.TTFTP95.High)
		}
		label := fmt.Sprintf("refitted model after step %d (a prediction, with its range)", after)
		tput = append(tput, chartSeries{label: label, color: colorGrey, xs: xs, ys: t, lo: tl, hi: th, dashed: true})
		ttft = append(ttft, chartSeries{label: label, color: colorGrey, xs: xs, ys: f, lo: fl, hi: fh, dashed: true, skipZero: true})
	}
	ttftSLO := slices.IndexFunc(r.SLOs, func(o string) bool { return strings.HasPrefix(strings.ReplaceAll(o, " ", ""), "p95(ttft)") })
	var px, pt, pl, ph, fx, fv, fl, fh []float64
	for _, s := range steps {
		if s.Predicted == nil {
			continue
		}
		px = append(px, s.Load.Value)
		pt, pl, ph = append(pt, s.Predicted.Throughput.Value), append(pl, s.Predicted.Throughput.Low), append(ph, s.Predicted.Throughput.High)
		if ttftSLO >= 0 && ttftSLO < len(s.Predicted.SLOs) {
			f := s.Predicted.SLOs[ttftSLO]
			fx, fv, fl, fh = append(fx, s.Load.Value), append(fv, f.Value), append(fl, f.Low), append(fh, f.High)
		}
	}
	const label = "predicted before the step (with its range)"
	if px != nil {
		tput = append(tput, chartSeries{label: label, color: colorTeal, xs: px, ys: pt, lo: pl, hi: ph, bars: true})
	}
	if fx != nil {
		ttft = append(ttft, chartSeries{label: label, color: colorTeal, xs: fx, ys: fv, lo: fl, hi: fh, bars: true})
	}
	return tput, ttft
}

// guidedUsed says what a guided sweep spent and how it chose its steps.
func guidedUsed(r *sweep.Result) string {
	var reqs int64
	var secs float64
	steps := guidedSteps(r)
	for _, s := range steps {
		reqs += s.Measured.Requests
		secs += s.Measured.ElapsedS
	}
	out := fmt.Sprintf("%d steps, %d requests, %.1f minutes measured. Each row: the model's prediction before the step (its range) and the measurement; the charts draw the model refitted to every step as a band between the measured steps (a prediction, never a measurement).",
		len(steps), reqs, secs/60)
	if r.Guided != nil && r.Guided.Fallback != "" {
		out += " " + r.Guided.Fallback + "."
	}
	return out
}
