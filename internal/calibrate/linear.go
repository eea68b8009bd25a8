package calibrate

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/simengine"
)

// Step models knee calibrate fits.
const (
	// StepModelRoofline fits the roofline's overhead and efficiencies to a
	// GPU server of known hardware and model.
	StepModelRoofline = "roofline"
	// StepModelLinear fits an empirical step time linear in prompt tokens,
	// decoding sequences and attention pairs: for a server that is no GPU
	// preset, such as Ollama on CPUs.
	StepModelLinear = "linear"
)

// linearTerms are the linear model's unknowns in the order of the
// features: the request overhead (in TTFT only), the step's base, its
// cost per prompt token, per decoding sequence and per (new token,
// context token) pair of attention.
const linearTerms = 5

var linearTermNames = [linearTerms]string{"request overhead", "step base", "per prompt token", "per decoding sequence", "per attention pair"}

// linearFeatures is what a point's measured time is made of under the
// linear model: a prefill point is one request's TTFT (request overhead
// plus a step that prefills its prompt of L tokens, L × L attention
// pairs); a decode point is the gap of a step where b sequences of mean
// context ctx each make one token (b tokens over b × (ctx+1) cells, as
// simengine.DecodeShape counts).
func linearFeatures(p *Point) [linearTerms]float64 {
	L := float64(p.InputTokens)
	if p.Kind == KindPrefill {
		return [linearTerms]float64{1, 1, L, 0, L * L}
	}
	b := float64(p.Batch)
	return [linearTerms]float64{0, 1, 0, b, b * b * (L + 1)}
}

// FitLinear fits the linear step model to the points by least squares
// on relative error (weights 1/y², so a 5 ms gap counts as much as a
// 500 ms TTFT), every coefficient kept at 0 or more: a coefficient the
// unconstrained fit makes negative is fixed at 0 and the rest refitted
// (the active-set method for nonnegative least squares, which this
// handful of unknowns makes exact). A coefficient no point varies (no
// prefill points, one batch size) comes out 0 and is named in
// Undetermined. def supplies every cost field the model does not fit.
func FitLinear(pts []Point, def simengine.CostParams) Fit {
	var x [][linearTerms]float64
	var y []float64
	for i := range pts {
		if pts[i].MeasuredMS > 0 {
			x = append(x, linearFeatures(&pts[i]))
			y = append(y, pts[i].MeasuredMS)
		}
	}
	// A feature no point has cannot be fitted; of features no point
	// separates (one batch size: base and per-sequence cost move
	// together), the later, finer one is dropped. A negative coefficient
	// is fixed at 0. Each round drops one, so this ends.
	var free [linearTerms]bool
	for j := range free {
		free[j] = varies(x, j)
	}
	var coef [linearTerms]float64
	for {
		var ok bool
		coef, ok = weightedLS(x, y, free)
		drop := -1
		for j := range coef {
			if free[j] && (!ok || coef[j] < 0 && (drop < 0 || coef[j] < coef[drop])) {
				drop = j // !ok: the last free one
			}
		}
		if drop < 0 {
			break
		}
		free[drop], coef[drop] = false, 0
	}
	lin := simengine.LinearStepCost{BaseNS: coef[1] * 1e6, PerPrefillTokenNS: coef[2] * 1e6, PerDecodeSeqNS: coef[3] * 1e6, PerAttentionPairNS: coef[4] * 1e6}
	lin.PromptCurve = promptCurve(pts, coef)
	lin.DecodeCurve = decodeCurve(pts, coef)
	f := Fit{Cost: def, RequestOverheadMS: coef[0]}
	f.Cost.Linear = &lin
	f.Cost.FrontEndNS, f.Cost.FrontEndPerTokenNS = int64(math.Round(coef[0]*1e6)), 0
	f.StepModel = StepModelLinear
	f.Linear = linearMS(lin)
	var undetermined []string
	for j := range free {
		if !free[j] {
			undetermined = append(undetermined, linearTermNames[j])
		}
	}
	if len(undetermined) > 0 {
		f.Undetermined = "fitted as 0: " + strings.Join(undetermined, ", ")
	}
	for i := range pts {
		p := &pts[i]
		p.FittedMS, p.Bound = dot(linearFeatures(p), coef), StepModelLinear
		if len(lin.PromptCurve) > 0 && p.Kind == KindPrefill || len(lin.DecodeCurve) > 0 && p.Kind == KindDecode {
			p.FittedMS = curveFitted(p, coef, lin)
		}
	}
	f.RMSRelError, f.MaxRelError = fitErrors(pts)
	return f
}

// promptCurve is the measured time of a lone prompt's step against its
// length (simengine.LinearStepCost.PromptCurve): a prefill point's TTFT
// less the request overhead and its attention. Nil with fewer than two
// lengths.
func promptCurve(pts []Point, coef [linearTerms]float64) []simengine.CurvePoint {
	return measuredCurve(pts, KindPrefill, func(p *Point) int64 { return int64(p.InputTokens) }, coef)
}

// decodeCurve is the measured time of a decode step against its decoding
// sequences (simengine.LinearStepCost.DecodeCurve): a decode point's gap
// less its attention, points of one batch (short and long contexts)
// averaged. Nil with fewer than two batch sizes.
func decodeCurve(pts []Point, coef [linearTerms]float64) []simengine.CurvePoint {
	return measuredCurve(pts, KindDecode, func(p *Point) int64 { return int64(p.Batch) }, coef)
}

// measuredCurve is the curve of one kind of point's step time (the
// measurement less the request overhead and attention) against key:
// points of one key are averaged, and the curve made nondecreasing (pool
// adjacent violators: more tokens never take less time; what noise puts
// out of order is averaged, not dropped). Nil with fewer than two keys.
func measuredCurve(pts []Point, kind string, key func(*Point) int64, coef [linearTerms]float64) []simengine.CurvePoint {
	sum := map[int64]float64{}
	count := map[int64]float64{}
	for i := range pts {
		p := &pts[i]
		if p.Kind != kind || p.MeasuredMS <= 0 {
			continue
		}
		n, f := key(p), linearFeatures(p)
		sum[n] += p.MeasuredMS - coef[0]*f[0] - coef[4]*f[4]
		count[n]++
	}
	if len(sum) < 2 {
		return nil
	}
	type block struct {
		tokens []int64
		ms, w  float64
	}
	var blocks []block
	for _, n := range slices.Sorted(maps.Keys(sum)) {
		blocks = append(blocks, block{tokens: []int64{n}, ms: sum[n] / count[n], w: count[n]})
		for len(blocks) > 1 && blocks[len(blocks)-2].ms > blocks[len(blocks)-1].ms {
			a, b := blocks[len(blocks)-2], blocks[len(blocks)-1]
			blocks = append(blocks[:len(blocks)-2], block{tokens: append(a.tokens, b.tokens...), ms: (a.ms*a.w + b.ms*b.w) / (a.w + b.w), w: a.w + b.w})
		}
	}
	var c []simengine.CurvePoint
	for _, b := range blocks {
		for _, n := range b.tokens {
			c = append(c, simengine.CurvePoint{Tokens: n, NS: max(b.ms, 0) * 1e6})
		}
	}
	return c
}

// curveFitted is what the curves give for a point: a prefill point's
// prompt step, or a decode point's step, plus its request overhead and
// attention.
func curveFitted(p *Point, coef [linearTerms]float64, lin simengine.LinearStepCost) float64 {
	f := linearFeatures(p)
	shape, decode := simengine.StepShape{NewTokens: int64(p.InputTokens)}, int64(0)
	if p.Kind == KindDecode {
		shape, decode = simengine.StepShape{NewTokens: int64(p.Batch)}, int64(p.Batch)
	}
	return coef[0]*f[0] + coef[4]*f[4] + lin.LinearStepNS(shape, decode)/1e6
}

// varies says whether feature j is nonzero at some point (else nothing
// measured it).
func varies(x [][linearTerms]float64, j int) bool {
	for _, r := range x {
		if r[j] != 0 {
			return true
		}
	}
	return false
}

func dot(a, b [linearTerms]float64) float64 {
	var s float64
	for j := range a {
		s += a[j] * b[j]
	}
	return s
}

// weightedLS solves min Σ ((x_i·c − y_i)/y_i)² over the free coefficients
// (the others 0) by the normal equations, Gaussian elimination with
// partial pivoting. ok is false when they are singular (a free feature no
// point separates from the others); the singular ones come out 0.
func weightedLS(x [][linearTerms]float64, y []float64, free [linearTerms]bool) (c [linearTerms]float64, ok bool) {
	var idx []int
	for j, f := range free {
		if f {
			idx = append(idx, j)
		}
	}
	n := len(idx)
	a := make([][]float64, n)
	for r := range a {
		a[r] = make([]float64, n+1)
	}
	for i := range x {
		w := 1 / (y[i] * y[i])
		for r, jr := range idx {
			for k, jk := range idx {
				a[r][k] += w * x[i][jr] * x[i][jk]
			}
			a[r][n] += w * x[i][jr] * y[i]
		}
	}
	ok = true
	for col := range n {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		a[col], a[piv] = a[piv], a[col]
		scale := 0.0
		for k := range n {
			scale = max(scale, math.Abs(a[col][k]))
		}
		if scale == 0 || math.Abs(a[col][col]) <= 1e-12*scale {
			ok = false
			continue
		}
		for r := range n {
			if r != col && a[r][col] != 0 {
				m := a[r][col] / a[col][col]
				for k := col; k <= n; k++ {
					a[r][k] -= m * a[col][k]
				}
			}
		}
	}
	for r, j := range idx {
		if a[r][r] != 0 && ok {
			c[j] = a[r][n] / a[r][r]
		}
	}
	return c, ok
}
