package compare

import (
	"testing"

	"github.com/knee-dev/knee/internal/sweep"
)

func TestServerRowsLeaveOutWhatNeitherHas(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	a := &sweep.ServerStep{QueueMeanMS: f(10), KVUsageMax: f(0.5)}
	b := &sweep.ServerStep{QueueMeanMS: f(30), Preemptions: f(2)}
	rows := ServerRows(a, b, f(100), nil)
	got := map[string][2]*float64{}
	for _, r := range rows {
		got[r.Metric] = [2]*float64{r.A, r.B}
	}
	if len(rows) != 4 {
		t.Errorf("%d rows, want queue, preemptions, generation tok/s and KV usage: %+v", len(rows), rows)
	}
	if q := got["server_queue_mean_ms"]; *q[0] != 10 || *q[1] != 30 {
		t.Errorf("queue %v", q)
	}
	if kv := got["server_kv_usage_max_pct"]; *kv[0] != 50 || kv[1] != nil {
		t.Errorf("KV usage in percent: %v", kv)
	}
	if p := got["server_preemptions"]; p[0] != nil || *p[1] != 2 {
		t.Errorf("preemptions %v", p)
	}
	if _, ok := got["server_running_max"]; ok {
		t.Error("a row neither server has is listed")
	}
}
