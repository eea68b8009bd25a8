package stats

import (
	"math"
	"math/bits"
	"slices"
)

// Precision of the log-linear histograms. With precisionBits = 10 every
// bucket above 2048 ns is at most 1/1024 of its lower bound wide, so a value
// read back as its bucket's midpoint is within 0.05% of the true value (the
// brief asks for <= 0.1%). Values below 2048 ns are exact.
const (
	precisionBits = 10
	// exactLimit is how many values a histogram keeps verbatim before
	// folding them into buckets: small runs (and the tests) get exact
	// percentiles, large ones bounded memory.
	exactLimit = 2048
)

// hist is a streaming distribution of non-negative int64 values (nanoseconds
// or token counts), HdrHistogram-like: it keeps the first exactLimit values
// exactly, then switches to log-linear buckets of bounded relative error.
// Infinite values (failed requests in "adjusted" percentiles) are counted
// apart and sort after every finite value. Not safe for concurrent use.
type hist struct {
	prec     uint // sub-bucket bits: relative bucket width <= 2^-prec
	limit    int  // values kept exactly before bucketing
	exact    []int64
	sorted   bool
	counts   []uint64 // nil while exact; counts[i] is bucket base+i
	base     int
	n        uint64 // finite values
	inf      uint64 // infinite values
	sum      float64
	min, max int64
}

func newHist(prec uint, limit int) *hist { return &hist{prec: prec, limit: limit} }

// add records one finite value; negative values are clamped to zero (a
// clock step can make a tiny negative gap; it is not a latency).
func (h *hist) add(v int64) {
	v = h.note(v, 1)
	if h.counts == nil {
		if len(h.exact) < h.limit {
			h.exact = append(h.exact, v)
			h.sorted = false
			return
		}
		h.fold()
	}
	h.bump(v)
}

// addN records n copies of one finite value.
func (h *hist) addN(v int64, n uint64) {
	if n == 0 {
		return
	}
	if h.counts == nil && len(h.exact)+int(min(n, uint64(h.limit)+1)) <= h.limit {
		for range n {
			h.add(v)
		}
		return
	}
	v = h.note(v, n)
	if h.counts == nil {
		if len(h.exact) == 0 {
			h.base, h.counts = bucketOf(uint64(v), h.prec), make([]uint64, 1)
		} else {
			h.fold()
		}
	}
	h.bumpN(v, n)
}

// note folds n copies of v (clamped at zero, and returned) into the count,
// sum and extremes.
func (h *hist) note(v int64, n uint64) int64 {
	v = max(v, 0)
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if h.n == 0 || v > h.max {
		h.max = v
	}
	h.n += n
	h.sum += float64(v) * float64(n)
	return v
}

// addInf records one infinitely slow value.
func (h *hist) addInf() { h.inf++ }

// fold moves the exact values into buckets.
func (h *hist) fold() {
	slices.Sort(h.exact)
	lo, hi := bucketOf(uint64(h.exact[0]), h.prec), bucketOf(uint64(h.exact[len(h.exact)-1]), h.prec)
	h.base, h.counts = lo, make([]uint64, hi-lo+1)
	for _, v := range h.exact {
		h.bump(v)
	}
	h.exact = nil
}

// bump counts v. Only the span of buckets between the smallest and largest
// value is allocated: latencies cluster, so that is a few hundred buckets,
// not the tens of thousands a full range from 0 would take.
func (h *hist) bump(v int64) { h.bumpN(v, 1) }

// bumpN counts n copies of v.
func (h *hist) bumpN(v int64, n uint64) {
	i := bucketOf(uint64(v), h.prec)
	switch {
	case i < h.base:
		// Grow downwards with slack so a falling sequence stays linear.
		grow := max(h.base-i, len(h.counts)/2)
		grow = min(grow, h.base)
		c := make([]uint64, grow+len(h.counts))
		copy(c[grow:], h.counts)
		h.counts, h.base = c, h.base-grow
	case i >= h.base+len(h.counts):
		h.counts = append(h.counts, make([]uint64, i+1-h.base-len(h.counts))...)
	}
	h.counts[i-h.base] += n
}

// bucketOf maps v to its bucket: values below 2^(prec+1) have their own
// bucket; above, each power of two is split into 2^prec equal buckets.
func bucketOf(v uint64, prec uint) int {
	sub := uint64(1) << prec
	if v < 2*sub {
		return int(v)
	}
	e := uint(bits.Len64(v)) - (prec + 1)
	return int(2*sub + uint64(e-1)*sub + (v>>e - sub))
}

// bucketBounds returns the half-open range [lo, lo+width) of bucket i.
func bucketBounds(i int, prec uint) (lo, width uint64) {
	sub := uint64(1) << prec
	if uint64(i) < 2*sub {
		return uint64(i), 1
	}
	j := uint64(i) - 2*sub
	e := uint(j/sub) + 1
	m := j%sub + sub
	return m << e, 1 << e
}

// count is the number of values, infinite ones included.
func (h *hist) count() uint64 { return h.n + h.inf }

// mean of all values; +Inf when any value is infinite.
func (h *hist) mean() float64 {
	switch {
	case h.inf > 0:
		return math.Inf(1)
	case h.n == 0:
		return 0
	}
	return h.sum / float64(h.n)
}

// at returns the k-th smallest value (0-based). Bucketed values are read as
// the bucket's midpoint, clamped to the exact min and max.
func (h *hist) at(k uint64) float64 {
	if k >= h.n {
		return math.Inf(1)
	}
	if h.counts == nil {
		if !h.sorted {
			slices.Sort(h.exact)
			h.sorted = true
		}
		return float64(h.exact[k])
	}
	if k == 0 {
		return float64(h.min)
	}
	if k == h.n-1 {
		return float64(h.max)
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > k {
			lo, w := bucketBounds(h.base+i, h.prec)
			v := float64(lo) + float64(w-1)/2
			return math.Min(math.Max(v, float64(h.min)), float64(h.max))
		}
	}
	return float64(h.max)
}

// quantile returns the q-quantile (0 <= q <= 1) with linear interpolation
// between closest ranks: numpy's default, which vLLM's benchmark uses, so
// the figures are comparable. Zero when empty.
func (h *hist) quantile(q float64) float64 {
	total := h.count()
	if total == 0 {
		return 0
	}
	pos := q * float64(total-1)
	lo := uint64(math.Floor(pos))
	frac := pos - float64(lo)
	a := h.at(lo)
	if frac == 0 || lo+1 >= total {
		return a
	}
	b := h.at(lo + 1)
	if math.IsInf(b, 1) {
		return b
	}
	return a + frac*(b-a)
}

// dist summarises the histogram, scaling each value by scale (1e-6 turns
// nanoseconds into milliseconds; 1 leaves token counts as they are).
func (h *hist) dist(scale float64) Dist {
	if h.count() == 0 {
		return Dist{}
	}
	max := math.Inf(1)
	if h.inf == 0 {
		max = float64(h.max)
	}
	// Rounded to a millionth of the unit (a nanosecond in ms): finer
	// digits are interpolation noise and make reports hard to read.
	r := func(v float64) float64 {
		if math.IsInf(v, 0) {
			return v
		}
		return math.Round(v*scale*1e6) / 1e6
	}
	return Dist{
		Count: int(h.count()),
		Mean:  r(h.mean()),
		P50:   r(h.quantile(0.50)),
		P90:   r(h.quantile(0.90)),
		P95:   r(h.quantile(0.95)),
		P99:   r(h.quantile(0.99)),
		P999:  r(h.quantile(0.999)),
		Max:   r(max),
	}
}
