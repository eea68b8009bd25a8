package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
	"github.com/knee-dev/knee/internal/workload"
)

// TestSimRunnerProbes: probes beside every simulated step give the step's
// probe TTFT p95, rising with the load, while the step's figures are the
// main load's alone.
func TestSimRunnerProbes(t *testing.T) {
	in, _ := workload.ParseDist("2048")
	out, _ := workload.ParseDist("64")
	pin, _ := workload.ParseDist("16")
	pout, _ := workload.ParseDist("1")
	sr := &SimRunner{Engine: enginetest.H100Llama8B(t, 1), Gen: fixed{in, out}, Duration: 10 * time.Second,
		Probes: sim.Probes{RateRPS: 5, Gen: fixed{pin, pout}}}
	var p95 []float64
	for _, users := range []float64{1, 64} {
		s, err := sr.Run(context.Background(), Load{Kind: Concurrency, Value: users})
		if err != nil {
			t.Fatal(err)
		}
		if s.ProbeTTFTP95 == nil {
			t.Fatalf("%g users: no probe TTFT", users)
		}
		if n := int64(s.Summary.Requests); n == 0 || s.Summary.InputTokens != 2048*n || s.Summary.OutputTokens != 64*n {
			t.Errorf("%g users: %d requests of %d input, %d output tokens: the probes' are in (want the main load's 2048 and 64 each)", users, n, s.Summary.InputTokens, s.Summary.OutputTokens)
		}
		p95 = append(p95, *s.ProbeTTFTP95)
	}
	t.Logf("probe TTFT p95: %.1f ms at 1 user, %.1f ms at 64", p95[0], p95[1])
	if p95[1] < 4*p95[0] {
		t.Errorf("probe TTFT p95 %.1f ms at 64 users, %.1f at 1: want the load to delay the probes", p95[1], p95[0])
	}
}

// TestSimRunnerPools: a step of a concurrency sweep runs its users beside
// the runner's own pools, each request told its pool.
func TestSimRunnerPools(t *testing.T) {
	in, _ := workload.ParseDist("256")
	out, _ := workload.ParseDist("16")
	count := map[int]int{}
	sr := &SimRunner{Engine: enginetest.H100Llama8B(t, 1), Gen: fixed{in, out}, Requests: 300,
		Pools: []int{4}, Pool: func(_ int64, pool int) { count[pool]++ }}
	s, err := sr.Run(context.Background(), Load{Kind: Concurrency, Value: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.Summary.Requests != 300 || count[0]+count[1] != 300 || count[0] == 0 || count[1] <= count[0] {
		t.Errorf("%d requests, by pool %v: want 300, the 4 pool users sending more than the step's 2", s.Summary.Requests, count)
	}
}
