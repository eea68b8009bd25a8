package sweep

import "github.com/knee-dev/knee/internal/scrape"

// ServerStepOf is a sweep step's share of the server view v (nil when v
// has no window).
func ServerStepOf(v *scrape.View) *ServerStep {
	if v == nil || v.Window == nil {
		return nil
	}
	w := v.Window
	st := &ServerStep{Server: v.Server, WaitingGrowing: w.WaitingGrowing}
	f := func(x float64) *float64 { return &x }
	if h, ok := w.Hists[scrape.Queue]; ok {
		st.QueueMeanMS = f(h.MeanMS)
		if h.Buckets {
			p95 := h.P95MS
			if hi, coarse := h.Coarse(p95); coarse {
				p95, st.QueueP95Bound = hi, true
			}
			st.QueueP95MS = f(p95)
		}
	}
	if h, ok := w.Hists[scrape.Prefill]; ok {
		st.PrefillMeanMS = f(h.MeanMS)
		if h.Buckets {
			st.PrefillP95MS = f(h.P95MS)
		}
	}
	if g, ok := w.Gauges[scrape.Running]; ok {
		st.RunningMean, st.RunningMax = f(g.Mean), f(g.Max)
	}
	if g, ok := w.Gauges[scrape.Waiting]; ok {
		st.WaitingMean, st.WaitingMax = f(g.Mean), f(g.Max)
	}
	if g, ok := w.Gauges[scrape.KVUsage]; ok {
		st.KVUsageMax = f(g.Max)
	}
	if d, ok := w.Deltas[scrape.Preemptions]; ok {
		st.Preemptions = f(d)
	}
	return st
}
