package simserver

import (
	"sync"
	"time"
)

// LagStats summarises pacing lag: the wall time just before the write(2)
// that carried each token (its write_times_ms entry) minus the token's
// simulated emission time.
type LagStats struct {
	Tokens int64         `json:"tokens"`
	P50    time.Duration `json:"-"`
	P99    time.Duration `json:"-"`
	Max    time.Duration `json:"-"`
	P50MS  float64       `json:"p50_ms"`
	P99MS  float64       `json:"p99_ms"`
	MaxMS  float64       `json:"max_ms"`
}

// lagHist is a fixed-bucket histogram: 1 µs buckets up to 4.096 ms, then
// 256 µs buckets up to 1 s; the maximum is exact. Recording is a few ns.
type lagHist struct {
	mu     sync.Mutex
	counts [lagFine + lagCoarse + 1]int64
	n      int64
	max    int64
}

const (
	lagFine   = 4096 // 1 µs buckets
	lagCoarse = 3890 // 256 µs buckets above lagFine µs, up to ~1 s
)

func lagBucket(ns int64) int {
	us := ns / 1000
	switch {
	case us < 0:
		return 0
	case us < lagFine:
		return int(us)
	}
	c := (us - lagFine) / 256
	if c >= lagCoarse {
		return lagFine + lagCoarse
	}
	return lagFine + int(c)
}

// bucketUpper is the upper edge of bucket i in ns (what a percentile reports).
func bucketUpper(i int) int64 {
	if i < lagFine {
		return int64(i+1) * 1000
	}
	return (lagFine + int64(i-lagFine+1)*256) * 1000
}

// add records one lateness; the caller holds mu.
func (h *lagHist) add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.counts[lagBucket(ns)]++
	h.n++
	if ns > h.max {
		h.max = ns
	}
}

func (h *lagHist) reset() {
	h.mu.Lock()
	h.counts = [len(h.counts)]int64{}
	h.n, h.max = 0, 0
	h.mu.Unlock()
}

// mergeLag summarises several histograms (one per writer).
func mergeLag(hs []*lagHist) LagStats {
	var all lagHist
	for _, h := range hs {
		h.mu.Lock()
		for i, c := range h.counts {
			all.counts[i] += c
		}
		all.n += h.n
		all.max = max(all.max, h.max)
		h.mu.Unlock()
	}
	st := LagStats{Tokens: all.n, Max: time.Duration(all.max)}
	if all.n == 0 {
		return st
	}
	q := func(p float64) time.Duration {
		rank := int64(p*float64(all.n-1)) + 1
		var c int64
		for i, v := range all.counts {
			c += v
			if c >= rank {
				return time.Duration(min(bucketUpper(i), all.max))
			}
		}
		return time.Duration(all.max)
	}
	st.P50, st.P99 = q(0.50), q(0.99)
	st.P50MS, st.P99MS, st.MaxMS = float64(st.P50)/1e6, float64(st.P99)/1e6, float64(st.Max)/1e6
	return st
}
