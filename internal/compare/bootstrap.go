package compare

import (
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/knee-dev/knee/internal/record"
)

// maxValues bounds the values per side the bootstrap walks (long runs with
// many tokens): clusters beyond it are dropped, evenly spaced, which keeps
// the answer representative and the comparison fast.
const maxValues = 200_000

// sample is a pooled set of values, sorted, each tagged with the request
// (cluster) it came from, so a resample draws whole requests.
type sample struct {
	values   []float64
	cluster  []int32
	clusters int
}

func (s *sample) n() int { return len(s.values) }

// newSample collects values(r) over measured, completed requests.
func newSample(recs []record.Request, values func(*record.Request) []float64) *sample {
	type vc struct {
		v float64
		c int32
	}
	var all []vc
	var clusters int32
	total := 0
	for i := range recs {
		if !recs[i].Warmup && recs[i].OK() {
			total += len(values(&recs[i]))
		}
	}
	stride := 1
	if total > maxValues {
		stride = (total + maxValues - 1) / maxValues
	}
	k := 0
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !r.OK() {
			continue
		}
		vs := values(r)
		if len(vs) == 0 {
			continue
		}
		k++
		if k%stride != 0 {
			continue
		}
		for _, v := range vs {
			all = append(all, vc{v, clusters})
		}
		clusters++
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	s := &sample{values: make([]float64, len(all)), cluster: make([]int32, len(all)), clusters: int(clusters)}
	for i, x := range all {
		s.values[i], s.cluster[i] = x.v, x.c
	}
	return s
}

type bootstrap struct {
	rng       *rand.Rand
	resamples int
	weights   []int32
}

func newBootstrap(seed uint64, resamples int) *bootstrap {
	return &bootstrap{rng: rand.New(rand.NewPCG(seed, 0x6b6e6565)), resamples: resamples}
}

// draw fills b.weights with how many times each of n clusters was drawn in
// one resample of n with replacement.
func (b *bootstrap) draw(n int) []int32 {
	b.weights = slices.Grow(b.weights[:0], n)[:n]
	clear(b.weights)
	for range n {
		b.weights[b.rng.IntN(n)]++
	}
	return b.weights
}

// quantile is the weighted q-quantile of s (lower value at the rank, so a
// resample's statistic is one of the observed values).
func (s *sample) quantile(q float64, w []int32) float64 {
	var total int64
	if w == nil {
		total = int64(len(s.values))
	} else {
		for i := range s.values {
			total += int64(w[s.cluster[i]])
		}
	}
	if total == 0 {
		return 0
	}
	target := int64(q*float64(total-1)) + 1 // 1-based rank
	var cum int64
	for i, v := range s.values {
		if w == nil {
			cum++
		} else {
			cum += int64(w[s.cluster[i]])
		}
		if cum >= target {
			return v
		}
	}
	return s.values[len(s.values)-1]
}

// quantileDiffCI is the 95% percentile interval of q(B) − q(A).
func (b *bootstrap) quantileDiffCI(a, bb *sample, q float64) (lo, hi float64) {
	diffs := make([]float64, b.resamples)
	for i := range diffs {
		qa := a.quantile(q, b.draw(a.clusters))
		qb := bb.quantile(q, b.draw(bb.clusters))
		diffs[i] = qb - qa
	}
	return interval(diffs)
}

// meanDiffCI is the 95% percentile interval of mean(B) − mean(A).
func (b *bootstrap) meanDiffCI(a, bb []float64) (lo, hi float64) {
	mean := func(xs []float64) float64 {
		w := b.draw(len(xs))
		var s float64
		for i, x := range xs {
			s += float64(w[i]) * x
		}
		return s / float64(len(xs))
	}
	diffs := make([]float64, b.resamples)
	for i := range diffs {
		ma := mean(a)
		mb := mean(bb)
		diffs[i] = mb - ma
	}
	return interval(diffs)
}

func interval(diffs []float64) (lo, hi float64) {
	sort.Float64s(diffs)
	n := len(diffs)
	return diffs[int(0.025*float64(n-1))], diffs[int(0.975*float64(n-1)+0.5)]
}
