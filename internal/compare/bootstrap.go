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

// sample is a pooled set of values, sorted, each tagged with the block of
// requests (cluster) it came from, so a resample draws whole blocks.
type sample struct {
	values   []float64
	cluster  []int32
	clusters int
}

func (s *sample) n() int { return len(s.values) }

// Blocks is how many blocks of consecutive requests (by send time) a run's
// requests are grouped into for resampling. Requests close in time share
// the server's state (queue depth, batch), so they are not independent;
// resampling whole blocks keeps that correlation and widens the interval
// accordingly.
const Blocks = 40

// newSample collects values(r) over measured, completed requests, tagged
// with the block of their request.
func newSample(recs []record.Request, values func(*record.Request) []float64) *sample {
	type vc struct {
		v float64
		c int32
	}
	var order []int
	total := 0
	for i := range recs {
		if !recs[i].Warmup && recs[i].OK() {
			order = append(order, i)
			total += len(values(&recs[i]))
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return recs[order[a]].Sent < recs[order[b]].Sent })
	stride := 1
	if total > maxValues {
		stride = (total + maxValues - 1) / maxValues
	}
	blocks := min(Blocks, len(order))
	var all []vc
	for k, i := range order {
		if k%stride != 0 {
			continue
		}
		block := int32(k * blocks / len(order))
		for _, v := range values(&recs[i]) {
			all = append(all, vc{v, block})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	s := &sample{values: make([]float64, len(all)), cluster: make([]int32, len(all)), clusters: blocks}
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
