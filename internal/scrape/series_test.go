package scrape

import (
	"math"
	"strings"
	"testing"
)

func hist(le, cum []float64, count, sum float64) *Hist {
	return &Hist{LE: le, Cum: cum, Count: count, Sum: sum}
}

func TestWindowDeltasAndCounterReset(t *testing.T) {
	le := []float64{0.1, 1}
	s := &Series{Server: "vllm", Samples: []Sample{
		{TMS: 0, Values: map[Metric]float64{GenerationTokens: 1000, Preemptions: 3, Waiting: 0},
			Hists: map[Metric]*Hist{Queue: hist(le, []float64{10, 10}, 10, 0.5)}},
		{TMS: 1000, Values: map[Metric]float64{GenerationTokens: 1600, Preemptions: 4, Waiting: 2},
			Hists: map[Metric]*Hist{Queue: hist(le, []float64{14, 20}, 20, 4.0)}},
		{TMS: 1500, Err: "timed out"},
		// The server restarted: counters and histograms start again from zero.
		{TMS: 2000, Values: map[Metric]float64{GenerationTokens: 300, Preemptions: 0, Waiting: 1},
			Hists: map[Metric]*Hist{Queue: hist(le, []float64{1, 2}, 2, 0.7)}},
		{TMS: 3000, Values: map[Metric]float64{GenerationTokens: 900, Preemptions: 1, Waiting: 0},
			Hists: map[Metric]*Hist{Queue: hist(le, []float64{3, 4}, 4, 1.1)}},
	}}
	w := s.Window(0, 3000)
	if w == nil {
		t.Fatal("no window")
	}
	// 600 before the restart, 300 counted from zero at it, 600 after.
	if got := w.Deltas[GenerationTokens]; got != 1500 {
		t.Errorf("generation tokens %v, want 1500", got)
	}
	if got := w.Deltas[Preemptions]; got != 2 {
		t.Errorf("preemptions %v, want 2", got)
	}
	if w.Resets != 1 || w.Failed != 1 || w.Scrapes != 4 {
		t.Errorf("resets %d failed %d scrapes %d, want 1 1 4", w.Resets, w.Failed, w.Scrapes)
	}
	q := w.Hists[Queue]
	// 10 + 2 (restart) + 2 observations; sums 3.5 + 0.7 + 0.4.
	if q.Count != 14 || math.Abs(q.MeanMS-1000*4.6/14) > 1e-9 {
		t.Errorf("queue %+v, want count 14 mean %.3f", q, 1000*4.6/14)
	}
	if *w.GenerationTPS != 500 {
		t.Errorf("generation tok/s %v, want 500", *w.GenerationTPS)
	}
	if g := w.Gauges[Waiting]; g.Max != 2 || g.N != 4 {
		t.Errorf("waiting %+v", g)
	}
	s.Summarize()
	joined := strings.Join(s.Notes, "\n")
	for _, want := range []string{"1 of 5 scrapes", "counters fell 1 time"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
}

func TestWindowPicksScrapesAroundSpan(t *testing.T) {
	s := &Series{Server: "vllm"}
	for i := 0; i <= 10; i++ {
		s.Samples = append(s.Samples, Sample{TMS: float64(1000 * i), Values: map[Metric]float64{GenerationTokens: float64(100 * i)}})
	}
	w := s.Window(2500, 6500)
	if w.FromMS != 2000 || w.ToMS != 7000 || w.Deltas[GenerationTokens] != 500 {
		t.Fatalf("window %v–%v delta %v, want 2000–7000 and 500", w.FromMS, w.ToMS, w.Deltas[GenerationTokens])
	}
	if (&Series{Samples: s.Samples[:1]}).Window(0, 1) != nil {
		t.Error("one scrape gave a window")
	}
}

func TestMissingSeriesNoted(t *testing.T) {
	p := parseFile(t, "llamacpp.prom")
	p2 := parseFile(t, "llamacpp.prom")
	s := &Series{URL: "http://h/metrics", Server: p.Server, Samples: []Sample{p.Sample, p2.Sample}}
	s.Samples[1].TMS = 1000
	s.Summarize()
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "llama.cpp server exposed no") || !strings.Contains(s.Notes[0], "ttft") {
		t.Fatalf("notes %q", s.Notes)
	}
	w := s.Window(0, 1000)
	if w.Gauges[Running].Last != 2 || len(w.Hists) != 0 {
		t.Errorf("window %+v", w)
	}
}

func TestWaitingGrows(t *testing.T) {
	cases := []struct {
		v    []float64
		want bool
	}{
		{[]float64{0, 4, 9, 15, 22, 30}, true},
		{[]float64{0, 4, 9, 0, 22, 30}, false}, // drained once
		{[]float64{2, 3, 2, 3, 2, 3}, false},   // steady
		{[]float64{0, 1, 2, 3}, false},         // grows, but by little
		{[]float64{0, 50, 100}, false},         // too few readings
	}
	for _, c := range cases {
		if got := WaitingGrows(c.v); got != c.want {
			t.Errorf("WaitingGrows(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestQuantileEdges(t *testing.T) {
	h := hist([]float64{0.1, 0.2}, []float64{0, 10}, 12, 3)
	if q := h.Quantile(0.99); q != 0.2 {
		t.Errorf("rank in +Inf bucket: %v, want the last finite bound 0.2", q)
	}
	if q := h.Quantile(0.5); math.Abs(q-0.16) > 1e-12 {
		t.Errorf("p50 %v, want 0.16", q)
	}
	if !math.IsNaN((&Hist{}).Quantile(0.5)) {
		t.Error("empty histogram gave a quantile")
	}
}

func TestCounterAppearingMidRunCountsFromZero(t *testing.T) {
	// SGLang creates its retraction counter at the first retraction.
	s := &Series{Server: "sglang", Samples: []Sample{
		{TMS: 0, Values: map[Metric]float64{Waiting: 0}},
		{TMS: 1000, Values: map[Metric]float64{Waiting: 3, Preemptions: 2}, Hists: map[Metric]*Hist{Queue: hist([]float64{1}, []float64{4}, 5, 2.5)}},
		{TMS: 2000, Values: map[Metric]float64{Waiting: 1, Preemptions: 5}, Hists: map[Metric]*Hist{Queue: hist([]float64{1}, []float64{6}, 8, 4.0)}},
	}}
	w := s.Window(0, 2000)
	if w.Deltas[Preemptions] != 5 || w.Resets != 0 || w.Hists[Queue].Count != 8 {
		t.Fatalf("preemptions %v resets %d queue count %v; want 5, 0, 8", w.Deltas[Preemptions], w.Resets, w.Hists[Queue].Count)
	}
}

// TestHistStatsOpenBucket: observations past the last finite bound are
// counted, and a percentile whose rank falls among them is flagged.
func TestHistStatsOpenBucket(t *testing.T) {
	h := &Hist{LE: []float64{0.1, 0.25}, Cum: []float64{50, 90}, Count: 100, Sum: 20}
	st := h.stats()
	if st.CountOverLastBound != 10 {
		t.Fatalf("count over the last bound %v, want 10", st.CountOverLastBound)
	}
	if last, over := st.OverLastBound(0.99); !over || last != 250 {
		t.Errorf("p99: over=%v last=%v, want over the 250 ms bound", over, last)
	}
	if _, over := st.OverLastBound(0.90); over {
		t.Errorf("p90 (rank 90, the last finite bucket's edge) flagged as over the last bound")
	}
}
