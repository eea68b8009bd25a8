package web

import (
	"context"
	"strings"
	"testing"
)

// lifecycleDefaultRPS is the lifecycle page's starting arrival rate
// (assets/lifecycle.js): above the default engine's capacity (about 49
// req/s at 512/128 tokens and 256 sequences, measured with knee sim --rate
// 150 --requests 3000 --input-tokens 512 --output-tokens 128
// --max-num-seqs 256 --seed 1), so a queue forms.
const lifecycleDefaultRPS = 150

// lifecycleRequests is the page's run length (assets/lifecycle.js).
const lifecycleRequests = 900

// At the lifecycle page's defaults the queue lane holds requests in most of
// the moments the timeline samples (at 60 req/s it did in 10 of 79), and
// some moment has a request in every lane at once (with 300 requests none
// did: the last arrived before the first finished).
func TestLifecycleDefaultQueues(t *testing.T) {
	p := SimParams{LoadKind: "rate", Load: lifecycleDefaultRPS, InputTokens: "512", OutputTokens: "128", MaxNumSeqs: 256, Lifecycle: true, Requests: lifecycleRequests}
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
	queued, everyPhase := 0, 0
	for i := range samples {
		at := start + (end-start)*float64(i)/samples
		seen := map[string]bool{}
		for _, r := range lc {
			seen[phaseAt(r, at, w)] = true
		}
		if seen["queue"] {
			queued++
		}
		if seen["arrival"] && seen["queue"] && seen["prefill"] && seen["first_token"] && seen["decode"] && seen["complete"] {
			everyPhase++
		}
	}
	t.Logf("%d req/s, %d requests: every phase occupied at once in %d of %d samples", lifecycleDefaultRPS, lifecycleRequests, everyPhase, samples)
	if everyPhase == 0 {
		t.Errorf("no sampled moment has a request in every phase (the page's lanes cannot show the whole lifecycle at once)")
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

// phaseAt is the page's phaseAt (assets/lifecycle.js): which lane a
// request is in at time at, its arrival shown for w ms.
func phaseAt(r phaseTimes, at, w float64) string {
	switch {
	case at < r.ArrivalMS:
		return ""
	case r.Error != "":
		if at >= r.DoneMS {
			return ""
		}
		if at < r.SentMS+r.QueueMS {
			return "queue"
		}
		return "prefill"
	case at >= r.DoneMS:
		return "complete"
	case r.FirstMS > 0 && at >= r.FirstMS:
		if at < r.FirstMS+w {
			return "first_token"
		}
		return "decode"
	case at < max(r.SentMS, r.ArrivalMS+w):
		return "arrival"
	case at >= r.SentMS+r.QueueMS:
		return "prefill"
	}
	return "queue"
}

// The simulator page's ranges are the CLI's: on a GPU with no validated
// source they widen and say so, as knee sim does for the same run.
func TestSimRangesWidenOnUnvalidatedGPU(t *testing.T) {
	basis := func(gpu string) (string, float64) {
		p := SimParams{Load: 8, InputTokens: "512", OutputTokens: "64", GPU: gpu}
		su, err := p.setup()
		if err != nil {
			t.Fatal(err)
		}
		out, err := su.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if out.Ranges == nil {
			t.Fatalf("%s: no ranges", gpu)
		}
		for _, f := range out.Ranges.Figures {
			if strings.HasPrefix(f.Metric, "ttft_ms") {
				return out.Ranges.Basis, f.High / f.Value
			}
		}
		t.Fatalf("%s: no TTFT range in %+v", gpu, out.Ranges)
		return "", 0
	}
	h100, h100Up := basis("h100")
	b200, b200Up := basis("b200")
	if strings.Contains(h100, "widened") || !strings.Contains(b200, "no source on B200") || !(b200Up > h100Up) {
		t.Errorf("H100: %q (×%.2f up); B200: %q (×%.2f up); want the B200's range wider and saying why", h100, h100Up, b200, b200Up)
	}
}
