// Package calibrate fits the simulator's step-cost model to a live server
// (knee calibrate): it measures TTFT against prompt length at concurrency
// 1 (prefill cost) and the inter-token gap against batch size (decode step
// time), fits the three fitted constants of simengine.CostParams, writes a
// profile that knee sim and knee serve load, and checks the fitted model
// on a held-out load step the fit never saw.
//
// Reading order: fit.go (the model and the least-squares fit, pure),
// calibrate.go (the measurements and the held-out check), profile.go (the
// profile file).
package calibrate

import (
	"math"
	"strings"

	"github.com/knee-dev/knee/internal/simengine"
)

// Point is one measurement and the step it times, priced at full
// efficiency (simengine.StepCostTerms).
type Point struct {
	Kind string `json:"kind"` // "prefill" (TTFT at concurrency 1) or "decode" (inter-token gap)
	// InputTokens is the prompt length (prefill) or the sequences' mean
	// context (decode); Batch the sequences decoding at once (1 for prefill).
	InputTokens int `json:"input_tokens"`
	Batch       int `json:"batch"`
	Samples     int `json:"samples"` // measurements behind MeasuredMS
	// MeasuredMS is the median TTFT or inter-token gap.
	MeasuredMS float64 `json:"measured_ms"`
	// The step's parts at full efficiency, in ms, as the fit prices them
	// (simengine.StepTerms: the linear layers' kernels and attention's,
	// each bound by its own side).
	WeightMS float64 `json:"weight_ms"`
	LinearMS float64 `json:"linear_ms"`
	KVMS     float64 `json:"kv_ms"`
	AttnMS   float64 `json:"attention_ms"`
	ArMS     float64 `json:"allreduce_ms"`
	// FittedMS is what the fitted model says; Bound which term bounds it
	// ("memory" or "compute").
	FittedMS float64 `json:"fitted_ms"`
	Bound    string  `json:"bound"`
	// PromptShare > 0 makes the point a decode batch's mean step, as a
	// TPOT under load measures it (knee calibrate --from): that share of
	// its steps also prefill other requests' prompts, and those steps'
	// parts are the P* terms.
	PromptShare float64 `json:"prompt_share,omitempty"`
	PWeightMS   float64 `json:"-"`
	PLinearMS   float64 `json:"-"`
	PKVMS       float64 `json:"-"`
	PAttnMS     float64 `json:"-"`
	PArMS       float64 `json:"-"`
}

// Fit is the fitted cost model.
type Fit struct {
	Cost simengine.CostParams `json:"-"`
	// StepModel is StepModelLinear for a linear fit (FitLinear), whose
	// coefficients are Linear; empty for the roofline.
	StepModel string         `json:"step_model,omitempty"`
	Linear    *ProfileLinear `json:"linear,omitempty"`
	// StepOverheadMS, MemEfficiency and ComputeEfficiency are Cost's fitted
	// fields, in the units a person reads.
	StepOverheadMS    float64 `json:"step_overhead_ms"`
	StepPerSeqUS      float64 `json:"step_per_seq_us"`
	MemEfficiency     float64 `json:"mem_efficiency"`
	ComputeEfficiency float64 `json:"compute_efficiency"`
	// RequestOverheadMS is time in TTFT outside any engine step (HTTP,
	// tokenization, scheduling a new request): fitted from the prefill
	// points, reported, not simulated.
	RequestOverheadMS float64 `json:"request_overhead_ms"`
	// StepTimeCV is how much a linear fit's decode steps varied around
	// their mean (coefficient of variation): simulated as a lognormal
	// spread of every step (simengine.CostParams.StepTimeCV).
	StepTimeCV float64 `json:"step_time_cv,omitempty"`
	// FrontEndRateInSteps is how fast a linear fit's front end works while
	// the engine runs steps (simengine.CostParams.FrontEndRateInSteps),
	// fitted to the TTFTs of the decode points' restarted streams.
	FrontEndRateInSteps float64 `json:"front_end_rate_in_steps,omitempty"`
	// RMSRelError is the root-mean-square relative error of the fit over
	// its points; MaxRelError the worst point's.
	RMSRelError float64 `json:"rms_rel_error"`
	MaxRelError float64 `json:"max_rel_error"`
	// MemoryBound and ComputeBound count the points with a kernel each side
	// bounds under the fit; an efficiency no point is bound by is not determined by
	// the measurements and keeps the default (Undetermined names it).
	MemoryBound, ComputeBound int    `json:"-"`
	Undetermined              string `json:"undetermined,omitempty"`
}

// FitPoints fits T0, the step's cost per sequence, the memory and compute
// efficiencies and the request overhead to the points by least squares on
// relative error: every point counts the same whether it is 5 ms or 500
// ms. The efficiencies are found by a grid search (coarse, then fine
// around the best), T0, the per-sequence cost and the request overhead in
// closed form for each candidate. def supplies the fields
// that are not fitted (all-reduce latency, reserved memory) and any
// efficiency the points cannot determine.
func FitPoints(pts []Point, def simengine.CostParams) Fit {
	best := candidate{err: math.Inf(1)}
	// search scans efficiency pairs in [lo, hi]² at the step, keeping each
	// dimension fixed at its value in fix when that is > 0.
	search := func(memLo, memHi, cmpLo, cmpHi, step float64, fix [2]float64) {
		for em := memLo; em <= memHi+1e-12; em += step {
			for ec := cmpLo; ec <= cmpHi+1e-12; ec += step {
				m, c := em, ec
				if fix[0] > 0 {
					m = fix[0]
				}
				if fix[1] > 0 {
					c = fix[1]
				}
				if cand := evaluate(pts, m, c); cand.err < best.err {
					best = cand
				}
				if fix[1] > 0 {
					break
				}
			}
			if fix[0] > 0 {
				break
			}
		}
	}
	fit := func(fix [2]float64) {
		best = candidate{err: math.Inf(1)}
		search(0.02, 1, 0.02, 1, 0.01, fix)
		search(max(best.mem-0.01, 0.005), min(best.mem+0.01, 1), max(best.cmp-0.01, 0.005), min(best.cmp+0.01, 1), 0.0005, fix)
	}
	fit([2]float64{})
	// An efficiency is determined only by points its term bounds; with
	// fewer than two, the fit could bend it to pass one point exactly.
	// It then keeps the default and the other constants are refitted.
	var undetermined []string
	memN, cmpN := boundCounts(pts, best.mem, best.cmp)
	switch {
	case memN < 2 && cmpN < 2:
		best = evaluate(pts, def.MemEfficiency, def.ComputeEfficiency)
		undetermined = append(undetermined, "memory and compute efficiency (too few points: measure more)")
	case cmpN < 2:
		fit([2]float64{0, def.ComputeEfficiency})
		undetermined = append(undetermined, "compute efficiency (fewer than two compute-bound points: measure longer prompts)")
	case memN < 2:
		fit([2]float64{def.MemEfficiency, 0})
		undetermined = append(undetermined, "memory efficiency (fewer than two memory-bound points: measure decode at small batches)")
	}

	f := Fit{Cost: def, Undetermined: strings.Join(undetermined, "; ")}
	f.Cost.StepOverheadNS = int64(math.Round(best.t0 * 1e6))
	f.Cost.StepPerSeqNS = int64(math.Round(best.perSeq * 1e6))
	f.Cost.MemEfficiency, f.Cost.ComputeEfficiency = round4(best.mem), round4(best.cmp)
	f.RequestOverheadMS = best.req
	// The simulator that predicts with this fit takes its front end from
	// the fitted request overhead (the tokenizer's time is in it), and its
	// KV reads at the default ratio to the fitted memory efficiency, as
	// the fit priced them (simengine.StepCostTerms); a profile loads the
	// same (Profile.CostParams).
	f.Cost.FrontEndNS, f.Cost.FrontEndPerTokenNS = int64(math.Round(max(best.req, 0)*1e6)), 0
	f.Cost.KVMemEfficiency = f.Cost.MemEfficiency * simengine.KVToWeightEfficiency()
	f.MemoryBound, f.ComputeBound = boundCounts(pts, best.mem, best.cmp)
	for i := range pts {
		p := &pts[i]
		p.Bound = "memory"
		if cmp, mem := p.bound(best.mem, best.cmp); cmp > mem {
			p.Bound = "compute"
		}
	}
	f.StepOverheadMS = float64(f.Cost.StepOverheadNS) / 1e6
	f.StepPerSeqUS = float64(f.Cost.StepPerSeqNS) / 1e3
	f.MemEfficiency, f.ComputeEfficiency = f.Cost.MemEfficiency, f.Cost.ComputeEfficiency
	for i := range pts {
		p := &pts[i]
		p.FittedMS = model(p, f.StepOverheadMS, f.StepPerSeqUS/1e3, f.RequestOverheadMS, f.MemEfficiency, f.ComputeEfficiency)
	}
	f.RMSRelError, f.MaxRelError = fitErrors(pts)
	return f
}

// fitErrors are the root-mean-square and worst relative errors of the
// points' fitted times.
func fitErrors(pts []Point) (rms, worst float64) {
	var ss float64
	for _, p := range pts {
		if p.MeasuredMS > 0 {
			r := (p.FittedMS - p.MeasuredMS) / p.MeasuredMS
			ss += r * r
			worst = max(worst, math.Abs(r))
		}
	}
	if len(pts) > 0 {
		rms = math.Sqrt(ss / float64(len(pts)))
	}
	return rms, worst
}

// newPoint is a measurement of a step whose terms at full efficiency are k
// (simengine.StepCostTerms, ns).
func newPoint(kind string, in, batch, samples int, measuredMS float64, k simengine.StepTerms) Point {
	return Point{Kind: kind, InputTokens: in, Batch: batch, Samples: samples, MeasuredMS: measuredMS,
		WeightMS: k.WeightNS / 1e6, LinearMS: k.LinearNS / 1e6, KVMS: k.KVNS / 1e6, AttnMS: k.AttnNS / 1e6, ArMS: k.AllReduceNS / 1e6}
}

// seqs is the sequences the point's step runs, which the step's cost per
// sequence counts: a prompt alone, or the decode batch.
func (p *Point) seqs() int {
	if p.Kind == KindPrefill {
		return 1
	}
	return p.Batch
}

// terms are the point's step terms, in ms, for pricing it with
// simengine.StepTerms.NS.
func (p *Point) terms() simengine.StepTerms {
	return simengine.StepTerms{Seqs: float64(p.seqs()), WeightNS: p.WeightMS, LinearNS: p.LinearMS, KVNS: p.KVMS, AttnNS: p.AttnMS, AllReduceNS: p.ArMS}
}

// promptTerms are the terms of the point's steps that carry prompts.
func (p *Point) promptTerms() simengine.StepTerms {
	return simengine.StepTerms{Seqs: float64(p.seqs()), WeightNS: p.PWeightMS, LinearNS: p.PLinearMS, KVNS: p.PKVMS, AttnNS: p.PAttnMS, AllReduceNS: p.PArMS}
}

// stepMS prices the point's step (the mean over its two kinds of step
// when it has prompts in some), as StepTerms.NS does.
func (p *Point) stepMS(t0, perSeq, em, ec float64) float64 {
	y := p.terms().NS(t0, perSeq, em, ec)
	if p.PromptShare > 0 {
		y = (1-p.PromptShare)*y + p.PromptShare*p.promptTerms().NS(t0, perSeq, em, ec)
	}
	return y
}

// bound is StepTerms.Bound over the point's steps.
func (p *Point) bound(em, ec float64) (cmpNS, memNS float64) {
	cmpNS, memNS = p.terms().Bound(em, ec)
	if p.PromptShare > 0 {
		c, m := p.promptTerms().Bound(em, ec)
		cmpNS = (1-p.PromptShare)*cmpNS + p.PromptShare*c
		memNS = (1-p.PromptShare)*memNS + p.PromptShare*m
	}
	return cmpNS, memNS
}

// MemMS is the step's memory traffic at full efficiency (weights and KV),
// CmpMS its arithmetic, in ms: the two sides of the roofline, for reports.
func (p *Point) MemMS() float64 { return p.WeightMS + p.KVMS }

// CmpMS: see MemMS.
func (p *Point) CmpMS() float64 { return p.LinearMS + p.AttnMS }

// model is the step-cost model applied to a point: a prefill point's TTFT
// also carries the request overhead.
func model(p *Point, t0, perSeq, req, em, ec float64) float64 {
	y := p.stepMS(t0, perSeq, em, ec)
	if p.Kind == KindPrefill {
		y += req
	}
	return y
}

type candidate struct {
	mem, cmp, t0, perSeq, req, err float64
}

// evaluate solves, for fixed efficiencies, the weighted least squares of
// y_i − (kernel terms + all-reduce) = T0 + seqs_i·perSeq + [prefill]·req
// with weights 1/y_i², every constant at 0 or more, and returns the fit's
// squared relative error. A constant the points cannot tell apart from
// the others (every point of one batch size: perSeq is T0's twin; no
// prefill point: no request overhead) stays 0.
func evaluate(pts []Point, em, ec float64) candidate {
	// Normal equations of the three unknowns (T0, perSeq, req), each point
	// a row (1, seqs, [prefill]) against its residual r.
	var ata [3][3]float64
	var atr [3]float64
	var n int
	for i := range pts {
		p := &pts[i]
		if p.MeasuredMS <= 0 {
			continue
		}
		n++
		w := 1 / (p.MeasuredMS * p.MeasuredMS)
		r := p.MeasuredMS - p.stepMS(0, 0, em, ec)
		row := [3]float64{1, float64(p.seqs()), 0}
		if p.Kind == KindPrefill {
			row[2] = 1
		}
		for j := range 3 {
			atr[j] += w * row[j] * r
			for k := range 3 {
				ata[j][k] += w * row[j] * row[k]
			}
		}
	}
	c := candidate{mem: em, cmp: ec, err: math.Inf(1)}
	if n == 0 {
		c.err = 0
		return c
	}
	// The best solution with every constant >= 0 lies on one of the
	// subsets of free constants (the others at 0): try them all.
	for mask := 0; mask < 8; mask++ {
		x, ok := solveSubset(ata, atr, mask)
		if !ok || x[0] < 0 || x[1] < 0 || x[2] < 0 {
			continue
		}
		var e float64
		for i := range pts {
			p := &pts[i]
			if p.MeasuredMS <= 0 {
				continue
			}
			r := (model(p, x[0], x[1], x[2], em, ec) - p.MeasuredMS) / p.MeasuredMS
			e += r * r
		}
		if e < c.err-1e-15 {
			c.t0, c.perSeq, c.req, c.err = x[0], x[1], x[2], e
		}
	}
	return c
}

// solveSubset solves the normal equations restricted to the unknowns in
// mask (bit j: unknown j free; the others 0) by Gaussian elimination with
// partial pivoting; ok is false when they are singular (an unknown the
// points cannot determine).
func solveSubset(ata [3][3]float64, atr [3]float64, mask int) (x [3]float64, ok bool) {
	var idx []int
	for j := range 3 {
		if mask&(1<<j) != 0 {
			idx = append(idx, j)
		}
	}
	m := len(idx)
	var a [3][4]float64
	scale := 0.0
	for r, j := range idx {
		for c, k := range idx {
			a[r][c] = ata[j][k]
			scale = max(scale, math.Abs(ata[j][k]))
		}
		a[r][m] = atr[j]
	}
	for col := range m {
		piv := col
		for r := col + 1; r < m; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		if math.Abs(a[piv][col]) <= 1e-9*scale {
			return x, false
		}
		a[col], a[piv] = a[piv], a[col]
		for r := range m {
			if r == col {
				continue
			}
			f := a[r][col] / a[col][col]
			for c := col; c <= m; c++ {
				a[r][c] -= f * a[col][c]
			}
		}
	}
	for r, j := range idx {
		x[j] = a[r][m] / a[r][r]
	}
	return x, true
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// boundCounts counts the points with a kernel that each side bounds under
// efficiencies em, ec: the points that inform each efficiency (a large
// decode batch can count on both sides).
func boundCounts(pts []Point, em, ec float64) (mem, cmp int) {
	for i := range pts {
		c, m := pts[i].bound(em, ec)
		if c > 0 {
			cmp++
		}
		if m > 0 {
			mem++
		}
	}
	return mem, cmp
}
