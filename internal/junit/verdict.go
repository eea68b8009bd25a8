package junit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/compare"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// Problem types, so a reader can tell an objective missed from a run that
// measured nothing.
const (
	TypeSLO         = "slo_not_met"
	TypeNoData      = "cannot_judge"
	TypeMeasurement = "measurement_failed"
	TypeInterrupted = "interrupted"
	TypeRegression  = "regression"
	TypeAboveSafe   = "above_slo_safe_point"
	TypeUntested    = "not_judged"
)

// Run is what a bench or sim run's verdicts need.
type Run struct {
	Kind    string // bench, sim: the classname is knee.<kind>
	ID      string // stored run id ("" when not stored)
	Version string
	Target  string // already redacted of credentials
	Model   string
	Load    string
	Config  [][2]string // resolved configuration, redacted
	Start   time.Time
	Summary stats.Summary
	SLOs    []slo.Result
	// Failure says why the run measured nothing worth its figures (every
	// request failed, mostly errors, nothing in the window): the run exits
	// 1 and its "run" case fails.
	Failure     string
	Interrupted bool
}

// RunProperties are the properties every suite of a run carries.
func RunProperties(kind, id, version, target, model, load string, config [][2]string) [][2]string {
	p := [][2]string{{"knee.kind", kind}}
	for _, kv := range [][2]string{{"knee.run_id", id}, {"knee.version", version}, {"knee.target", target},
		{"knee.model", model}, {"knee.load", load}} {
		if kv[1] != "" {
			p = append(p, kv)
		}
	}
	for _, kv := range config {
		p = append(p, [2]string{"config." + kv[0], kv[1]})
	}
	return p
}

// RunSuite is one suite for a run: a "run" case (failed when the run
// measured nothing worth its figures, an error when it was interrupted) and
// one case per SLO.
func RunSuite(r Run) Suite {
	class := "knee." + r.Kind
	s := Suite{
		Name: fmt.Sprintf("knee %s %s", r.Kind, r.Load), Timestamp: r.Start,
		Duration:   time.Duration(r.Summary.DurationS * float64(time.Second)),
		Properties: RunProperties(r.Kind, r.ID, r.Version, r.Target, r.Model, r.Load, r.Config),
	}
	s.Cases = append(s.Cases, runCase(class, r))
	for _, res := range r.SLOs {
		s.Cases = append(s.Cases, sloCase(class, res))
	}
	return s
}

// measured is a one-line account of what a run counted.
func measured(sum *stats.Summary) string {
	line := fmt.Sprintf("%d requests measured, %d completed, %d failed", sum.Requests, sum.Completed, sum.Errors)
	if sum.Requests > 0 {
		line += fmt.Sprintf(" (error rate %.2f%%)", 100*sum.ErrorRate)
	}
	return line
}

func runCase(class string, r Run) Case {
	c := Case{Name: "run", Classname: class, SystemOut: measured(&r.Summary)}
	switch {
	case r.Interrupted:
		c.Error = &Problem{Message: "interrupted before the run ended: the figures cover only what was measured before the stop",
			Type: TypeInterrupted, Text: c.SystemOut}
	case r.Failure != "":
		c.Failure = &Problem{Message: r.Failure, Type: TypeMeasurement, Text: c.SystemOut}
	}
	return c
}

func sloCase(class string, res slo.Result) Case {
	c := Case{Name: res.Objective.String(), Classname: class}
	switch {
	case res.NoData:
		c.Error = &Problem{Message: fmt.Sprintf("%s: cannot judge: no data (no completed request carried this metric)", res.Objective),
			Type: TypeNoData}
	case !res.Met:
		c.Failure = &Problem{Message: fmt.Sprintf("%s: measured %s, objective %s %s", res.Objective,
			res.Objective.Format(res.Value), res.Objective.Op, res.Objective.Format(res.Objective.Threshold)), Type: TypeSLO}
	default:
		c.SystemOut = fmt.Sprintf("measured %s, objective %s %s", res.Objective.Format(res.Value),
			res.Objective.Op, res.Objective.Format(res.Objective.Threshold))
	}
	return c
}

// SweepSuites are one suite per step (a case per SLO) and a verdict suite.
// A step above the SLO-safe point that misses an SLO is skipped with its
// values: the sweep succeeded in finding the limit there. With no safe point
// (the lowest load already fails, exit 3), every miss is a failure; a check
// that could not be judged is an error unless it lies above the safe point.
func SweepSuites(res *sweep.Result, props [][2]string, interrupted error) []Suite {
	var out []Suite
	safe := -1
	if res.SLOSafe.Found() {
		safe = res.SLOSafe.Index
	}
	for i := range res.Steps {
		st := &res.Steps[i]
		class := "knee.sweep." + strings.ReplaceAll(st.Load.Kind+"="+strconv.FormatFloat(st.Load.Value, 'g', 6, 64), ".", "_")
		s := Suite{Name: "knee sweep step " + st.Load.String(),
			Duration:   time.Duration(st.Summary.DurationS * float64(time.Second)),
			Properties: append(append([][2]string{}, props...), [2]string{"knee.step_load", st.Load.String()})}
		// A mix's classes are judged beside the step: "chat: p95(ttft)<150ms".
		checks := append([]sweep.Check{}, st.SLOs...)
		for _, cl := range st.Classes {
			for _, chk := range cl.SLOs {
				chk.Objective = cl.Name + ": " + chk.Objective
				checks = append(checks, chk)
			}
		}
		for _, chk := range checks {
			c := Case{Name: chk.Objective, Classname: class}
			value := fmt.Sprintf("measured %s", checkValue(chk))
			if _, obj, ok := strings.Cut(chk.Objective, ": "); ok {
				value = fmt.Sprintf("measured %s", checkValue(sweep.Check{Objective: obj, Value: chk.Value}))
			}
			switch {
			case chk.Met:
				c.SystemOut = value
			case safe >= 0 && i > safe:
				why := "not met"
				if chk.NoData {
					why = "no data"
				}
				c.Skipped = &Problem{Message: fmt.Sprintf("%s: %s at %s (%s), above the SLO-safe point %s: where the sweep found the limit",
					chk.Objective, why, st.Load, value, res.Steps[safe].Load), Type: TypeAboveSafe}
			case chk.NoData:
				c.Error = &Problem{Message: fmt.Sprintf("%s: cannot judge at %s: no data (no completed request carried this metric)", chk.Objective, st.Load),
					Type: TypeNoData}
			default:
				c.Failure = &Problem{Message: fmt.Sprintf("%s: %s at %s", chk.Objective, value, st.Load), Type: TypeSLO}
			}
			s.Cases = append(s.Cases, c)
		}
		if len(s.Cases) > 0 {
			out = append(out, s)
		}
	}
	verdict := Suite{Name: "knee sweep verdict", Properties: props}
	if res.Judged() {
		c := Case{Name: "slo_safe_point", Classname: "knee.sweep"}
		if res.SLOSafe.Found() {
			c.SystemOut = res.SLOSafe.Reason
		} else {
			all := append(append([]string{}, res.SLOs...), res.ClassSLOs...)
			c.Failure = &Problem{Message: "no measured load meets " + strings.Join(all, ", ") + ": " + res.SLOSafe.Reason, Type: TypeSLO}
		}
		verdict.Cases = append(verdict.Cases, c)
	}
	run := Case{Name: "sweep", Classname: "knee.sweep", SystemOut: "knee: " + res.Knee.Reason}
	if interrupted != nil {
		run.Error = &Problem{Message: fmt.Sprintf("stopped early: %v (only the steps measured before are judged)", interrupted), Type: TypeInterrupted}
	}
	verdict.Cases = append([]Case{run}, verdict.Cases...)
	return append(out, verdict)
}

// checkValue shows a step's measured value: latency checks are in ms, rate
// checks a fraction 0..1 (sweep.Check).
func checkValue(chk sweep.Check) string {
	if o, err := slo.Parse(chk.Objective); err == nil {
		return o.Format(chk.Value)
	}
	return strconv.FormatFloat(chk.Value, 'g', 4, 64)
}

// CompareSuite is one case per compared metric. With failOn "worse" a
// metric worse beyond noise fails; with "change" a better one fails too;
// with "none" nothing fails. A metric without enough data to judge is
// skipped with the reason: it is shown, not gated (compare exits 0 for it).
func CompareSuite(res *compare.Result, failOn string) Suite {
	s := Suite{Name: fmt.Sprintf("knee compare %s → %s", res.A, res.B),
		Properties: [][2]string{{"knee.kind", "compare"}, {"knee.run_a", res.A}, {"knee.run_b", res.B},
			{"knee.fail_on", failOn}, {"knee.method", res.Method}, {"knee.verdict", res.Verdict}}}
	for _, m := range res.Metrics {
		c := Case{Name: m.Name, Classname: "knee.compare"}
		line := compareLine(&m)
		gated := failOn == "worse" && m.Effect == "worse" || failOn == "change" && (m.Effect == "worse" || m.Effect == "better")
		switch {
		case gated:
			c.Failure = &Problem{Message: fmt.Sprintf("%s: %s beyond noise (--fail-on %s): %s", m.Label, m.Effect, failOn, line), Type: TypeRegression}
		case m.Effect == "untested":
			why := m.Note
			if why == "" {
				why = "not enough data to judge"
			}
			c.Skipped = &Problem{Message: fmt.Sprintf("%s: not judged (%s): %s", m.Label, why, line), Type: TypeUntested}
		default:
			c.SystemOut = fmt.Sprintf("%s: %s", m.Effect, line)
		}
		s.Cases = append(s.Cases, c)
	}
	return s
}

func compareLine(m *compare.Metric) string {
	num := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "–"
		}
		if m.Unit == "ratio" {
			return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
		}
		return strconv.FormatFloat(v, 'f', 2, 64) + " " + m.Unit
	}
	line := fmt.Sprintf("A %s, B %s", num(m.A), num(m.B))
	if m.CILow != nil && m.CIHigh != nil {
		line += fmt.Sprintf(", 95%% CI of B−A [%s, %s]", num(*m.CILow), num(*m.CIHigh))
	}
	return line
}
