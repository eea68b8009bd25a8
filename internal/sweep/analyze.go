package sweep

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Result is a whole sweep: the steps in load order, the knee, the SLO-safe
// point, and warnings about what the grid could not resolve. It is the
// documented JSON of knee sweep --json (docs/sweep.md).
type Result struct {
	LoadKind   string   `json:"load_kind"`   // concurrency or rate
	KneeMetric string   `json:"knee_metric"` // the throughput the knee was placed on: output_tps or throughput_rps
	SLOs       []string `json:"slos,omitempty"`
	Steps      []Step   `json:"steps"`
	Knee       Point    `json:"knee"`
	SLOSafe    Point    `json:"slo_safe"`
	Warnings   []string `json:"warnings,omitempty"`
	Notes      []string `json:"notes,omitempty"` // how the steps were made (source, auto-sweep stops)
	// Ranges, for a simulated sweep, are the knee's and the SLO-safe
	// point's headline figures with the range knee's held-out errors give
	// each (docs/validation.md).
	Ranges []PredictionRange `json:"prediction_ranges,omitempty"`
	// ClassSLOs are a mix's classes' own objectives ("class: objective"),
	// judged beside SLOs; BreaksFirst is the class failing at the lowest
	// load (nil: no mix, or no class failed).
	ClassSLOs   []string     `json:"class_slos,omitempty"`
	BreaksFirst *BreaksFirst `json:"breaks_first,omitempty"`
	// Guided is how a guided sweep chose its steps: per step the model's
	// prediction before it and the measurement (nil: not guided).
	Guided *GuidedLog `json:"guided,omitempty"`
}

// PredictionRange is one predicted figure of a sweep's point with its
// range, in Unit.
type PredictionRange struct {
	Point  string  `json:"point"`  // knee or slo_safe
	Metric string  `json:"metric"` // e.g. ttft_ms.p95
	Value  float64 `json:"value"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	Unit   string  `json:"unit"`
}

// Options steer Analyze.
type Options struct {
	// Metric is the throughput the knee is placed on (MetricOutputTPS or
	// MetricThroughputRPS); empty picks output tokens/s when every step has
	// it, else requests/s.
	Metric string
	SLOs   []string // the objectives the steps' SLOMet/SLOs were judged by
}

// coarseRatio: neighbouring steps further apart than this (as a load ratio)
// cannot place a point precisely; the result says so.
const coarseRatio = 2.0 + 1e-9

// Analyze sorts steps by load and finds the knee and the SLO-safe point.
func Analyze(steps []Step, opts Options) (*Result, error) {
	if len(steps) == 0 {
		return nil, errors.New("no steps to analyse")
	}
	kind := steps[0].Load.Kind
	for i := range steps {
		if steps[i].Load.Kind != kind {
			return nil, fmt.Errorf("steps mix load kinds %q and %q", kind, steps[i].Load.Kind)
		}
	}
	sorted := append([]Step(nil), steps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Load.Value < sorted[j].Load.Value })
	metric := opts.Metric
	if metric == "" {
		metric = MetricOutputTPS
		for i := range sorted {
			// NaN: a table without output tokens/s (!(NaN > 0) holds).
			if !(sorted[i].Summary.OutputTokenThroughputTPS > 0) {
				metric = MetricThroughputRPS
				break
			}
		}
	}
	if metric == MetricThroughputRPS && !allGiven(sorted, MetricThroughputRPS) && allGiven(sorted, MetricOutputTPS) {
		metric = MetricOutputTPS
	}
	r := &Result{LoadKind: kind, KneeMetric: metric, SLOs: opts.SLOs, Steps: sorted}
	r.Knee = FindKnee(sorted, metric)
	r.ClassVerdicts()
	judged := opts.SLOs
	if classesJudged(sorted) {
		judged = append(append([]string{}, opts.SLOs...), r.ClassSLOs...)
		if len(judged) == 0 {
			judged = []string{"every class's objectives"}
		}
	}
	r.SLOSafe = SafePoint(sorted, judged)
	r.Warnings = append(r.Warnings, StepWarnings(sorted)...)
	r.Warnings = append(r.Warnings, kneeWarnings(sorted, r.Knee, metric)...)
	if len(judged) > 0 {
		r.Warnings = append(r.Warnings, safeWarnings(sorted, r.SLOSafe)...)
	}
	return r, nil
}

func kneeWarnings(steps []Step, knee Point, metric string) []string {
	var w []string
	n := len(steps)
	best, drop := 0.0, -1
	for i := range steps {
		t := steps[i].Throughput(metric)
		if t > best {
			best = t
		} else if t < 0.9*best && drop < 0 {
			drop = i
		}
	}
	if drop >= 0 {
		w = append(w, fmt.Sprintf("throughput falls at %s to %s (best so far %s): past overload the service does less work (errors, rejections or preemptions); the knee uses the running maximum",
			steps[drop].Load, num(steps[drop].Throughput(metric), metricUnit(metric)), num(best, metricUnit(metric))))
	}
	switch {
	case n < 3:
		w = append(w, fmt.Sprintf("only %d step(s): a knee needs at least 3, better 5 or more", n))
	case !knee.Found():
		if strings.Contains(knee.Reason, "not reached") {
			w = append(w, fmt.Sprintf("the knee is beyond the last step (%s): extend the sweep to higher load", steps[n-1].Load))
		}
	case knee.Index == 0:
		w = append(w, fmt.Sprintf("the knee is at the first step (%s): start the sweep at a lower load", steps[0].Load))
	default:
		k := knee.Index
		lo, hi := steps[k-1].Load.Value, steps[k+1].Load.Value
		if steps[k].Load.Value/lo > coarseRatio || hi/steps[k].Load.Value > coarseRatio {
			w = append(w, fmt.Sprintf("coarse grid: the knee lies between %s and %s, whose steps are more than ×2 apart; add steps in between (or use --auto, which refines by bisection)",
				steps[k-1].Load, steps[k+1].Load))
		}
		if k < 2 || n-1-k < 2 {
			w = append(w, fmt.Sprintf("the knee has %d measured step(s) below it and %d above: too few to be sure of its place; widen the sweep", k, n-1-k))
		}
	}
	return w
}

func safeWarnings(steps []Step, safe Point) []string {
	var w []string
	firstFail := -1
	for i := range steps {
		if !steps[i].SLOMet && firstFail < 0 {
			firstFail = i
		}
		if steps[i].SLOMet && firstFail >= 0 {
			w = append(w, fmt.Sprintf("non-monotone: %s meets the SLOs again after %s failed; treated as noise (the safe point stays below the first failure); run longer steps to settle it",
				steps[i].Load, steps[firstFail].Load))
			break
		}
	}
	switch {
	case firstFail < 0:
		w = append(w, fmt.Sprintf("every step meets the SLOs: the SLO-safe point is at least %s; extend the sweep to find the limit", steps[len(steps)-1].Load))
	case firstFail == 0 && steps[0].Summary.Requests > 0 && steps[0].Summary.Completed == 0:
		w = append(w, fmt.Sprintf("the first step (%s) has %s", steps[0].Load, noData(&steps[0])))
	case firstFail == 0:
		w = append(w, fmt.Sprintf("the first step (%s) already fails the SLOs: start the sweep lower", steps[0].Load))
	case safe.Found() && steps[firstFail].Load.Value/steps[safe.Index].Load.Value > coarseRatio:
		w = append(w, fmt.Sprintf("coarse grid: the SLO limit lies between %s and %s (more than ×2 apart); add steps in between (or use --auto)",
			steps[safe.Index].Load, steps[firstFail].Load))
	}
	return w
}

// ClassVerdicts sets ClassSLOs and BreaksFirst from the steps' classes
// (sorted by load): a stored sweep keeps its steps, and these follow.
func (r *Result) ClassVerdicts() {
	r.ClassSLOs, r.BreaksFirst = classObjectives(r.Steps), nil
	if classesJudged(r.Steps) {
		r.BreaksFirst = findBreaksFirst(r.Steps)
	}
}

// Judged reports whether the sweep had objectives to judge: the run's, or
// a mix's classes' own.
func (r *Result) Judged() bool { return len(r.SLOs) > 0 || len(r.ClassSLOs) > 0 }

// allGiven reports whether every step has the throughput metric (a table
// may leave it out: NaN).
func allGiven(steps []Step, metric string) bool {
	for i := range steps {
		if math.IsNaN(steps[i].Throughput(metric)) {
			return false
		}
	}
	return true
}

// figures matches the numbers in a warning: two steps' warnings that
// differ only in them say the same thing.
var figures = regexp.MustCompile(`[0-9]+([.,][0-9]+)*`)

// StepWarnings are the steps' warnings as the sweep's own ("step LOAD:
// …"), each said once: a warning that several steps give (the load
// generator's notes, every step alike) is one line naming the steps, with
// the first step's figures when theirs differ.
func StepWarnings(steps []Step) []string {
	type group struct {
		first string
		loads []string
		same  bool
	}
	var order []string
	groups := map[string]*group{}
	for i := range steps {
		seen := map[string]int{} // a step's k-th warning of a kind joins the other steps' k-th
		for _, w := range steps[i].Warnings {
			key := figures.ReplaceAllString(w, "#")
			seen[key]++
			key += "\x00" + strconv.Itoa(seen[key])
			g := groups[key]
			if g == nil {
				g = &group{first: w, same: true}
				groups[key] = g
				order = append(order, key)
			}
			g.loads = append(g.loads, steps[i].Load.String())
			g.same = g.same && w == g.first
		}
	}
	out := make([]string, 0, len(order))
	for _, key := range order {
		g := groups[key]
		switch {
		case len(g.loads) == 1:
			out = append(out, fmt.Sprintf("step %s: %s", g.loads[0], g.first))
		case g.same:
			out = append(out, fmt.Sprintf("steps %s: %s", strings.Join(g.loads, ", "), g.first))
		default:
			out = append(out, fmt.Sprintf("steps %s (figures of step %s; each step's own are in its warnings): %s",
				strings.Join(g.loads, ", "), g.loads[0], g.first))
		}
	}
	return out
}
