package sweep

import (
	"testing"

	"github.com/knee-dev/knee/internal/scrape"
)

func TestServerStepOf(t *testing.T) {
	if ServerStepOf(nil) != nil || ServerStepOf(&scrape.View{}) != nil {
		t.Error("a view without a window gave a step")
	}
	v := &scrape.View{Server: "vllm", Window: &scrape.Window{WaitingGrowing: true,
		Hists: map[scrape.Metric]scrape.HistStats{
			scrape.Queue:   {Count: 10, MeanMS: 4, P95MS: 7, Buckets: true, LEMS: []float64{1, 100}},
			scrape.Prefill: {Count: 10, MeanMS: 2},
		},
		Gauges: map[scrape.Metric]scrape.GaugeStats{scrape.Running: {Mean: 3, Max: 8}},
		Deltas: map[scrape.Metric]float64{scrape.Preemptions: 2}}}
	s := ServerStepOf(v)
	if s.Server != "vllm" || !s.WaitingGrowing || *s.QueueMeanMS != 4 || *s.PrefillMeanMS != 2 || s.PrefillP95MS != nil {
		t.Errorf("step %+v", s)
	}
	// A p95 inside a coarse bucket is its upper bound, said to be one.
	if s.QueueP95MS == nil || *s.QueueP95MS != 100 || !s.QueueP95Bound {
		t.Errorf("queue p95 %v bound %v, want 100 as a bound", s.QueueP95MS, s.QueueP95Bound)
	}
	if *s.RunningMax != 8 || s.WaitingMax != nil || *s.Preemptions != 2 || s.KVUsageMax != nil {
		t.Errorf("gauges %+v", s)
	}
}
