package sweep

import (
	"fmt"
	"math"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// A sweep over a traffic mix (--mix) judges every class at every step: a
// step is SLO-safe only when the overall figures and every class hold,
// each class against the run's objectives and its own.

// ClassStep is one traffic class's figures and verdicts at one step.
type ClassStep struct {
	Name    string        `json:"name"`
	Summary stats.Summary `json:"summary"`
	SLOMet  bool          `json:"slo_met"`
	SLOs    []Check       `json:"slos,omitempty"`
	// Own are the class's own objectives (the mix file's), in canonical
	// form; it is judged by the run's objectives and these.
	Own []string `json:"own_slos,omitempty"`
}

// Classes are a mix's classes as a sweep measures them: names in the
// file's order (the order every report lists them in) and each one's own
// objectives.
type Classes struct {
	Names []string
	Own   map[string]slo.Set
}

// ClassAccumulator sums one step's records per class.
type ClassAccumulator struct {
	c   *Classes
	acc map[string]*stats.Accumulator
}

// Accumulate starts one step's per-class figures; opts are the step's
// (its offered rate is the whole step's and is not copied to classes),
// set the run's objectives, which make each class's goodput with its own.
// A nil Classes gives a nil accumulator, which accepts and returns nothing.
func (c *Classes) Accumulate(opts stats.Options, set slo.Set) *ClassAccumulator {
	if c == nil || len(c.Names) == 0 {
		return nil
	}
	a := &ClassAccumulator{c: c, acc: map[string]*stats.Accumulator{}}
	opts.Series, opts.OfferedRateRPS = false, 0
	for _, n := range c.Names {
		objs := append(append(slo.Set{}, set...), c.Own[n]...)
		o := opts
		o.Good = nil
		if len(objs) > 0 {
			o.Good = objs.Good
		}
		a.acc[n] = stats.NewAccumulator(o)
	}
	return a
}

// Summarize is a measured step's classes from its records (nil without
// classes); step is the step's own summary.
func (c *Classes) Summarize(recs []record.Request, opts stats.Options, set slo.Set, step *stats.Summary) []ClassStep {
	acc := c.Accumulate(opts, set)
	for i := range recs {
		acc.Add(&recs[i])
	}
	return acc.Steps(step)
}

// Add counts r in its class; records of no class of the mix (probes) are
// left out.
func (a *ClassAccumulator) Add(r *record.Request) {
	if a == nil {
		return
	}
	if acc := a.acc[r.Class]; acc != nil {
		acc.Add(r)
	}
}

// Steps are the classes' figures in the mix's order, not yet judged.
// Rates are over the whole step's measured span (step's DurationS), not
// each class's own first-to-last request, so the classes' rates add up to
// the step's.
func (a *ClassAccumulator) Steps(step *stats.Summary) []ClassStep {
	if a == nil {
		return nil
	}
	out := make([]ClassStep, 0, len(a.c.Names))
	for _, n := range a.c.Names {
		sum := a.acc[n].Summary()
		overStep(&sum, step.DurationS)
		out = append(out, ClassStep{Name: n, Summary: sum, Own: Objectives(a.c.Own[n])})
	}
	return out
}

// overStep restates a class's rates over the step's span d (seconds).
func overStep(s *stats.Summary, d float64) {
	if !(d > 0) {
		return
	}
	s.RatesOver(d)
	s.DurationS = d
}

// judgeClasses judges each class of s against set and its own objectives,
// and makes the step met only when every class is.
func judgeClasses(s *Step, set slo.Set) {
	for i := range s.Classes {
		c := &s.Classes[i]
		own, _ := slo.ParseAll(c.Own) // written from parsed objectives
		c.SLOs, c.SLOMet = nil, true
		for _, r := range append(append(slo.Set{}, set...), own...).Evaluate(c.Summary) {
			c.SLOs = append(c.SLOs, Check{Objective: r.Objective.String(), Value: r.Value, Met: r.Met, NoData: r.NoData})
			c.SLOMet = c.SLOMet && r.Met
		}
		s.SLOMet = s.SLOMet && c.SLOMet
	}
	// With no run-wide objective the step's goodput is its classes': the
	// requests meeting their own class's objectives, per second.
	if len(set) == 0 && s.Summary.GoodputRPS == nil {
		var rps float64
		var good int
		judged := false
		for _, c := range s.Classes {
			if c.Summary.GoodputRPS != nil {
				rps, judged = rps+*c.Summary.GoodputRPS, true
			}
			if c.Summary.GoodRequests != nil {
				good += *c.Summary.GoodRequests
			}
		}
		if judged {
			s.Summary.GoodputRPS, s.Summary.GoodRequests = &rps, &good
		}
	}
}

// classesJudged reports whether any step's classes carry objectives.
func classesJudged(steps []Step) bool {
	for i := range steps {
		for _, c := range steps[i].Classes {
			if len(c.SLOs) > 0 {
				return true
			}
		}
	}
	return false
}

// classObjectives lists each class's own objectives as "class: objective"
// (from the first step that has classes).
func classObjectives(steps []Step) []string {
	for i := range steps {
		if len(steps[i].Classes) == 0 {
			continue
		}
		var out []string
		for _, c := range steps[i].Classes {
			for _, o := range c.Own {
				out = append(out, c.Name+": "+o)
			}
		}
		return out
	}
	return nil
}

// BreaksFirst is the class of a mix that fails its objectives at the
// lowest load of a sweep: what failed and its measured value there.
type BreaksFirst struct {
	Class     string  `json:"class"`
	Load      float64 `json:"load"`
	Objective string  `json:"objective"`
	// Value is the measured value in the objective's unit (ms, or a 0..1
	// rate); NoData: the class completed no request there.
	Value  float64 `json:"value"`
	NoData bool    `json:"no_data,omitempty"`
	// Also lists the other classes failing at the same load (empty: the
	// class broke alone).
	Also   []string `json:"also,omitempty"`
	Reason string   `json:"reason"`
}

// findBreaksFirst finds the class failing at the lowest load of steps
// (sorted by load); nil when no class fails. Where several fail at that
// load, the one furthest past its objective is named, the others listed.
func findBreaksFirst(steps []Step) *BreaksFirst {
	for i := range steps {
		s := &steps[i]
		var b *BreaksFirst
		worst := -1.0
		var failing []string
		for _, c := range s.Classes {
			if c.SLOMet {
				continue
			}
			failing = append(failing, c.Name)
			for _, ch := range c.SLOs {
				if ch.Met {
					continue
				}
				if x := excess(ch); x > worst {
					worst = x
					b = &BreaksFirst{Class: c.Name, Load: s.Load.Value, Objective: ch.Objective, Value: ch.Value, NoData: ch.NoData}
				}
			}
		}
		if b == nil {
			continue
		}
		for _, n := range failing {
			if n != b.Class {
				b.Also = append(b.Also, n)
			}
		}
		measured := "measured " + checkValue(Check{Objective: b.Objective, Value: b.Value})
		if b.NoData {
			measured = "no completed request"
		}
		b.Reason = fmt.Sprintf("class %s fails first, at %s: %s (%s)", b.Class, s.Load, b.Objective, measured)
		if len(b.Also) == 0 {
			b.Reason += "; every other class still holds there"
		} else {
			b.Reason += "; " + strings.Join(b.Also, ", ") + " fail(s) at the same load"
		}
		return b
	}
	return nil
}

// excess is how far a failed check is past its objective (the measured
// value over the threshold, or the inverse for a floor); no data is
// furthest of all.
func excess(c Check) float64 {
	if c.NoData {
		return math.Inf(1)
	}
	o, err := slo.Parse(c.Objective)
	if err != nil || o.Threshold == 0 || c.Value == 0 {
		return 0
	}
	if strings.HasPrefix(o.Op, ">") {
		return o.Threshold / c.Value
	}
	return c.Value / o.Threshold
}
