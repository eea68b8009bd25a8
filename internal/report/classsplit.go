package report

import (
	"cmp"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// Stored runs keep a mix's classes in the file's order and their own
// objectives, so a report rebuilt from the records lists them as the run
// did (records are stored in completion order).
const (
	ConfigClasses   = "classes"
	ConfigClassSLOs = "class_slos"
)

// OverRun restates each class's rates (requests, tokens, goodput) over
// the run's measured window of d seconds rather than the class's own first
// to last request, as a sweep's steps do, so the classes' rates add up to
// the run's; objectives are judged again on the restated figures.
func OverRun(classes []Class, d float64) {
	if !(d > 0) {
		return
	}
	for i := range classes {
		s := &classes[i].Summary
		s.RatesOver(d)
		var objs slo.Set
		for _, r := range classes[i].SLOs {
			objs = append(objs, r.Objective)
		}
		if len(objs) > 0 {
			classes[i].SLOs = objs.Evaluate(*s)
		}
	}
}

// StoredClasses reads a stored run's configuration back: the mix's class
// order and each class's own objectives (nil without a mix).
func StoredClasses(cfg [][2]string) (order []string, own map[string]slo.Set) {
	for _, kv := range cfg {
		switch kv[0] {
		case ConfigClasses:
			for _, p := range strings.Split(kv[1], ",") {
				if p = strings.TrimSpace(p); p != "" {
					order = append(order, p)
				}
			}
		case ConfigClassSLOs:
			own = map[string]slo.Set{}
			for _, item := range strings.Split(kv[1], "; ") {
				name, expr, ok := strings.Cut(item, ": ")
				if o, err := slo.Parse(expr); ok && err == nil {
					own[name] = append(own[name], o)
				}
			}
		}
	}
	return order, own
}

// ClassSummaries splits recs by class: the overall records (probes left
// out) and every class's summary with its objectives (the run's own, and a
// class's own in classSLOs), in order first and then any other class seen.
// It returns recs itself and no classes for a run of one class.
func ClassSummaries(recs []record.Request, opts stats.Options, objectives slo.Set, classSLOs map[string]slo.Set, order []string) (overall []record.Request, classes []Class) {
	names, byClass := SplitClasses(recs)
	if names == nil {
		return recs, nil
	}
	// A mix's classes in the file's order, a class with no request too.
	if len(order) > 0 {
		rest := names
		names = append([]string{}, order...)
		for _, n := range rest {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	classOpts := opts
	classOpts.Series = false
	for _, name := range names {
		objs := append(append(slo.Set{}, objectives...), classSLOs[name]...)
		o := classOpts
		if len(objs) > 0 {
			o.Good = objs.Good
		}
		// In request order: sums of floats depend on their order, and the
		// live run (records as they ended) and knee report (as stored)
		// must print the same figures.
		slices.SortStableFunc(byClass[name], func(a, b record.Request) int { return cmp.Compare(a.ID, b.ID) })
		sum := stats.Summarize(byClass[name], o)
		probe := name == record.ProbeClass
		classes = append(classes, Class{Name: name, Summary: sum, SLOs: objs.Evaluate(sum), Probe: probe})
		if !probe {
			overall = append(overall, byClass[name]...)
		}
	}
	if len(overall) != len(recs) {
		return overall, classes
	}
	return recs, classes
}

// ClassTally is ClassSummaries fed one record at a time, as a run's
// records finish and in any order, without keeping them: each class's
// figures build in an accumulator of bounded size. Its classes come out
// in the order ClassSummaries gives for the records sorted by ID. Not safe
// for concurrent use.
type ClassTally struct {
	opts       stats.Options
	objectives slo.Set
	own        map[string]slo.Set
	order      []string
	acc        map[string]*stats.Accumulator
	firstID    map[string]int64 // each class's lowest request ID: its place among the classes
	probe      bool
}

// NewClassTally is an empty tally with ClassSummaries' arguments.
func NewClassTally(opts stats.Options, objectives slo.Set, classSLOs map[string]slo.Set, order []string) *ClassTally {
	opts.Series = false
	return &ClassTally{opts: opts, objectives: objectives, own: classSLOs, order: order,
		acc: map[string]*stats.Accumulator{}, firstID: map[string]int64{}}
}

func (t *ClassTally) objectivesOf(name string) slo.Set {
	return append(append(slo.Set{}, t.objectives...), t.own[name]...)
}

func (t *ClassTally) accumulator(name string) *stats.Accumulator {
	a := t.acc[name]
	if a == nil {
		o := t.opts
		if objs := t.objectivesOf(name); len(objs) > 0 {
			o.Good = objs.Good
		}
		a = stats.NewAccumulator(o)
		t.acc[name] = a
	}
	return a
}

// Add counts r in its class.
func (t *ClassTally) Add(r *record.Request) {
	name := r.Class
	if name == "" {
		name = MainClass
	}
	if name == record.ProbeClass {
		t.probe = true
	} else if id, ok := t.firstID[name]; !ok || r.ID < id {
		t.firstID[name] = r.ID
	}
	t.accumulator(name).Add(r)
}

// Classes are the summaries ClassSummaries returns for the records added
// (nil for a run of one class).
func (t *ClassTally) Classes() []Class {
	names := make([]string, 0, len(t.firstID)+1)
	for n := range t.firstID {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(t.firstID[a], t.firstID[b]) })
	if t.probe {
		names = append(names, record.ProbeClass)
	}
	if len(names) == 0 || len(names) == 1 && names[0] == MainClass {
		return nil
	}
	if len(t.order) > 0 {
		rest := names
		names = append([]string{}, t.order...)
		for _, n := range rest {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	classes := make([]Class, 0, len(names))
	for _, name := range names {
		sum := t.accumulator(name).Summary()
		classes = append(classes, Class{Name: name, Summary: sum, SLOs: t.objectivesOf(name).Evaluate(sum), Probe: name == record.ProbeClass})
	}
	return classes
}
