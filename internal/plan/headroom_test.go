package plan

import (
	"context"
	"github.com/knee-dev/knee/internal/sim"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
)

// Plan's headroom follows the candidate: on a GPU without a validated
// source it is at least as pessimistic on every factor, strictly on one,
// and says why; at a large running batch it reads the large-batch table;
// confidence 0 stays the point estimate everywhere.
func TestHeadroomFollowsTheCandidate(t *testing.T) {
	h, err := NewHeadroom(0.8)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Widened) != 0 {
		t.Errorf("baseline headroom widened: %q", h.Widened)
	}
	on := h.In(simengine.Domain{GPU: "H100-SXM"})
	off := h.In(simengine.Domain{GPU: "B200"})
	if on.TTFTFactor != h.TTFTFactor || on.ThroughputFactor != h.ThroughputFactor {
		t.Errorf("validated GPU %+v differs from the baseline %+v", on, h)
	}
	if off.TTFTFactor < on.TTFTFactor || off.TPOTFactor < on.TPOTFactor || off.E2EFactor < on.E2EFactor || off.ThroughputFactor > on.ThroughputFactor {
		t.Errorf("B200 headroom %+v less pessimistic than H100's %+v on a factor", off, on)
	}
	if off.TTFTFactor == on.TTFTFactor && off.TPOTFactor == on.TPOTFactor && off.ThroughputFactor == on.ThroughputFactor || len(off.Widened) == 0 || !strings.Contains(off.Widened[0], "B200") {
		t.Errorf("B200 headroom %+v: want wider, with the reason", off)
	}
	large := h.In(simengine.Domain{GPU: "H100-SXM", InFlight: 64})
	if large.TPOTFactor == on.TPOTFactor {
		t.Errorf("TPOT headroom at 64 in flight ×%.2f, the same as at a small batch", large.TPOTFactor)
	}
	zero, _ := NewHeadroom(0)
	if z := zero.In(simengine.Domain{GPU: "B200", InFlight: 64}); z.TTFTFactor != 1 || z.ThroughputFactor != 1 || len(z.Widened) != 0 {
		t.Errorf("confidence 0 on B200: %+v, want the point estimate", z)
	}
	// Little's law a replica: 20 req/s at 1.6 s mean over 2 replicas is 16.
	cfg := simengine.Config{GPU: simengine.GPU{Name: "L4"}}
	if d := domainOf(cfg, stats.Summary{RequestThroughputRPS: 20, E2E: stats.Dist{Mean: 1600}}, 2); d.InFlight != 16 || d.GPU != "L4" {
		t.Errorf("domainOf: %+v", d)
	}
}

// Each outcome of a search says the headroom it was judged with: on a GPU
// without a validated source, wider and with the reason; on one with a
// source, the plain one.
func TestSearchJudgesEachCandidateWithItsHeadroom(t *testing.T) {
	q := question(t, "llama-3.1-8b", 10, "512", "64", "p95(ttft)<500ms")
	q.Space = Space{GPUs: gpus(t, "h100", "b200"), TPs: []int{1}, MaxReplicas: 2, Routers: []string{sim.RoundRobin}}
	q.SearchRequests, q.ValidateRequests = 200, 400
	var err error
	if q.Headroom, err = NewHeadroom(0.8); err != nil {
		t.Fatal(err)
	}
	ans, err := Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, o := range ans.Pareto {
		if o.Headroom == nil {
			t.Fatalf("%s: no headroom at confidence 0.8", o.Candidate)
		}
		widened := strings.Join(o.Headroom.Widened, "; ")
		switch o.GPU {
		case "B200":
			if !strings.Contains(widened, "no source on B200") || o.Headroom.TTFTFactor <= q.Headroom.TTFTFactor {
				t.Errorf("%s: headroom %+v, want wider than %+v with the reason", o.Candidate, *o.Headroom, q.Headroom)
			}
		case "H100-SXM":
			if widened != "" {
				t.Errorf("%s: widened %q on a validated GPU", o.Candidate, widened)
			}
		}
		seen[o.GPU] = true
	}
	if !seen["B200"] || !seen["H100-SXM"] {
		t.Errorf("pareto front covers %v; want both GPUs to check", seen)
	}
}
