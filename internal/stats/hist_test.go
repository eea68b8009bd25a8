package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBucketBoundsContainValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := rng.Uint64N(1 << uint(rng.IntN(62)+1))
		i := bucketOf(v, precisionBits)
		lo, w := bucketBounds(i, precisionBits)
		if v < lo || v >= lo+w {
			t.Fatalf("v=%d in bucket %d = [%d,%d)", v, i, lo, lo+w)
		}
		if v >= 2048 && float64(w)/float64(lo) > 1.0/1024+1e-12 {
			t.Fatalf("bucket %d width %d at %d: relative width %.5f > 1/1024", i, w, lo, float64(w)/float64(lo))
		}
	}
	// Buckets are contiguous and ordered.
	for i := 1; i < 40000; i++ {
		lo0, w0 := bucketBounds(i-1, precisionBits)
		lo1, _ := bucketBounds(i, precisionBits)
		if lo0+w0 != lo1 {
			t.Fatalf("gap between bucket %d and %d: %d+%d != %d", i-1, i, lo0, w0, lo1)
		}
	}
}

// numpyQuantile is the reference definition (numpy's "linear" method).
func numpyQuantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func TestQuantileExactMatchesNumpy(t *testing.T) {
	h := newHist(precisionBits, exactLimit)
	for _, v := range []int64{4, 1, 3, 2} {
		h.add(v)
	}
	for _, c := range []struct{ q, want float64 }{
		{0.5, 2.5}, {0.9, 3.7}, {0, 1}, {1, 4}, {0.25, 1.75},
	} {
		if got := h.quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("q%.2f of 1..4 = %v, want %v", c.q, got, c.want)
		}
	}
	if h.mean() != 2.5 {
		t.Errorf("mean = %v, want 2.5", h.mean())
	}
}

func TestQuantileBucketedWithinRelativeError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := newHist(precisionBits, exactLimit)
	vals := make([]float64, 0, 200000)
	for range 200000 {
		// Log-normal latencies around 50 ms, spread over decades.
		v := int64(math.Exp(rng.NormFloat64()*1.5 + math.Log(50e6)))
		h.add(v)
		vals = append(vals, float64(v))
	}
	if h.counts == nil {
		t.Fatal("histogram did not switch to buckets beyond exactLimit")
	}
	slices.Sort(vals)
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
		want := numpyQuantile(vals, q)
		got := h.quantile(q)
		if rel := math.Abs(got-want) / want; rel > 0.001 {
			t.Errorf("q%.3f = %.0f, exact %.0f: relative error %.5f > 0.1%%", q, got, want, rel)
		}
	}
	var sum float64
	for _, v := range vals {
		sum += v
	}
	if got, want := h.mean(), sum/float64(len(vals)); math.Abs(got-want)/want > 1e-9 {
		t.Errorf("mean = %v, want %v (mean is exact)", got, want)
	}
	if len(h.counts) > 50000 {
		t.Errorf("histogram grew to %d buckets", len(h.counts))
	}
}

func TestQuantileWithInfinities(t *testing.T) {
	h := newHist(precisionBits, exactLimit)
	h.addInf()
	for v := int64(1); v <= 9; v++ {
		h.add(v)
	}
	// Sorted: 1..9, +Inf. p50 at position 4.5 → 5.5; p95 at 8.55 → between 9 and +Inf.
	if got := h.quantile(0.5); got != 5.5 {
		t.Errorf("p50 = %v, want 5.5", got)
	}
	if got := h.quantile(0.95); !math.IsInf(got, 1) {
		t.Errorf("p95 = %v, want +Inf", got)
	}
	if got := h.quantile(0.8); got != 8.2 {
		t.Errorf("p80 = %v, want 8.2", got)
	}
	d := h.dist(1)
	if d.Count != 10 || !math.IsInf(d.Max, 1) || !math.IsInf(d.Mean, 1) {
		t.Errorf("dist = %+v, want count 10 and infinite max and mean", d)
	}
	if h.min != 1 {
		t.Errorf("min = %d, want 1 (an infinity added first must not pin min to 0)", h.min)
	}
}

func TestBucketsGrowDownwards(t *testing.T) {
	// A falling sequence extends the bucket span below its base again and
	// again; the histogram must stay correct (and linear in cost).
	h := newHist(precisionBits, 16)
	var vals []float64
	for v := int64(5e9); v > 1e5; v = v * 97 / 100 {
		h.add(v)
		vals = append(vals, float64(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 0.99, 1} {
		want, got := numpyQuantile(vals, q), h.quantile(q)
		if math.Abs(got-want)/want > 0.001 {
			t.Errorf("q%.2f = %.0f, want %.0f", q, got, want)
		}
	}
}

func TestSeriesPercentilesBeyondExactLimit(t *testing.T) {
	// 1000 TTFTs in one second exceed the per-second exact buffer (64):
	// the coarse buckets still place p50/p95 within 1%.
	h := newHist(7, 64)
	for i := 1; i <= 1000; i++ {
		h.add(int64(i) * 1e6) // 1..1000 ms
	}
	if p50 := h.quantile(0.5) / 1e6; math.Abs(p50-500.5)/500.5 > 0.01 {
		t.Errorf("p50 = %v ms, want ~500.5", p50)
	}
	if p95 := h.quantile(0.95) / 1e6; math.Abs(p95-950.05)/950.05 > 0.01 {
		t.Errorf("p95 = %v ms, want ~950", p95)
	}
}

// addN(v, n) is n calls of add(v), across the switch from exact values to
// buckets (before it, on it, and from an empty histogram).
func TestHistAddNMatchesAdd(t *testing.T) {
	for _, c := range []struct {
		name   string
		before int
		n      uint64
	}{{"all exact", 10, 100}, {"crosses the limit", 2000, 100}, {"empty, many", 0, 50_000}, {"bucketed", 5000, 7}} {
		one, many := newHist(precisionBits, exactLimit), newHist(precisionBits, exactLimit)
		for i := range c.before {
			v := int64(1_000_000 + 977*i)
			one.add(v)
			many.add(v)
		}
		for range c.n {
			one.add(8_867_839)
		}
		many.addN(8_867_839, c.n)
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
			if a, b := one.quantile(q), many.quantile(q); a != b {
				t.Errorf("%s: quantile %v: add %v, addN %v", c.name, q, a, b)
			}
		}
		if one.n != many.n || one.sum != many.sum || one.min != many.min || one.max != many.max {
			t.Errorf("%s: n/sum/min/max %v/%v/%v/%v vs %v/%v/%v/%v", c.name, one.n, one.sum, one.min, one.max, many.n, many.sum, many.min, many.max)
		}
	}
}
