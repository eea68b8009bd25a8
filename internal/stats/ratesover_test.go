package stats

import "testing"

// A part measured over 5 s of a 10 s window: every rate, items and goodput
// included, halves; with no window of its own, goodput is its good
// requests over the whole window.
func TestRatesOver(t *testing.T) {
	t.Parallel()
	good := 8.0
	s := Summary{DurationS: 5, RequestThroughputRPS: 4, InputTokenThroughputTPS: 400, OutputTokenThroughputTPS: 40,
		TotalTokenThroughputTPS: 440, ItemThroughputPS: 20, GoodputRPS: &good}
	s.RatesOver(10)
	if s.RequestThroughputRPS != 2 || s.InputTokenThroughputTPS != 200 || s.OutputTokenThroughputTPS != 20 ||
		s.TotalTokenThroughputTPS != 220 || s.ItemThroughputPS != 10 || *s.GoodputRPS != 4 || s.DurationS != 5 {
		t.Errorf("over 10 s: %+v (goodput %v)", s, *s.GoodputRPS)
	}
	n := 3
	z := Summary{GoodRequests: &n}
	z.RatesOver(10)
	if z.GoodputRPS == nil || *z.GoodputRPS != 0.3 {
		t.Errorf("no window of its own: goodput %v, want 0.3", z.GoodputRPS)
	}
	z.RatesOver(0) // no window: nothing to restate
	if *z.GoodputRPS != 0.3 {
		t.Errorf("a zero window changed goodput to %v", *z.GoodputRPS)
	}
}
