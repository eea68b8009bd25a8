package sweep

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
)

// capRunner is a service of fixed capacity: throughput min(load, capacity),
// p95 TTFT 100 ms below capacity, growing steeply above it.
type capRunner struct {
	capacity float64
	seen     []float64
}

func (c *capRunner) Run(_ context.Context, l Load) (Step, error) {
	c.seen = append(c.seen, l.Value)
	var s stats.Summary
	s.Requests = 100
	s.RequestThroughputRPS = math.Min(l.Value, c.capacity)
	s.OutputTokenThroughputTPS = 100 * s.RequestThroughputRPS
	s.TTFT = stats.Dist{Count: 100, P95: 100 * math.Max(1, math.Pow(l.Value/c.capacity, 6))}
	return Step{Summary: s, Full: true}, nil
}

func TestAutoStopsOnSLOAndBisects(t *testing.T) {
	set, err := slo.ParseAll([]string{"p95(ttft)<2s"})
	if err != nil {
		t.Fatal(err)
	}
	// TTFT crosses 2 s at load 20 × 20^(1/6) ≈ 32.9.
	r := &capRunner{capacity: 20}
	res, err := Run(context.Background(), r, Plan{Kind: Concurrency, Min: 1, Max: 1024}, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 2, 4, 8, 16, 32, 64, 45, 38} // bisection stops when the bracket is within ×1.2
	if len(r.seen) != len(want) {
		t.Fatalf("loads %v, want %v", r.seen, want)
	}
	for i := range want {
		if r.seen[i] != want[i] {
			t.Fatalf("loads %v, want %v", r.seen, want)
		}
	}
	if res.SLOSafe.Load != 32 {
		t.Errorf("safe %v: %s", res.SLOSafe.Load, res.SLOSafe.Reason)
	}
	if res.Knee.Load != 16 && res.Knee.Load != 32 {
		t.Errorf("knee %v: %s", res.Knee.Load, res.Knee.Reason)
	}
}

func TestAutoStopsWhenThroughputFlattens(t *testing.T) {
	r := &capRunner{capacity: 10}
	res, err := Run(context.Background(), r, Plan{Kind: Rate, Min: 1, Max: 1000}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1 2 4 8 16 (+25%) 32 (+0%: stop), then bisect 16..32.
	if r.seen[5] != 32 || len(r.seen) < 7 {
		t.Fatalf("loads %v", r.seen)
	}
	if res.SLOSafe.Found() || res.Knee.Load < 8 || res.Knee.Load > 16 {
		t.Errorf("knee %v (%s), safe %v", res.Knee.Load, res.Knee.Reason, res.SLOSafe.Found())
	}
}

func TestSimRunnerSweep(t *testing.T) {
	in, _ := workload.ParseDist("512")
	out, _ := workload.ParseDist("128")
	// The cost model is pinned (the constants before they were refitted to
	// vLLM serving data), so the sweep's shape does not move when the
	// defaults are refitted: this tests the sweep, not the calibration.
	ecfg := enginetest.H100Llama8B(t, 1)
	pinned := simengine.DefaultCost
	pinned.ComputeEfficiency, pinned.KVMemEfficiency = 0.47, 0
	ecfg.Cost = &pinned
	sr := &SimRunner{Engine: ecfg, Gen: fixed{in, out}, Duration: 30 * time.Second,
		Arrivals: func(rate float64) (sim.Arrivals, error) { return workload.NewArrivals("poisson", rate, 1, 42) }}
	set, _ := slo.ParseAll([]string{"p95(ttft)<2s"})
	sr.SLOs = set
	res, err := Run(context.Background(), sr, Plan{Kind: Rate, Loads: []float64{5, 10, 20, 30, 40, 50, 60, 80}}, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Steps {
		t.Logf("%s: %.1f rps, %.0f tok/s, p95 ttft %.0f ms, met %v", s.Load, s.Summary.RequestThroughputRPS, s.Summary.OutputTokenThroughputTPS, s.Summary.TTFT.P95, s.SLOMet)
	}
	t.Log(res.Knee.Reason)
	t.Log(res.SLOSafe.Reason)
	if !res.SLOSafe.Found() || res.SLOSafe.Load < 30 || res.SLOSafe.Load > 50 {
		t.Errorf("safe point %v", res.SLOSafe.Load)
	}
	if !res.Knee.Found() || res.Knee.Load < 30 || res.Knee.Load > 60 {
		t.Errorf("knee %v", res.Knee.Load)
	}
	if res.Steps[0].Summary.GoodputRPS == nil {
		t.Error("no goodput with SLOs")
	}
}

type fixed struct{ in, out workload.Dist }

func (f fixed) Lengths(int64) (int, int) { return int(f.in.Mean()), int(f.out.Mean()) }

func TestRoundSig(t *testing.T) {
	for _, c := range [][2]float64{{47.5683, 47.6}, {56.5685, 56.6}, {0.70711, 0.707}, {1414.2, 1410}} {
		if got := roundSig(c[0], 3); math.Abs(got-c[1]) > 1e-9 {
			t.Errorf("roundSig(%v) = %v, want %v", c[0], got, c[1])
		}
	}
}

// oversatRunner stops every step above its capacity over-saturated.
type oversatRunner struct{ capRunner }

func (o *oversatRunner) Run(ctx context.Context, l Load) (Step, error) {
	s, err := o.capRunner.Run(ctx, l)
	if l.Value > o.capacity {
		s.Oversaturated = "stopped at 4s: over-saturated"
	}
	return s, err
}

// TestOversaturatedStepEndsTheLoads: after a step that stopped
// over-saturated, the explicit loads above it are left out and named; an
// automatic sweep stops growing there and bisects below it.
func TestOversaturatedStepEndsTheLoads(t *testing.T) {
	r := &oversatRunner{capRunner{capacity: 10}}
	res, err := Run(context.Background(), r, Plan{Kind: Rate, Loads: []float64{2, 5, 20, 40, 80}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.seen) != 3 || r.seen[2] != 20 {
		t.Fatalf("measured %v, want 2, 5, 20 and nothing above the over-saturated 20", r.seen)
	}
	found := false
	for _, n := range res.Notes {
		found = found || strings.Contains(n, "20 req/s stopped over-saturated") && strings.Contains(n, "40 req/s, 80 req/s left out")
	}
	if !found {
		t.Errorf("no note names the loads left out: %q", res.Notes)
	}
	b, err := json.Marshal(res.Steps[2])
	if err != nil || !strings.Contains(string(b), `"oversaturated":"stopped at 4s: over-saturated"`) {
		t.Errorf("step JSON %s (%v): want the over-saturation said", b, err)
	}
	var back Step
	if err := json.Unmarshal(b, &back); err != nil || back.Oversaturated == "" {
		t.Errorf("read back %+v (%v): the over-saturation is lost", back, err)
	}

	r = &oversatRunner{capRunner{capacity: 10}}
	if _, err = Run(context.Background(), r, Plan{Kind: Rate, Min: 1, Max: 1000}, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, v := range r.seen {
		if v > 16 {
			t.Fatalf("automatic sweep measured %v: beyond the first over-saturated step (16)", r.seen)
		}
	}
}
