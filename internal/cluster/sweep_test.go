package cluster

import (
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/store/shardtest"
	"github.com/knee-dev/knee/internal/sweep"
)

// A sharded sweep's merged step leaves the probes (shard 0's alone) out of
// its summary but gives their TTFT p95 its column, and gives a mix's
// classes their figures over every shard's records, as one process's step
// does; a step without probes has no probe column.
func TestMergedStepProbeTTFT(t *testing.T) {
	sw := shardtest.Start(t, "probes", 2)
	st, writers, joins := sw.Store, sw.Writers, sw.Joins
	req := func(step int, id int64, ttft time.Duration, class string) *record.Request {
		r := record.Request{ID: store.SweepRecordID(step, id), Class: class, Scheduled: time.Duration(id) * time.Millisecond, InputTokens: 10, OutputTokens: 4}
		r.Sent = r.Scheduled
		r.FirstToken, r.Done, r.StreamEnd = r.Sent+ttft, r.Sent+ttft+30*time.Millisecond, r.Sent+ttft+31*time.Millisecond
		return &r
	}
	// Step 0: 6 main requests (3 per shard, TTFT 100 ms; classes chat
	// and batch, 3 of each, both shards sending both) and, from shard 0,
	// 20 probes with TTFTs 1..20 ms. Step 1: main requests only.
	for _, w := range writers {
		w.SetStep(0)
	}
	for id := range int64(6) {
		writers[id%2].Add(req(0, id, 100*time.Millisecond, []string{"chat", "chat", "batch"}[id%3]))
	}
	var probes []record.Request
	for n := range int64(20) {
		p := req(0, 1000+n, time.Duration(n+1)*time.Millisecond, record.ProbeClass)
		probes = append(probes, *p)
		writers[0].Add(p)
	}
	for _, w := range writers {
		w.SetStep(1)
	}
	for id := range int64(4) {
		writers[id%2].Add(req(1, id, 100*time.Millisecond, ""))
	}
	for _, w := range writers {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	s := &SweepShard{Join: joins[1], Store: st, Options: func(sweep.Load) stats.Options { return stats.Options{} },
		Classes: &sweep.Classes{Names: []string{"chat", "batch"}}}
	load := sweep.Load{Kind: sweep.Rate, Value: 2}
	step, err := s.merged(0, load)
	if err != nil {
		t.Fatal(err)
	}
	want := stats.Summarize(probes, stats.Options{}).TTFT.P95
	if step.Summary.Requests != 6 {
		t.Errorf("step 1 summarizes %d requests, want the 6 of the load (probes left out)", step.Summary.Requests)
	}
	if step.ProbeTTFTP95 == nil || *step.ProbeTTFTP95 != want || want < 15 {
		t.Errorf("step 1's probe TTFT p95 = %v, want %.3f ms (shard 0's probes)", step.ProbeTTFTP95, want)
	}
	if len(step.Classes) != 2 || step.Classes[0].Name != "chat" || step.Classes[0].Summary.Requests != 4 ||
		step.Classes[1].Name != "batch" || step.Classes[1].Summary.Requests != 2 {
		t.Errorf("step 1's classes %+v; want chat with 4 requests, batch with 2 (no probe)", step.Classes)
	}
	step, err = s.merged(1, load)
	if err != nil {
		t.Fatal(err)
	}
	if step.Summary.Requests != 4 || step.ProbeTTFTP95 != nil {
		t.Errorf("step 2: %d requests, probe TTFT %v; want 4 and none", step.Summary.Requests, step.ProbeTTFTP95)
	}
}
