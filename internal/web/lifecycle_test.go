package web

import (
	"context"
	"testing"
)

// lifecycleDefaultRPS is the lifecycle page's starting arrival rate
// (assets/lifecycle.js): above the default engine's capacity (about 65
// req/s at 512/128 tokens and 256 sequences), so a queue forms.
const lifecycleDefaultRPS = 150

// At the lifecycle page's defaults the queue lane holds requests in most of
// the moments the timeline samples (at 60 req/s it did in 10 of 79).
func TestLifecycleDefaultQueues(t *testing.T) {
	p := SimParams{LoadKind: "rate", Load: lifecycleDefaultRPS, InputTokens: "512", OutputTokens: "128", MaxNumSeqs: 256, Lifecycle: true, Requests: 300}
	su, err := p.setup()
	if err != nil {
		t.Fatal(err)
	}
	out, err := su.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lc := out.Lifecycle
	start, end := lc[0].ArrivalMS, 0.0
	for _, r := range lc {
		start, end = min(start, r.ArrivalMS), max(end, r.DoneMS)
	}
	// The page's queue lane (phaseAt in assets/lifecycle.js): after the
	// arrival instant, shown for w ms, and before prefill starts.
	w := max(20, (end-start)/120)
	const samples = 80
	queued := 0
	for i := range samples {
		at := start + (end-start)*float64(i)/samples
		for _, r := range lc {
			if r.Error == "" && at < r.DoneMS && at >= max(r.SentMS, r.ArrivalMS+w) && at < r.SentMS+r.QueueMS {
				queued++
				break
			}
		}
	}
	t.Logf("%d req/s: the queue lane holds requests in %d of %d samples; pressure %s", lifecycleDefaultRPS, queued, samples, out.Pressure.Level)
	if queued < samples/2 {
		t.Errorf("queue lane non-empty in %d of %d samples, want most", queued, samples)
	}
}

// The simulator page's default (16 users, 512/128 tokens): users that start
// apart fall out of step, so p95 TTFT and queue sit above their p50 (all
// equal when every user started in the same millisecond: 153 ms).
func TestSimDefaultOutOfStep(t *testing.T) {
	p := SimParams{Load: 16, InputTokens: "512", OutputTokens: "128", MaxNumSeqs: 256}
	su, err := p.setup()
	if err != nil {
		t.Fatal(err)
	}
	out, err := su.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := out.Summary
	t.Logf("16 users: TTFT p50 %.1f p95 %.1f ms, queue p50 %.1f p95 %.1f ms", f.TTFTMS.P50, f.TTFTMS.P95, f.QueueMS.P50, f.QueueMS.P95)
	if !(f.TTFTMS.P50 < f.TTFTMS.P95) || !(f.QueueMS.P50 < f.QueueMS.P95) {
		t.Errorf("users in lockstep: TTFT p50 %.1f p95 %.1f, queue p50 %.1f p95 %.1f", f.TTFTMS.P50, f.TTFTMS.P95, f.QueueMS.P50, f.QueueMS.P95)
	}
}
