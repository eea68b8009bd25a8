package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/slo"
)

// A guided sweep (knee sweep --guided) measures only where the answer is
// decided. A Model predicts the whole curve; each measured step refits it;
// the next load is where the SLO-safe point or the knee is least certain.
// It stops when the SLO-safe point is bracketed by measured steps one grid
// step apart (the grid's ratio is the resolution) and the knee's grid
// neighbours are measured. The loop is a pure function of the measured
// steps and the model, so the same inputs give the same step sequence.
// Points are always measured steps: a prediction only chooses where to
// measure.

// Model predicts steps. Refit and Predict must be deterministic: shards and
// reruns agree on every step only if the same steps give the same curve.
type Model interface {
	// Refit fits the model to the steps measured so far (load order).
	Refit(ctx context.Context, measured []Step) error
	// Predict gives the model's step at a load, with the relative range
	// of its figures.
	Predict(ctx context.Context, load Load) (Prediction, error)
}

// Prediction is the model's step at one load: its figures (Summary) and
// the relative range each family of figures carries (0.2: from ÷1.2 to
// ×1.2).
type Prediction struct {
	Step   Step
	Ranges Ranges
}

// Ranges are relative ranges of predicted figures.
type Ranges struct {
	TTFT       float64 `json:"ttft"`
	TPOT       float64 `json:"tpot"` // inter-token figures: tpot, itl
	Throughput float64 `json:"throughput"`
}

// of gives the range an objective's figure carries.
func (r Ranges) of(o slo.Objective) float64 {
	switch {
	case o.Kind == slo.Throughput:
		return r.Throughput
	case o.Kind != slo.Latency:
		return 0 // error and rejection rates: the model does not predict them
	case o.Metric == "ttft" || o.Metric == "ttft_sched":
		return r.TTFT
	case o.Metric == "tpot" || o.Metric == "itl":
		return r.TPOT
	}
	return max(r.TTFT, r.TPOT)
}

// GuidedPlan is a guided sweep's bounds and stop.
type GuidedPlan struct {
	Kind     string
	Min, Max float64
	// Resolution is the grid's step as a fraction (0.1: each load 10%
	// above the one below); the SLO-safe point is bracketed to it.
	Resolution float64
	// Budget: requests and/or wall time (0: none). No step starts once
	// what was used plus the largest step so far would pass it.
	BudgetRequests int64
	BudgetTime     time.Duration
	Metric         string
	// MaxKneeSteps bounds the steps spent measuring the knee's
	// neighbours as the refits move it (0: 3).
	MaxKneeSteps int
}

// Validate checks the plan; errors name what was wrong.
func (p *GuidedPlan) Validate() error {
	if p.Kind != Concurrency && p.Kind != Rate {
		return fmt.Errorf("load kind %q: want %s or %s", p.Kind, Concurrency, Rate)
	}
	if !(p.Min > 0) || !(p.Max > p.Min) || math.IsInf(p.Max, 0) {
		return fmt.Errorf("guided sweep from %v to %v: want 0 < min < max", p.Min, p.Max)
	}
	if !(p.Resolution >= 0.01) || p.Resolution > 1 {
		return fmt.Errorf("resolution %v: want 1%% to 100%%", p.Resolution)
	}
	if p.BudgetRequests < 0 || p.BudgetTime < 0 {
		return errors.New("budget: want a positive number of requests or a duration")
	}
	return nil
}

// Grid is the plan's loads: Min × (1+Resolution)^k up to Max; whole
// numbers for concurrency (each once), three significant digits for rates.
func (p *GuidedPlan) Grid() []float64 {
	var g []float64
	for x := p.Min; x <= p.Max*(1+1e-9); x *= 1 + p.Resolution {
		v := roundSig(x, 3)
		if p.Kind == Concurrency {
			v = math.Round(x)
		}
		if len(g) == 0 || v > g[len(g)-1] {
			g = append(g, v)
		}
	}
	if last := g[len(g)-1]; last < p.Max {
		g = append(g, p.Max) // the range's end is always a load
	}
	return g
}

// GuidedLog is how a guided sweep went: each step with what the model
// predicted before it and what was measured, the budget used and what is
// still unknown. It is part of the stored sweep (Result.Guided).
type GuidedLog struct {
	Resolution float64       `json:"resolution"`
	Steps      []*GuidedStep `json:"steps"`
	// Fallback says why the sweep finished as a bracket search on
	// measured points only ("" when the model guided it to the end).
	Fallback  string  `json:"fallback,omitempty"`
	Requests  int64   `json:"requests"`
	ElapsedS  float64 `json:"elapsed_s"`
	Unknown   string  `json:"unknown,omitempty"`    // what the budget left unmeasured ("" when complete)
	ModelKnee float64 `json:"model_knee,omitempty"` // the knee on the last refitted curve (a prediction)
	ModelSafe float64 `json:"model_safe,omitempty"` // the SLO-safe load on the last refitted curve (a prediction)
}

// GuidedStep is one measured step of a guided sweep, in measuring order.
type GuidedStep struct {
	Order int    `json:"order"` // 1 for the first step measured
	Load  Load   `json:"load"`
	Why   string `json:"why"` // what the step was for
	// Share is the part of a whole step it ran for (0: a whole step).
	Share float64 `json:"share,omitempty"`
	// Predicted is the model's figures before the step (nil: measured
	// without a model, as the light-load step of a bisection).
	Predicted *PredictedFigures `json:"predicted,omitempty"`
	Measured  MeasuredFigures   `json:"measured"`
	// InRange: every measured figure fell in the predicted range, or the
	// SLO verdict the model was sure of held (nil: no prediction).
	InRange *bool `json:"in_range,omitempty"`
	// Curve is the model refitted to the steps measured up to this one,
	// over the grid: what the report draws as a band between the measured
	// steps (nil: no refit followed the step, or no model). Predictions,
	// never measurements.
	Curve []CurvePoint `json:"curve,omitempty"`
}

// CurvePoint is the refitted curve at one grid load: throughput (the
// knee's metric) and p95 TTFT, each with its range.
type CurvePoint struct {
	Load       float64 `json:"load"`
	Throughput Figure  `json:"throughput"`
	TTFTP95    Figure  `json:"ttft_p95_ms"`
}

// PredictedFigures are a prediction's throughput and SLO figures, each
// with its range.
type PredictedFigures struct {
	Throughput Figure   `json:"throughput"`
	SLOs       []Figure `json:"slos,omitempty"`
	SLOMet     bool     `json:"slo_met"` // the central figures meet every SLO
	Sure       bool     `json:"sure"`    // every range lies on one side of its threshold
	// Classes are a mix's classes' objectives (the run's and each
	// class's own), each predicted with its range, in the mix's order.
	Classes []ClassFigures `json:"classes,omitempty"`
}

// ClassFigures are one traffic class's predicted SLO figures.
type ClassFigures struct {
	Name   string   `json:"name"`
	SLOs   []Figure `json:"slos,omitempty"` // Name: the objective
	SLOMet bool     `json:"slo_met"`
}

// MeasuredClass is one traffic class's measured SLO figures.
type MeasuredClass struct {
	Name   string    `json:"name"`
	SLOs   []float64 `json:"slos,omitempty"`
	SLOMet bool      `json:"slo_met"`
}

// Figure is a predicted value with its range.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// MeasuredFigures are a measured step's throughput and SLO figures.
type MeasuredFigures struct {
	Throughput float64   `json:"throughput"`
	SLOs       []float64 `json:"slos,omitempty"`
	SLOMet     bool      `json:"slo_met"`
	Requests   int64     `json:"requests"`
	ElapsedS   float64   `json:"elapsed_s"`
	// Classes: a mix's classes, as PredictedFigures.Classes.
	Classes []MeasuredClass `json:"classes,omitempty"`
}

// ErrBudget is returned (wrapped) when the budget ran out before the
// sweep's points were settled; the result says what is unknown.
var ErrBudget = errors.New("budget exhausted")

// guided is one guided sweep's state.
type guided struct {
	ctx     context.Context
	r       Runner
	model   Model // nil: plain bisection on measured points
	p       GuidedPlan
	set     slo.Set
	grid    []float64
	at      map[int]Step // measured steps by grid index
	order   []Step       // measured steps in measuring order
	log     GuidedLog
	metric  string
	largest int64 // requests of the largest step so far
	wrong   int   // consecutive steps outside the model's range
	preds   []Prediction
	progres func(Step)
	// reported counts the steps of order given to progres: a step is
	// given once the refit after it has logged its curve, so a caller
	// that stores each step it is given stores the curve with it.
	reported int
}

// RunGuided measures a guided sweep with r, steered by model (nil: a
// plain bisection on measured points, the baseline a model must beat).
// The result is an ordinary sweep of the measured steps with Guided set.
// On a runner error or an exhausted budget the steps measured so far are
// analysed and returned with the error (ErrBudget for the budget).
func RunGuided(ctx context.Context, r Runner, model Model, p GuidedPlan, set slo.Set, progress func(Step)) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.MaxKneeSteps == 0 {
		p.MaxKneeSteps = 3
	}
	g := &guided{ctx: ctx, r: r, model: model, p: p, set: set, grid: p.Grid(), at: map[int]Step{}, progres: progress}
	g.log.Resolution = p.Resolution
	g.metric = p.Metric
	if g.metric == "" {
		g.metric = MetricOutputTPS
	}
	if model == nil {
		g.log.Fallback = "no model: a plain bisection on measured points"
	}
	runErr := g.run()
	g.report()
	if len(g.order) == 0 {
		if runErr == nil {
			runErr = errors.New("no steps measured")
		}
		return nil, runErr
	}
	res, aerr := Analyze(g.order, Options{SLOs: Objectives(set), Metric: p.Metric})
	if aerr != nil {
		return nil, errors.Join(runErr, aerr)
	}
	g.placeKnee(res)
	res.Guided = &g.log
	res.Notes = append(res.Notes, g.notes()...)
	return res, runErr
}

func (g *guided) run() error {
	if err := g.measure(0, "light load: pins the front end and the batch-1 step", nil, lightShare); err != nil {
		return err
	}
	kneeSteps := 0
	for {
		if g.model != nil && g.log.Fallback == "" {
			if err := g.refit(); err != nil {
				g.fallBack(fmt.Sprintf("the model could not be refitted (%v)", err))
			}
		}
		g.report()
		a, b := g.bracket()
		next, why, share := -1, "", 1.0
		if !g.safeSettled(a, b) {
			next, why = g.nextForSafe(a, b)
		} else if k, ok := g.kneeTarget(); ok && kneeSteps < g.p.MaxKneeSteps {
			next, why = k, fmt.Sprintf("knee at %s on the refitted curve: its neighbourhood", Load{g.p.Kind, g.kneeLoad()})
			kneeSteps++
			if next > b {
				// Above a measured failure its verdict settles nothing:
				// only its throughput is wanted.
				share = kneeShare
				why += fmt.Sprintf(" (above the SLO bracket: throughput only, a %.0f%% step)", 100*share)
			}
		}
		if next < 0 {
			return nil
		}
		if unknown := g.overBudget(); unknown != "" {
			g.log.Unknown = unknown
			return fmt.Errorf("%w after %d requests and %.0f s: %s", ErrBudget, g.log.Requests, g.log.ElapsedS, unknown)
		}
		var pred *Prediction
		if g.preds != nil {
			pred = &g.preds[next]
		}
		if err := g.measure(next, why, pred, share); err != nil {
			return err
		}
		if s := g.at[next]; s.Unreachable != "" {
			return nil // the target is gone: nothing further can be measured
		}
	}
}

// The shares of a whole step (--duration, --requests) that the steps
// whose SLO verdict decides nothing run for: the light step (its figures
// are medians at one or two in flight, steady from the first requests)
// and a knee step above a measured failure (its throughput only).
const (
	lightShare = 0.5
	kneeShare  = 0.5
)

// measure runs the grid's i-th load (share of a whole step) and logs it
// beside its prediction.
func (g *guided) measure(i int, why string, pred *Prediction, share float64) error {
	load := Load{Kind: g.p.Kind, Value: g.grid[i]}
	ctx := g.ctx
	if share < 1 {
		ctx = WithStepShare(ctx, share)
	}
	s, err := g.r.Run(ctx, load)
	if err != nil {
		return fmt.Errorf("step %s: %w", load, err)
	}
	s.Load = load
	Judge(&s, g.set)
	used := int64(s.Summary.Requests + s.Summary.Window.ExcludedWarmup + s.Summary.Window.ExcludedCooldown)
	elapsed := max(s.Summary.DurationS, s.Summary.Window.EndMS/1e3)
	g.log.Requests += used
	g.log.ElapsedS += elapsed
	g.largest = max(g.largest, used)
	gs := &GuidedStep{Order: len(g.log.Steps) + 1, Load: load, Why: why, Share: shareOrZero(share), Measured: MeasuredFigures{Throughput: s.Throughput(g.metric), SLOMet: s.SLOMet, Requests: used, ElapsedS: elapsed}}
	for _, c := range s.SLOs {
		gs.Measured.SLOs = append(gs.Measured.SLOs, c.Value)
	}
	for _, c := range s.Classes {
		mc := MeasuredClass{Name: c.Name, SLOMet: c.SLOMet}
		for _, ch := range c.SLOs {
			mc.SLOs = append(mc.SLOs, ch.Value)
		}
		gs.Measured.Classes = append(gs.Measured.Classes, mc)
	}
	if pred != nil {
		pf := g.figures(pred)
		gs.Predicted = &pf
		in := g.inRange(&pf, &s)
		gs.InRange = &in
		if in {
			g.wrong = 0
		} else if g.wrong++; g.wrong >= 2 && g.log.Fallback == "" {
			g.fallBack(fmt.Sprintf("the measurements fell outside the model's range for two steps running (the last at %s)", load))
		}
	}
	g.log.Steps = append(g.log.Steps, gs)
	s.Guided = gs // the step, its copies and the log share it
	g.at[i] = s
	g.order = append(g.order, s)
	return nil
}

// report gives progres the steps measured since it last did.
func (g *guided) report() {
	for ; g.reported < len(g.order); g.reported++ {
		if g.progres != nil {
			g.progres(g.order[g.reported])
		}
	}
}

func (g *guided) fallBack(why string) {
	g.log.Fallback = why + ": finished as a bracket search on measured points only"
	g.preds = nil
}

// refit fits the model to the steps so far and predicts the grid.
func (g *guided) refit() error {
	sorted := g.sorted()
	if err := g.model.Refit(g.ctx, sorted); err != nil {
		return err
	}
	preds := make([]Prediction, len(g.grid))
	for i, v := range g.grid {
		pr, err := g.model.Predict(g.ctx, Load{Kind: g.p.Kind, Value: v})
		if err != nil {
			return err
		}
		pr.Step.Load = Load{Kind: g.p.Kind, Value: v}
		Judge(&pr.Step, g.set)
		preds[i] = pr
	}
	g.preds = preds
	g.keepCurve()
	g.log.ModelSafe, g.log.ModelKnee = 0, 0
	if p := g.predictedSafe(); p >= 0 {
		g.log.ModelSafe = g.grid[p]
	}
	if k := g.modelKnee(); k >= 0 {
		g.log.ModelKnee = g.grid[k]
	}
	return nil
}

func (g *guided) sorted() []Step {
	idx := make([]int, 0, len(g.at))
	for i := range g.at {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	out := make([]Step, len(idx))
	for j, i := range idx {
		out[j] = g.at[i]
	}
	return out
}

// bracket is the measured grid indices around the SLO limit: a, the
// highest measured load meeting every SLO below b, the lowest measured
// load failing one (-1 and len(grid) when none).
func (g *guided) bracket() (a, b int) {
	a, b = -1, len(g.grid)
	for i, s := range g.at {
		if !s.SLOMet && i < b {
			b = i
		}
	}
	for i, s := range g.at {
		if s.SLOMet && i < b && i > a {
			a = i
		}
	}
	return a, b
}

// safeSettled: no objectives (the run's, or a mix's classes' own), or
// the limit bracketed one grid step apart, or at an end of the grid.
func (g *guided) safeSettled(a, b int) bool {
	return (len(g.set) == 0 && !classesJudged(g.order)) || b == a+1
}

// nextForSafe picks the next load for the SLO-safe point: where the model
// places the limit (the load it predicts last to meet every SLO, or the
// one after it when that one is measured), or without a model the
// bisection's midpoint (doubling until a load fails).
func (g *guided) nextForSafe(a, b int) (int, string) {
	if g.preds == nil {
		if b == len(g.grid) {
			i := a + 1
			for i < len(g.grid)-1 && g.grid[i] < 2*g.grid[max(a, 0)] {
				i++
			}
			return i, "bisection: doubling until an SLO fails"
		}
		return (a + b + 1) / 2, fmt.Sprintf("bisection of %s–%s", g.loadName(a), g.loadName(b))
	}
	p := g.predictedSafe()
	streak, met := g.streak()
	if b == len(g.grid) {
		// No failure measured yet: aim at the model's first failing
		// load, so one step may close the bracket from above. A model
		// that keeps undershooting (each aim met) is overruled by steps
		// that double in grid positions.
		next := min(max(p+1, a+1<<min(streak, 8)), len(g.grid)-1)
		if next <= a {
			return -1, ""
		}
		why := fmt.Sprintf("the model's first failing load (no failure measured above %s)", g.loadName(a))
		if next > p+1 {
			why = fmt.Sprintf("%d steps in a row met the SLOs: past the model's limit, doubling", streak)
		}
		return next, why
	}
	next := min(max(p, a+1), b-1)
	why := fmt.Sprintf("the model's SLO-safe load (measured limit within %s–%s)", g.loadName(a), g.loadName(b))
	switch {
	case p <= a:
		why = fmt.Sprintf("closes the SLO bracket above %s (model: limit at or below it)", g.loadName(a))
	case p >= b:
		why = fmt.Sprintf("closes the SLO bracket below %s (model: limit at or above it)", g.loadName(b))
	}
	// Two steps in a row on one side of the limit: the model is off in
	// one direction; overrule it with the measured steps alone: the
	// bisection's midpoint, or where the bracket ends' measured SLO
	// margins cross the limit (the secant) when that is higher. Latency
	// against load is flat and then a hockey stick, convex in log-log, so
	// the secant lies below the true crossing: the higher of the two is
	// the better guess from either side.
	if streak < 2 {
		return next, why
	}
	to, how := (a+b)/2, "the bisection's midpoint"
	if sec := g.secant(a, b); sec > to {
		to, how = sec, fmt.Sprintf("where the measured SLO margins of %s and %s cross the limit", g.loadName(a), g.loadName(b))
	}
	if to > a && to < b {
		if met && next < to {
			next, why = to, fmt.Sprintf("%d steps in a row met the SLOs: at least %s", streak, how)
		} else if !met && next > to {
			next, why = to, fmt.Sprintf("%d steps in a row failed the SLOs: at most %s", streak, how)
		}
	}
	return next, why
}

// secant is the grid index of the last load the measured bracket ends'
// SLO margins place within the limit: each end's worst objective as
// measured ÷ threshold (its inverse for a floor; a zero rate counts
// nothing), interpolated linearly in
// log-load and log-margin, kept strictly inside the bracket; -1 when an end
// is not measured or has no margin (a mix's classes, a rate objective
// with a zero threshold).
func (g *guided) secant(a, b int) int {
	if a < 0 || b >= len(g.grid) || b-a < 2 {
		return -1
	}
	ma, okA := g.margin(g.at[a])
	mb, okB := g.margin(g.at[b])
	if !okA || !okB || !(ma > 0) || !(ma < 1) || !(mb > 1) {
		return -1
	}
	xa, xb := math.Log(g.grid[a]), math.Log(g.grid[b])
	ya, yb := math.Log(ma), math.Log(mb)
	cross := math.Exp(xa + (0-ya)*(xb-xa)/(yb-ya))
	i := a + 1
	for i+1 < b && g.grid[i+1] <= cross {
		i++
	}
	return i
}

// margin is a step's worst SLO margin over the run's objectives and a
// mix's classes' (above 1 fails); false when an objective gives none.
func (g *guided) margin(s Step) (float64, bool) {
	checks := slices.Clone(s.SLOs)
	for _, c := range s.Classes { // a mix: the class that breaks first decides
		checks = append(checks, c.SLOs...)
	}
	if len(checks) == 0 {
		return 0, false
	}
	worst := 0.0
	for _, c := range checks {
		o, ok := checkObjective(c)
		if !ok || c.NoData || !(o.Threshold > 0) || !(c.Value >= 0) || math.IsInf(c.Value, 0) {
			return 0, false
		}
		m := c.Value / o.Threshold
		if o.Kind == slo.Throughput {
			if c.Value == 0 {
				return 0, false
			}
			m = o.Threshold / c.Value
		}
		worst = max(worst, m)
	}
	return worst, true
}

// streak counts the last steps with one SLO verdict (the light step
// left out) and says which.
func (g *guided) streak() (n int, met bool) {
	for i := len(g.order) - 1; i >= 1; i-- {
		if n > 0 && g.order[i].SLOMet != met {
			break
		}
		n, met = n+1, g.order[i].SLOMet
	}
	return n, met
}

func (g *guided) loadName(i int) string {
	switch {
	case i < 0:
		return "the lowest load"
	case i >= len(g.grid):
		return "the highest load"
	}
	return Load{g.p.Kind, g.grid[i]}.String()
}

// predictedSafe is the highest grid index the current curve meets every
// SLO at below its first failure (measured steps count as they were
// measured); -1 when none.
func (g *guided) predictedSafe() int {
	for i := range g.grid {
		met := g.preds[i].Step.SLOMet
		if s, ok := g.at[i]; ok {
			met = s.SLOMet
		}
		if !met {
			return i - 1
		}
	}
	return len(g.grid) - 1
}

// modelKnee is the Kneedle knee of the refitted curve over the grid
// (-1: none, or no model). The curve is the model's alone: mixing in the
// measured steps' noise would move the knee by more than a grid step.
func (g *guided) modelKnee() int {
	if g.preds == nil {
		return -1
	}
	c := make([]Step, len(g.grid))
	for i := range g.grid {
		c[i] = g.preds[i].Step
	}
	return FindKnee(c, g.metric).Index
}

// kneeIndex is the knee's grid index on the curve so far: the refitted
// curve's, or after a fallback the measured steps' (-1: none).
func (g *guided) kneeIndex() int {
	if g.preds != nil {
		return g.modelKnee()
	}
	if g.model == nil {
		return -1 // plain bisection: the knee is not its question
	}
	sorted := g.sorted()
	k := FindKnee(sorted, g.metric)
	if !k.Found() {
		return -1
	}
	return slices.Index(g.grid, sorted[k.Index].Load.Value)
}

func (g *guided) kneeLoad() float64 {
	if k := g.kneeIndex(); k >= 0 {
		return g.grid[k]
	}
	return 0
}

// kneeTarget is the first of the knee and its grid neighbours not yet
// measured.
func (g *guided) kneeTarget() (int, bool) {
	k := g.kneeIndex()
	if k < 0 {
		return -1, false
	}
	for _, i := range []int{k, k - 1, k + 1} {
		if i < 0 || i >= len(g.grid) {
			continue
		}
		if _, ok := g.at[i]; !ok {
			return i, true
		}
	}
	return -1, false
}

// overBudget says what stays unknown when the next step could pass the
// budget ("" when it fits).
func (g *guided) overBudget() string {
	over := g.p.BudgetRequests > 0 && g.log.Requests+g.largest > g.p.BudgetRequests
	if g.p.BudgetTime > 0 {
		perStep := g.log.ElapsedS / float64(len(g.order))
		over = over || g.log.ElapsedS+perStep > g.p.BudgetTime.Seconds()
	}
	if !over {
		return ""
	}
	var unknown []string
	a, b := g.bracket()
	if !g.safeSettled(a, b) {
		unknown = append(unknown, fmt.Sprintf("the SLO-safe point lies between %s and %s, not bracketed to %.0f%%", g.loadName(a), g.loadName(b), 100*g.p.Resolution))
	}
	if k, ok := g.kneeTarget(); ok {
		unknown = append(unknown, fmt.Sprintf("the knee's neighbourhood is not measured (%s next)", g.loadName(k)))
	}
	if len(unknown) == 0 {
		return ""
	}
	return strings.Join(unknown, "; ")
}

// figures are a prediction's throughput and SLO figures with ranges.
func (g *guided) figures(pr *Prediction) PredictedFigures {
	t := pr.Step.Throughput(g.metric)
	r := pr.Ranges.Throughput
	// Ranges are ratios (÷ and × 1+r), so a wide one stays positive.
	pf := PredictedFigures{Throughput: Figure{Name: g.metric, Value: t, Low: t / (1 + r), High: t * (1 + r)}, SLOMet: pr.Step.SLOMet, Sure: true}
	for i, c := range pr.Step.SLOs {
		o := g.set[i]
		rr := pr.Ranges.of(o)
		f := Figure{Name: c.Objective, Value: c.Value, Low: c.Value / (1 + rr), High: c.Value * (1 + rr)}
		pf.SLOs = append(pf.SLOs, f)
		if o.Meets(f.Low) != o.Meets(f.High) {
			pf.Sure = false
		}
	}
	for _, c := range pr.Step.Classes {
		cf := ClassFigures{Name: c.Name, SLOMet: c.SLOMet}
		for _, ch := range c.SLOs {
			o, ok := checkObjective(ch)
			if !ok {
				continue
			}
			rr := pr.Ranges.of(o)
			f := finiteFigure(Figure{Name: ch.Objective, Value: ch.Value, Low: ch.Value / (1 + rr), High: ch.Value * (1 + rr)})
			cf.SLOs = append(cf.SLOs, f)
			if o.Meets(f.Low) != o.Meets(f.High) {
				pf.Sure = false
			}
		}
		pf.Classes = append(pf.Classes, cf)
	}
	return pf
}

// checkObjective is the objective a Check was judged by (written from a
// parsed one, so it parses).
func checkObjective(c Check) (slo.Objective, bool) {
	set, err := slo.ParseAll([]string{c.Objective})
	if err != nil || len(set) != 1 {
		return slo.Objective{}, false
	}
	return set[0], true
}

// inRange: the measured throughput lies in the predicted range and, when
// the model was sure of the SLO verdict, the verdict held.
func (g *guided) inRange(pf *PredictedFigures, s *Step) bool {
	t := s.Throughput(g.metric)
	if t < pf.Throughput.Low || t > pf.Throughput.High {
		return false
	}
	return !pf.Sure || pf.SLOMet == s.SLOMet
}

// kneeReach is how many grid steps from the refitted curve's knee a
// measured step may stand for it: two steps of 10% are well within one
// step of a dense sweep (×1.33 to ×2 apart).
const kneeReach = 2

// placeKnee sets the result's knee: the refitted curve's, placed on the
// measured step there, never on a predicted one. Without a model (or after a fallback) Analyze's
// Kneedle on the measured steps stands.
func (g *guided) placeKnee(res *Result) {
	k := g.modelKnee()
	if k < 0 {
		return
	}
	s, ok := g.at[k]
	stand := ""
	if !ok {
		// The refits moved the knee past the steps spent on it: the
		// nearest measured step within kneeReach grid steps (the lower
		// on a tie) stands for it, said so.
		for d := 1; d <= kneeReach && !ok; d++ {
			for _, i := range []int{k - d, k + d} {
				if n, found := g.at[i]; found && !ok {
					s, ok = n, true
					stand = fmt.Sprintf(" (the curve's knee is at %s, %d grid step(s) away, not measured: the nearest measured step stands for it)", Load{g.p.Kind, g.grid[k]}, d)
				}
			}
		}
	}
	if !ok {
		res.Knee = none("the refitted curve puts the knee at %s, and no step within %d grid steps of it was measured (the budget or the knee's step limit ran out): the knee is unknown", Load{g.p.Kind, g.grid[k]}, kneeReach)
		return
	}
	idx := slices.IndexFunc(res.Steps, func(x Step) bool { return x.Load.Value == s.Load.Value })
	reason := fmt.Sprintf("Kneedle on the curve refitted to every measured step, over %s to %s: the knee is at %s, where the measured %s is %s%s",
		Load{g.p.Kind, g.grid[0]}, Load{g.p.Kind, g.grid[len(g.grid)-1]}, s.Load, metricName(g.metric), num(s.Throughput(g.metric), metricUnit(g.metric)), stand)
	var nb []string
	for _, i := range []int{k - 1, k + 1} {
		if n, ok := g.at[i]; ok {
			nb = append(nb, fmt.Sprintf("%s: %s", n.Load, num(n.Throughput(g.metric), metricUnit(g.metric))))
		}
	}
	if len(nb) > 0 {
		reason += "; its measured neighbours " + strings.Join(nb, ", ")
	}
	res.Knee = Point{Index: idx, Load: s.Load.Value, Reason: reason}
	// Analyze's warnings judged the measured steps' own Kneedle; the
	// guided knee replaces it.
	res.Warnings = slices.DeleteFunc(res.Warnings, func(w string) bool {
		return strings.Contains(w, "knee") && !strings.HasPrefix(w, "step ")
	})
}

func (g *guided) notes() []string {
	mode := "guided by the simulator, refitted after every step"
	if g.model == nil {
		mode = "plain bisection on measured points (no model)"
	}
	n := []string{fmt.Sprintf("guided sweep (%s): %d steps on a grid of %d loads %s to %s at %.0f%% resolution; %d requests, %.0f s measured",
		mode, len(g.order), len(g.grid), Load{g.p.Kind, g.grid[0]}, Load{g.p.Kind, g.grid[len(g.grid)-1]}, 100*g.p.Resolution, g.log.Requests, g.log.ElapsedS)}
	if g.log.Fallback != "" && g.model != nil {
		n = append(n, g.log.Fallback)
	}
	if g.log.Unknown != "" {
		n = append(n, "budget exhausted: "+g.log.Unknown)
	}
	return n
}

func shareOrZero(share float64) float64 {
	if share >= 1 {
		return 0
	}
	return share
}

// keepCurve logs the refitted curve on the step measured last, the one
// whose measurement the refit has just taken in.
func (g *guided) keepCurve() {
	if len(g.order) == 0 {
		return
	}
	curve := make([]CurvePoint, len(g.grid))
	for i, pr := range g.preds {
		t, rt := pr.Step.Throughput(g.metric), pr.Ranges.Throughput
		f, rf := pr.Step.Summary.TTFT.P95, pr.Ranges.TTFT
		curve[i] = CurvePoint{Load: g.grid[i],
			Throughput: finiteFigure(Figure{Name: g.metric, Value: t, Low: t / (1 + rt), High: t * (1 + rt)}),
			TTFTP95:    finiteFigure(Figure{Name: "ttft_p95_ms", Value: f, Low: f / (1 + rf), High: f * (1 + rf)})}
	}
	g.log.Steps[len(g.log.Steps)-1].Curve = curve
}

// finiteFigure is f with non-finite figures (a simulated step that
// completed nothing) as 0: JSON has no infinity.
func finiteFigure(f Figure) Figure {
	for _, v := range []*float64{&f.Value, &f.Low, &f.High} {
		if math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = 0
		}
	}
	return f
}
