package compare

import (
	"testing"

	"github.com/knee-dev/knee/internal/energy"
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

func TestEnergyRows(t *testing.T) {
	if EnergyRows(nil, nil) != nil {
		t.Error("rows without energy")
	}
	a := energy.New(energy.SourceModel, 1, 10, 1000, 4000, 10, 2)
	b := energy.New(energy.SourceCounter, 2, 10, 3000, 6000, 10, 0)
	rows := EnergyRows(a, b)
	got := map[string][2]*float64{}
	for _, r := range rows {
		got[r.Metric] = [2]*float64{r.A, r.B}
	}
	if r := got["j_per_output_token"]; *r[0] != 0.25 || *r[1] != 0.5 {
		t.Errorf("J per token %v %v", *r[0], *r[1])
	}
	if r := got["avg_power_w_per_gpu"]; *r[0] != 100 || *r[1] != 150 {
		t.Errorf("W per GPU %v %v", *r[0], *r[1])
	}
	if r, ok := got["usd_per_m_output_tokens"]; !ok || r[0] == nil || r[1] != nil {
		t.Errorf("$/M: %v (B gave no price)", r)
	}
	if len(EnergyRows(a, nil)) != 4 {
		t.Errorf("one run's energy: %d rows, want 4", len(EnergyRows(a, nil)))
	}
}
