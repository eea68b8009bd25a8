package web

import (
	"context"
	"math"
	"sort"
	"testing"
)

// TestBatchTraceAgreesWithPhases: the engine's running batch, as the
// Simulator's gauge draws it, never exceeds max_num_seqs, fills it past
// saturation, holds every request in the middle of its decode, and over
// the span it covers holds on average as many requests as the requests'
// own prefill and decode times add up to (Little's law), below and past
// saturation.
func TestBatchTraceAgreesWithPhases(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		users, maxSeqs int
		full           bool
	}{{8, 256, false}, {96, 32, true}} {
		p := SimParams{LoadKind: "concurrency", Load: float64(c.users), InputTokens: "512", OutputTokens: "128", MaxNumSeqs: c.maxSeqs, Lifecycle: true}
		su, err := p.setup()
		if err != nil {
			t.Fatal(err)
		}
		out, err := su.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b := out.Batch
		if b == nil || b.MaxNumSeqs != c.maxSeqs || len(b.AtMS) < 10 || b.Thinned {
			t.Fatalf("%d users: batch trace %+v", c.users, b)
		}
		if !sort.Float64sAreSorted(b.AtMS) {
			t.Fatalf("%d users: the trace's times are out of order", c.users)
		}
		at := func(ms float64) int { return max(0, sort.SearchFloat64s(b.AtMS, math.Nextafter(ms, math.Inf(1)))-1) }
		from, to := b.AtMS[0], b.AtMS[len(b.AtMS)-1]
		peak, area := 0, 0.0
		for i, r := range b.Running {
			peak = max(peak, r)
			if r > c.maxSeqs {
				t.Errorf("%d users at %.2f ms: %d running, over max_num_seqs %d", c.users, b.AtMS[i], r, c.maxSeqs)
			}
			if i+1 < len(b.AtMS) {
				area += float64(r) * (b.AtMS[i+1] - b.AtMS[i])
			}
		}
		// Each request's time in the engine within the span, as its phases
		// (what the page's followed request shows) say.
		var inEngine float64
		for _, r := range out.Lifecycle {
			if r.Error != "" {
				continue
			}
			admitted := r.SentMS + r.QueueMS
			left := admitted + r.PrefillMS + r.DecodeMS
			inEngine += max(0, min(left, to)-max(admitted, from))
			if mid := (r.FirstMS + r.DoneMS) / 2; mid > from && mid < to && b.Running[at(mid)] == 0 {
				t.Errorf("%d users: request %d is decoding at %.2f ms, yet the engine ran no batch then", c.users, r.ID, mid)
			}
		}
		// The lifecycle may leave out requests the engine also ran (it
		// holds at most maxLifecycle): only a run it holds whole compares.
		mean, want := area/(to-from), inEngine/(to-from)
		t.Logf("%d users, max %d sequences: %d changes, peak batch %d; mean batch %.2f, the requests' phases say %.2f", c.users, c.maxSeqs, len(b.AtMS), peak, mean, want)
		if out.Requests == len(out.Lifecycle) && math.Abs(mean-want) > 0.05*want {
			t.Errorf("%d users: the engine's batch averages %.2f requests, the requests' phases %.2f", c.users, mean, want)
		}
		if c.full != (peak == c.maxSeqs) {
			t.Errorf("%d users: peak batch %d of %d", c.users, peak, c.maxSeqs)
		}
	}
}
