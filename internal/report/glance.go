package report

import (
	"fmt"
	"strings"
)

// glance lays a run out as the one screen a person reads first: what ran,
// the SLO verdicts and goodput, throughput, latency percentiles, errors and
// warnings. Everything else is the detail that build lays out.
func glance(r *Run) []section {
	s := &r.Summary
	var out []section

	head := section{}
	add := head.adder()
	if r.Step != "" {
		add("summary of", "step "+r.Step)
	}
	addWhatRan(add, r)
	shape := fmt.Sprintf("measured mean input %s, output %s tokens per request",
		fnum(s.Shape.InputTokens.Mean, 0), fnum(s.Shape.OutputTokens.Mean, 0))
	if s.Completed == 0 {
		shape = "no completed request"
	}
	if r.Workload != "" {
		shape = r.Workload + "; " + shape
	}
	add("shape", shape)
	add("label", r.Label)
	if r.Status != "" && r.Status != "complete" {
		add("status", r.Status)
	}
	window := fmt.Sprintf("%s s measured", fnum(s.DurationS, 2))
	if n := s.Window.ExcludedWarmup + s.Window.ExcludedCooldown; n > 0 {
		window += fmt.Sprintf(" (%d warm-up, %d cool-down requests excluded)", s.Window.ExcludedWarmup, s.Window.ExcludedCooldown)
	}
	add("window", window)
	out = append(out, head)

	if len(r.SLOs) > 0 {
		// No header row: the marks and verdicts say what the columns are.
		sl := section{title: "SLOs", table: &table{rows: sloRows(r), left: 4}}
		if s.GoodputRPS != nil {
			g := fnum(*s.GoodputRPS, 2) + " req/s"
			if s.GoodRequests != nil {
				g += fmt.Sprintf(" (%d of %d completed requests met every SLO)", *s.GoodRequests, s.Completed)
			}
			sl.bullets = []string{"goodput " + g}
		}
		out = append(out, sl)
	}

	tp := section{title: "Throughput"}
	tp.kv = [][2]string{
		{"requests", fmt.Sprintf("%d measured · %d completed · %d failed (%s) · %d rejected (%s)",
			s.Requests, s.Completed, s.Errors, pct(s.ErrorRate), s.Rejected, pct(s.RejectionRate))},
		{"rate", fmt.Sprintf("%s req/s · output %s tok/s · input %s tok/s",
			fnum(s.RequestThroughputRPS, 2), fnum(s.OutputTokenThroughputTPS, 1), fnum(s.InputTokenThroughputTPS, 1))},
	}
	if s.Items > 0 { // embeddings or rerank: nothing generated, items answered
		tp.kv[1][1] = fmt.Sprintf("%s req/s · %s items/s · input %s tok/s",
			fnum(s.RequestThroughputRPS, 2), fnum(s.ItemThroughputPS, 1), fnum(s.InputTokenThroughputTPS, 1))
	}
	if e := r.Energy; e != nil {
		tp.kv = append(tp.kv, [2]string{"energy", e.Glance()})
	}
	out = append(out, tp)

	out = append(out, latencySection(r, true))
	// A prediction is read with its range, and a mix by its classes: both
	// belong on the first screen.
	if r.Predictions != nil && len(r.Predictions.Figures) > 0 {
		out = append(out, r.Predictions.section())
	}
	if len(r.Classes) > 0 {
		out = append(out, classSection(r.Classes))
	}

	if len(s.ErrorKinds) > 0 {
		var kinds []string
		for _, k := range sortedKeys(s.ErrorKinds) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, s.ErrorKinds[k]))
		}
		errs := section{title: "Errors", bullets: []string{strings.Join(kinds, " · ")}}
		if len(r.ErrorMessages) > 0 {
			m := r.ErrorMessages[0]
			errs.bullets = append(errs.bullets, fmt.Sprintf("most common: %d× %s: %s", m.Count, m.Kind, m.Message))
		}
		out = append(out, errs)
	}

	if w := warnings(r); len(w) > 0 {
		out = append(out, section{title: "Warnings", bullets: w})
	}
	return out
}

// warnings are the notes and summary warnings that say a figure may mislead.
func warnings(r *Run) []string {
	var w []string
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "warning") || strings.HasPrefix(n, "interrupted") || strings.HasPrefix(n, "stopped") {
			w = append(w, n)
		}
	}
	return append(w, r.Summary.Warnings...)
}
