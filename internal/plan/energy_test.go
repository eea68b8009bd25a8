package plan

import (
	"context"
	"testing"

	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
)

// With --objective energy the winner meets the SLOs and no deployment of
// the space that meets them in the search's run spends fewer joules per
// output token (brute force over each (GPU, TP)'s fewest replicas that
// meet them); the cost winner spends at least as many.
func TestSearchEnergyObjective(t *testing.T) {
	q := question(t, "llama-3.1-8b", 40, "1024", "128", "p95(ttft)<300ms", "p99(itl)<40ms")
	q.Space = Space{GPUs: gpus(t, "h100", "a100-80gb", "l40s"), TPs: []int{1, 2}, MaxReplicas: 6, Routers: []string{sim.RoundRobin}}
	q.Objective = ObjectiveEnergy
	ans, err := Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Winner == nil || !ans.Winner.Met || ans.Validation == nil || !ans.Validation.Met {
		t.Fatalf("no validated winner: %+v", ans.Families)
	}
	w := ans.Winner
	if !(w.EnergyJPerToken > 0 && w.AvgPowerWPerGPU > 0 && w.USDPerMOutputTokens > 0) {
		t.Fatalf("winner without energy figures: %+v", w)
	}
	t.Logf("energy winner %s: %.4f J/token, %.0f W/GPU", w.Candidate, w.EnergyJPerToken, w.AvgPowerWPerGPU)
	for _, g := range q.Space.GPUs {
		for _, tp := range q.Space.TPs {
			c := q.Base
			c.GPU, c.TP = g, tp
			eng, err := simengine.NewEngine(c)
			if err != nil {
				continue
			}
			v := &variant{cfg: eng.Config(), costHour: q.Costs[g.Name] * float64(tp)}
			for n := 1; n <= q.Space.MaxReplicas; n++ {
				o := simulate(context.Background(), q, v, n, sim.RoundRobin, q.SearchRequests)
				if !o.Met {
					continue
				}
				if o.EnergyJPerToken < w.EnergyJPerToken*(1-1e-3) {
					t.Errorf("%s meets the SLOs at %.4f J/token, below the winner's %.4f", o.Candidate, o.EnergyJPerToken, w.EnergyJPerToken)
				}
				break // more replicas of one variant spend more per token
			}
		}
	}
	q.Objective = ObjectiveCost
	cost, err := Search(context.Background(), q)
	if err != nil || cost.Winner == nil {
		t.Fatalf("cost search: %v", err)
	}
	if cost.Winner.EnergyJPerToken < w.EnergyJPerToken*(1-1e-3) {
		t.Errorf("the cost winner %s spends %.4f J/token, less than the energy winner's %.4f", cost.Winner.Candidate, cost.Winner.EnergyJPerToken, w.EnergyJPerToken)
	}
	if cost.Winner.CostPerHour > w.CostPerHour+1e-9 {
		t.Errorf("the energy winner %s costs $%.2f/h, less than the cost winner %s", w.Candidate, w.CostPerHour, cost.Winner.Candidate)
	}
}
