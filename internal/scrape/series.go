package scrape

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Sample is one scrape: gauges and counters by knee's names, histograms
// with their cumulative buckets. A failed scrape keeps only TMS and Err.
type Sample struct {
	TMS    float64            `json:"t_ms"` // milliseconds since the run start
	Values map[Metric]float64 `json:"values,omitempty"`
	Hists  map[Metric]*Hist   `json:"hists,omitempty"`
	// GPUs are a dcgm-exporter's GPUs (a GPU scrape, Config.GPU).
	GPUs []GPUReading `json:"gpus,omitempty"`
	Err  string       `json:"error,omitempty"`
}

// OK reports whether the scrape succeeded.
func (s *Sample) OK() bool { return s.Err == "" }

// Hist is a cumulative histogram as exposed: upper bounds in the server's
// unit (seconds), cumulative counts at each, and the total count and sum.
// A summary has Count and Sum only.
type Hist struct {
	LE    []float64 `json:"le,omitempty"`
	Cum   []float64 `json:"cum,omitempty"`
	Count float64   `json:"count"`
	Sum   float64   `json:"sum"`
}

// Series is what a run scraped.
type Series struct {
	URL        string   `json:"url"`
	Server     string   `json:"server"` // table that matched; "" when none did
	IntervalMS float64  `json:"interval_ms"`
	Samples    []Sample `json:"samples"`
	Notes      []string `json:"notes,omitempty"`
	// OriginUnixNS is the wall-clock time samples count from.
	OriginUnixNS int64 `json:"origin_unix_ns"`
	// GPU: a dcgm-exporter's series (Config.GPU); Server is then "dcgm".
	GPU bool `json:"gpu,omitempty"`
}

// HistStats summarizes a histogram delta in milliseconds. Percentiles are
// interpolated within buckets as Prometheus' histogram_quantile does, so
// they are only as fine as the server's buckets; Mean is exact (sum/count).
type HistStats struct {
	Count  float64 `json:"count"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms,omitempty"`
	P90MS  float64 `json:"p90_ms,omitempty"`
	P95MS  float64 `json:"p95_ms,omitempty"`
	P99MS  float64 `json:"p99_ms,omitempty"`
	// Buckets: false for a summary (mean only).
	Buckets bool `json:"buckets"`
	// LEMS are the bucket bounds in ms, to say how coarse a percentile is.
	LEMS []float64 `json:"le_ms,omitempty"`
	// CountOverLastBound counts observations in the open-ended +Inf
	// bucket: a percentile whose rank falls there is only known to be at
	// least the last finite bound (OverLastBound), which the P fields then
	// hold.
	CountOverLastBound float64 `json:"count_over_last_bound,omitempty"`
}

// OverLastBound reports whether percentile q (0-1) falls in the +Inf
// bucket, so that all the histogram says of it is "≥ last" (ms).
func (h HistStats) OverLastBound(q float64) (last float64, over bool) {
	if len(h.LEMS) == 0 || h.CountOverLastBound <= 0 {
		return 0, false
	}
	return h.LEMS[len(h.LEMS)-1], q*h.Count > h.Count-h.CountOverLastBound+1e-9
}

// Coarse reports whether the bucket holding v (ms) is wider than v itself,
// so that an interpolated percentile there says little more than "at most
// hi"; hi is that bucket's upper bound.
func (h HistStats) Coarse(v float64) (hi float64, coarse bool) {
	lo := 0.0
	for _, b := range h.LEMS {
		if v <= b+1e-9 {
			return b, b-lo > v
		}
		lo = b
	}
	return v, false
}

// GaugeStats are a gauge's readings over a window.
type GaugeStats struct {
	Mean  float64 `json:"mean"`
	Max   float64 `json:"max"`
	Last  float64 `json:"last"`
	First float64 `json:"first"`
	N     int     `json:"n"`
}

// Window is the server's view of one span of the run.
type Window struct {
	// FromMS, ToMS: the scrapes the deltas run between (the nearest ones
	// around the span asked for).
	FromMS  float64 `json:"from_ms"`
	ToMS    float64 `json:"to_ms"`
	Scrapes int     `json:"scrapes"` // successful scrapes in the span
	Failed  int     `json:"failed"`  // failed scrapes in the span
	Resets  int     `json:"resets"`  // counter or histogram resets seen (server restarts)

	Hists  map[Metric]HistStats  `json:"hists,omitempty"`
	Gauges map[Metric]GaugeStats `json:"gauges,omitempty"`
	Deltas map[Metric]float64    `json:"deltas,omitempty"` // counter increases

	PromptTPS     *float64 `json:"prompt_tps,omitempty"`
	GenerationTPS *float64 `json:"generation_tps,omitempty"`
	PrefixHitRate *float64 `json:"prefix_hit_rate,omitempty"`
	// WaitingGrowing: the waiting queue rose through the span without
	// draining (see WaitingGrows).
	WaitingGrowing bool `json:"waiting_growing,omitempty"`
}

// Window computes the server's view between fromMS and toMS (run time).
// Deltas run from the last scrape at or before fromMS (else the first) to
// the first scrape at or after toMS (else the last), so every request that
// finished in the span is counted. Nil when fewer than two scrapes
// succeeded.
func (s *Series) Window(fromMS, toMS float64) *Window {
	var ok []int
	for i := range s.Samples {
		if s.Samples[i].OK() {
			ok = append(ok, i)
		}
	}
	if len(ok) < 2 {
		return nil
	}
	a, b := 0, len(ok)-1
	for k, i := range ok {
		if s.Samples[i].TMS <= fromMS {
			a = k
		}
	}
	for k := len(ok) - 1; k >= 0; k-- {
		if s.Samples[ok[k]].TMS >= toMS {
			b = k
		}
	}
	if b <= a {
		if a+1 < len(ok) {
			b = a + 1
		} else {
			a = b - 1
		}
	}
	span := ok[a : b+1]
	w := &Window{FromMS: s.Samples[span[0]].TMS, ToMS: s.Samples[span[len(span)-1]].TMS, Scrapes: len(span)}
	for i := span[0]; i <= span[len(span)-1]; i++ {
		if !s.Samples[i].OK() {
			w.Failed++
		}
	}
	resetAt := map[int]bool{} // pairs (by index) where something fell
	// Counters: sum of increases; a decrease is a restart from zero.
	for i := 1; i < len(span); i++ {
		p, c := &s.Samples[span[i-1]], &s.Samples[span[i]]
		reset := false
		for m, v := range c.Values {
			if !isCounter(m) {
				continue
			}
			// A counter absent before counts from zero: client libraries
			// create labelled series, and SGLang its retraction counter,
			// at the first event.
			pv := p.Values[m]
			d := v - pv
			if d < 0 {
				d, reset = v, true
			}
			if w.Deltas == nil {
				w.Deltas = map[Metric]float64{}
			}
			w.Deltas[m] += d
		}
		if reset {
			resetAt[i] = true
		}
	}
	// Histograms: bucket by bucket the same way.
	hd := map[Metric]*Hist{}
	for i := 1; i < len(span); i++ {
		p, c := &s.Samples[span[i-1]], &s.Samples[span[i]]
		reset := false
		for m, h := range c.Hists {
			ph := p.Hists[m]
			if ph == nil {
				ph = &Hist{LE: h.LE, Cum: make([]float64, len(h.Cum))} // first seen: from zero
			}
			d, r := histDelta(ph, h)
			reset = reset || r
			if acc := hd[m]; acc == nil {
				hd[m] = d
			} else if sameBounds(acc.LE, d.LE) {
				for j := range acc.Cum {
					acc.Cum[j] += d.Cum[j]
				}
				acc.Count += d.Count
				acc.Sum += d.Sum
			}
		}
		if reset {
			resetAt[i] = true
		}
	}
	w.Resets = len(resetAt)
	for m, h := range hd {
		if h.Count <= 0 {
			continue
		}
		if w.Hists == nil {
			w.Hists = map[Metric]HistStats{}
		}
		w.Hists[m] = h.stats()
	}
	// Gauges: every scrape in the span.
	for _, m := range []Metric{Running, Waiting, KVUsage, PrefixHitRate} {
		var g GaugeStats
		var vals []float64
		for _, i := range span {
			if v, has := s.Samples[i].Values[m]; has {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		g.N, g.First, g.Last = len(vals), vals[0], vals[len(vals)-1]
		for _, v := range vals {
			g.Mean += v / float64(len(vals))
			g.Max = math.Max(g.Max, v)
		}
		if w.Gauges == nil {
			w.Gauges = map[Metric]GaugeStats{}
		}
		w.Gauges[m] = g
		if m == Waiting {
			w.WaitingGrowing = WaitingGrows(vals)
		}
	}
	if sec := (w.ToMS - w.FromMS) / 1000; sec > 0 {
		if d, has := w.Deltas[PromptTokens]; has {
			w.PromptTPS = ptr(d / sec)
		}
		if d, has := w.Deltas[GenerationTokens]; has {
			w.GenerationTPS = ptr(d / sec)
		}
	}
	if q := w.Deltas[PrefixQueries]; q > 0 {
		w.PrefixHitRate = ptr(w.Deltas[PrefixHits] / q)
	} else if q := w.Deltas[PromptTokens]; q > 0 && w.Deltas[PrefixHits] > 0 {
		w.PrefixHitRate = ptr(w.Deltas[PrefixHits] / q) // SGLang: cached of all prompt tokens
	} else if g, has := w.Gauges[PrefixHitRate]; has {
		w.PrefixHitRate = ptr(g.Mean)
	}
	return w
}

func ptr(v float64) *float64 { return &v }

func isCounter(m Metric) bool {
	switch m {
	case Running, Waiting, KVUsage, PrefixHitRate:
		return false
	}
	return true
}

// histDelta is c − p, or c itself when the count fell or the buckets changed
// (the server restarted).
func histDelta(p, c *Hist) (*Hist, bool) {
	if c.Count < p.Count || !sameBounds(p.LE, c.LE) {
		d := *c
		d.LE = append([]float64(nil), c.LE...)
		d.Cum = append([]float64(nil), c.Cum...)
		return &d, true
	}
	d := &Hist{LE: append([]float64(nil), c.LE...), Count: c.Count - p.Count, Sum: c.Sum - p.Sum}
	d.Cum = make([]float64, len(c.Cum))
	for i := range c.Cum {
		d.Cum[i] = math.Max(c.Cum[i]-p.Cum[i], 0)
	}
	return d, false
}

func (h *Hist) stats() HistStats {
	st := HistStats{Count: h.Count, MeanMS: 1000 * h.Sum / h.Count, Buckets: len(h.LE) > 0}
	for _, b := range h.LE {
		st.LEMS = append(st.LEMS, 1000*b)
	}
	if st.Buckets {
		if n := len(h.Cum); n > 0 {
			st.CountOverLastBound = max(h.Count-h.Cum[n-1], 0)
		}
		st.P50MS = 1000 * h.Quantile(0.50)
		st.P90MS = 1000 * h.Quantile(0.90)
		st.P95MS = 1000 * h.Quantile(0.95)
		st.P99MS = 1000 * h.Quantile(0.99)
	}
	return st
}

// Quantile interpolates linearly within the bucket holding rank q·count (the
// first bucket starts at 0); a rank beyond the last finite bound gives that
// bound. NaN when empty or bucketless.
func (h *Hist) Quantile(q float64) float64 {
	if h.Count <= 0 || len(h.LE) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	i := sort.Search(len(h.Cum), func(i int) bool { return h.Cum[i] >= rank })
	if i >= len(h.LE) {
		return h.LE[len(h.LE)-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = h.LE[i-1], h.Cum[i-1]
	} else if h.LE[0] < 0 {
		return h.LE[0]
	}
	in := h.Cum[i] - below
	if in <= 0 {
		return h.LE[i]
	}
	return lo + (h.LE[i]-lo)*(rank-below)/in
}

// WaitingGrows reports whether a waiting-queue gauge, read in order, rose
// without draining: at least 4 readings, the last third's mean at least
// twice the first third's and at least 8 more, and no reading back at zero
// after the first third.
func WaitingGrows(v []float64) bool {
	n := len(v)
	if n < 4 {
		return false
	}
	third := max(n/3, 1)
	mean := func(x []float64) float64 {
		s := 0.0
		for _, y := range x {
			s += y
		}
		return s / float64(len(x))
	}
	first, last := mean(v[:third]), mean(v[n-third:])
	if last < 2*first || last-first < 8 {
		return false
	}
	for _, y := range v[third:] {
		if y == 0 {
			return false
		}
	}
	return true
}

// Summarize turns a run's scrape record into plain notes: failed scrapes,
// resets, missing series, an unknown server.
func (s *Series) Summarize() {
	failed, firstErr := 0, ""
	okN := 0
	for _, x := range s.Samples {
		if x.OK() {
			okN++
		} else {
			failed++
			if firstErr == "" {
				firstErr = x.Err
			}
		}
	}
	add := func(f string, a ...any) { s.Notes = append(s.Notes, fmt.Sprintf(f, a...)) }
	if failed > 0 {
		add("%d of %d scrapes of %s failed (first: %s)", failed, len(s.Samples), s.URL, firstErr)
	}
	if okN == 0 || s.GPU {
		return // a GPU series' own notes come with its view (NewGPUView)
	}
	if s.Server == "" {
		add("unknown server at %s: /metrics has none of the names of vLLM, SGLang, TGI, llama.cpp's server or knee serve; the server view is left out", s.URL)
		return
	}
	if okN < 2 {
		add("only one successful scrape: no deltas; the server view needs two (run longer than --metrics-interval)")
	}
	// Missing series: which of the headline metrics this server never gave.
	have := map[Metric]bool{}
	for _, x := range s.Samples {
		for m := range x.Values {
			have[m] = true
		}
		for m := range x.Hists {
			have[m] = true
		}
	}
	var missing []string
	for _, m := range headline {
		if !have[m] {
			missing = append(missing, string(m))
		}
	}
	if len(missing) > 0 {
		add("%s exposed no %v series at %s (left out of the server view)", ServerLabel(s.Server), missing, s.URL)
	}
	if w := s.Window(math.Inf(-1), math.Inf(1)); w != nil && w.Resets > 0 {
		add("counters fell %d time(s) during the run (a server restart?): each fall is read as a restart from zero", w.Resets)
	}
}

// headline are the metrics whose absence the notes mention (prefix-cache
// counters are often off by configuration and are not).
var headline = []Metric{Running, Waiting, KVUsage, Preemptions, PromptTokens, GenerationTokens, TTFT, Queue, Prefill, Decode}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Rebase moves the samples' times from the scraper's origin to runStart's
// (records count from the run start; the scraper starts just before it).
func (s *Series) Rebase(runStart time.Time) {
	if s.OriginUnixNS == 0 {
		return
	}
	shift := float64(s.OriginUnixNS-runStart.UnixNano()) / 1e6
	for i := range s.Samples {
		s.Samples[i].TMS += shift
	}
	s.OriginUnixNS = runStart.UnixNano()
}
