package plan

import (
	"context"
	"math"
	"testing"

	"github.com/knee-dev/knee/internal/energy"
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

// Each outcome's energy figures carry their ranges: energy per token's
// from the power model's held-out errors (the same factors knee sim
// applies), power's at most the TDP; $ per token's only where the
// deployment did not keep up with its load (its throughput is then the
// server's, which has a range).
func TestOutcomeEnergyRanges(t *testing.T) {
	t.Parallel()
	jl, jh := energy.JPerTokenFactors(energy.HeldOutLevel)
	for _, c := range []struct {
		rate   float64
		keptUp bool
	}{{4, true}, {400, false}} {
		q := question(t, "llama-3.1-8b", c.rate, "1024", "128")
		g := gpus(t, "h100")[0]
		cfg := q.Base
		cfg.GPU = g
		eng, err := simengine.NewEngine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		o := simulate(context.Background(), q, &variant{cfg: eng.Config(), costHour: 3}, 1, sim.RoundRobin, 300)
		r := o.EnergyRanges
		if o.EnergyJPerToken <= 0 || r == nil || r.JPerOutputToken == nil {
			t.Fatalf("rate %v: no energy ranges: %+v", c.rate, o)
		}
		if math.Abs(r.JPerOutputToken.Low-o.EnergyJPerToken*jl) > 1e-9 || math.Abs(r.JPerOutputToken.High-o.EnergyJPerToken*jh) > 1e-9 {
			t.Errorf("rate %v: J/token range %+v for %v, want × %v–%v", c.rate, *r.JPerOutputToken, o.EnergyJPerToken, jl, jh)
		}
		if p := r.AvgPowerWPerGPU; !(p.Low <= o.AvgPowerWPerGPU && o.AvgPowerWPerGPU <= p.High && p.High <= g.TDPWatts) {
			t.Errorf("rate %v: power range %+v for %v W (TDP %v)", c.rate, p, o.AvgPowerWPerGPU, g.TDPWatts)
		}
		if u := r.USDPerMOutputTokens; (u == nil) != c.keptUp || u != nil && !(u.Low < o.USDPerMOutputTokens && o.USDPerMOutputTokens < u.High) {
			t.Errorf("rate %v (kept up %v): $ range %+v for $%v", c.rate, c.keptUp, u, o.USDPerMOutputTokens)
		}
	}
}
