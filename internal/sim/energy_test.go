package sim

import (
	"math"
	"testing"
)

// A fleet's energy is its replicas' own, each idling to the run's end:
// every GPU draws at least its idle power for the whole run, and the
// replicas' energies sum to the fleet's.
func TestFleetEnergyIsTheReplicas(t *testing.T) {
	t.Parallel()
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 2)
	cfg := FleetConfig{Config: Config{Engine: ecfg, Gen: varied{32, 1000, 1, 200}, Arrivals: poisson(t, 8, 5), Requests: 300}, Count: 3}
	_, res := collectFleet(t, cfg)
	s := res.Engine
	if s.GPUs != 6 {
		t.Fatalf("GPUs %d, want 3 replicas × TP 2", s.GPUs)
	}
	idle := float64(s.GPUs) * ecfg.GPU.IdleWatts * res.End.Seconds()
	peak := float64(s.GPUs) * ecfg.GPU.TDPWatts * res.End.Seconds()
	if !(s.EnergyJ > idle && s.EnergyJ < peak) {
		t.Errorf("fleet energy %v J, want between all-idle %v and all-TDP %v", s.EnergyJ, idle, peak)
	}
	sum := 0.0
	for _, r := range res.Replicas {
		sum += r.Engine.EnergyJ
		if min := float64(r.Engine.GPUs) * ecfg.GPU.IdleWatts * res.End.Seconds(); r.Engine.EnergyJ < min {
			t.Errorf("replica %s: %v J, below its idle draw over the run %v", r.Name, r.Engine.EnergyJ, min)
		}
	}
	if math.Abs(sum-s.EnergyJ) > 1e-6*sum {
		t.Errorf("replicas sum to %v J, the fleet says %v", sum, s.EnergyJ)
	}
}
