package plan

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/workload"
)

func question(t *testing.T, model string, rate float64, in, out string, slos ...string) Question {
	t.Helper()
	m, err := simengine.LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	din, err := workload.ParseDist(in)
	if err != nil {
		t.Fatal(err)
	}
	dout, err := workload.ParseDist(out)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := workload.NewGenerator(workload.Spec{Input: din, Output: dout, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	set, err := slo.ParseAll(slos)
	if err != nil {
		t.Fatal(err)
	}
	return Question{
		Base: simengine.DefaultConfig(simengine.GPU{}, m, 1), Gen: gen, RateRPS: rate, MeanTokens: din.Mean() + dout.Mean(), SLOs: set,
		Arrivals: func() sim.Arrivals {
			a, err := workload.NewArrivals("poisson", rate, 1, 3)
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
		SearchRequests: 600, ValidateRequests: 2000, Costs: DefaultCosts,
	}
}

func gpus(t *testing.T, names ...string) []simengine.GPU {
	t.Helper()
	var out []simengine.GPU
	for _, n := range names {
		g, err := simengine.LookupGPU(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

// The search's winner meets the SLOs (and again in the longer run); no
// deployment in the space that costs less meets them (checked by brute
// force: every cheaper candidate simulated as the search simulates); the
// next cheaper one fails its long run.
func TestSearchFindsTheCheapest(t *testing.T) {
	q := question(t, "llama-3.1-8b", 40, "1024", "128", "p95(ttft)<300ms", "p99(itl)<40ms")
	q.Space = Space{GPUs: gpus(t, "h100", "a100-80gb", "l40s"), TPs: []int{1, 2}, MaxReplicas: 6, Routers: []string{sim.RoundRobin}}
	ans, err := Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Winner == nil || !ans.Winner.Met {
		t.Fatalf("no winner: %+v", ans.Families)
	}
	t.Logf("winner %s: %v; validation %v", ans.Winner.Candidate, ans.Winner.Verdicts, ans.Validation.Verdicts)
	if !ans.Validation.Met || ans.Validation.Requests != 2000 {
		t.Errorf("winner's validation run: %+v", ans.Validation)
	}
	if ans.NextCheaper == nil || ans.NextCheaper.Met || ans.NextCheaper.CostPerHour >= ans.Winner.CostPerHour {
		t.Fatalf("next cheaper candidate %+v, want one cheaper than $%.2f/h that fails", ans.NextCheaper, ans.Winner.CostPerHour)
	}
	t.Logf("next cheaper %s: %v", ans.NextCheaper.Candidate, ans.NextCheaper.Verdicts)
	cheaperMet := 0
	for _, g := range q.Space.GPUs {
		for _, tp := range q.Space.TPs {
			c := q.Base
			c.GPU, c.TP = g, tp
			eng, err := simengine.NewEngine(c)
			if err != nil {
				continue
			}
			v := &variant{cfg: eng.Config(), costHour: q.Costs[g.Name] * float64(tp)}
			for n := 1; n <= q.Space.MaxReplicas && v.costHour*float64(n) < ans.Winner.CostPerHour-1e-9; n++ {
				if o := simulate(context.Background(), q, v, n, sim.RoundRobin, q.SearchRequests); o.Met {
					cheaperMet++
					t.Errorf("%s costs less than the winner and meets the SLOs", o.Candidate)
				}
			}
		}
	}
	if cheaperMet == 0 && ans.Simulated >= ans.Candidates {
		t.Errorf("the search simulated all %d candidates: no pruning", ans.Candidates)
	}
}

// A budget of 0 in the space keeps the base's, as a server profile sets
// it (SGLang's 8,192-token chunk on an A100, where vLLM's default is
// 2,048).
func TestSearchKeepsTheBaseBudget(t *testing.T) {
	q := question(t, "llama-3.1-8b", 4, "1024", "128", "p95(ttft)<2s")
	q.Base.MaxNumBatchedTokens = 8192
	q.Space = Space{GPUs: gpus(t, "a100-80gb"), TPs: []int{1}, MaxReplicas: 2, MaxBatchedTokens: []int{0}, Routers: []string{sim.RoundRobin}}
	ans, err := Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Winner == nil || ans.Winner.MaxBatchedTokens != 8192 {
		t.Fatalf("winner %+v, want one run with the base's 8,192-token budget", ans.Winner)
	}
}

// Families that cannot work say why: weights that do not fit (the
// engine's numbers), capacity below the load, an SLO no replica count
// meets.
func TestSearchExplainsRejectedFamilies(t *testing.T) {
	q := question(t, "llama-3.1-70b", 20, "1024", "256", "p95(ttft)<2s", "p99(itl)<100ms")
	q.Space = Space{GPUs: gpus(t, "a100-80gb"), TPs: []int{1, 2, 4}, MaxReplicas: 16, Routers: []string{sim.RoundRobin}}
	ans, err := Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[int]Family{}
	for _, f := range ans.Families {
		verdicts[f.TP] = f
		t.Logf("A100-80GB TP%d: %s: %s", f.TP, f.Verdict, f.Reason)
	}
	if f := verdicts[1]; f.Verdict != "memory" || !strings.Contains(f.Reason, "does not fit") || !strings.Contains(f.Reason, "GiB") {
		t.Errorf("TP1: %+v, want a memory verdict with the numbers", f)
	}
	if f := verdicts[2]; f.Verdict != "saturation" || !strings.Contains(f.Reason, "req/s") {
		t.Errorf("TP2: %+v, want saturation", f)
	}
	if f := verdicts[4]; f.Verdict != "slo" || !strings.Contains(f.Reason, "p99(itl)<100ms") {
		t.Errorf("TP4: %+v, want the ITL SLO named", f)
	}
	if ans.Winner != nil {
		t.Errorf("winner %+v, want none", ans.Winner)
	}
}

// One answer per seed, whatever the number of workers.
func TestSearchDeterministic(t *testing.T) {
	run := func(workers int) string {
		q := question(t, "llama-3.1-8b", 30, "512", "128", "p95(ttft)<200ms")
		q.Space = Space{GPUs: gpus(t, "h100", "l40s"), TPs: []int{1, 2}, MaxReplicas: 4, MaxNumSeqs: []int{0, 64}, Routers: []string{sim.RoundRobin, sim.LeastOutstanding}}
		q.Workers, q.ValidateRequests = workers, 800
		ans, err := Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ans)
		return string(b)
	}
	if a, b := run(1), run(3); a != b {
		t.Errorf("1 worker and 3 workers answer differently:\n%s\n%s", a, b)
	}
}

func TestLoadCosts(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "costs.yaml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cat := simengine.NewCatalog()
	c, err := LoadCosts(write("h100: 2.49\na100: 1.10\n"), cat, DefaultCosts)
	if err != nil {
		t.Fatal(err)
	}
	if c["H100-SXM"] != 2.49 || c["A100-80GB"] != 1.10 || c["H200"] != DefaultCosts["H200"] {
		t.Errorf("costs %v", c)
	}
	for _, bad := range []string{"h100: -1\n", "tpu-v5: 1.2\n", "- h100\n", "h100: cheap\n"} {
		if _, err := LoadCosts(write(bad), cat, DefaultCosts); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// A fleet near saturation can meet the SLOs over the search's short run
// and not over the validation's longer one (its queue has not grown yet):
// the search's cheapest is then rejected at validation and the next
// cheapest validated in its place, so the winner is one that meets them
// over the long run. One H100 of Llama-3.1-8B at 97% of its measured
// capacity meets p95(ttft)<300ms over 300 requests and not over 6,000; two
// do.
func TestValidationRejectsWhatOnlyTheShortRunMeets(t *testing.T) {
	q := question(t, "llama-3.1-8b", 1, "1024", "128", "p95(ttft)<300ms")
	q.Space = Space{GPUs: gpus(t, "h100"), TPs: []int{1}, MaxReplicas: 3, Routers: []string{sim.RoundRobin}}
	c := q.Base
	c.GPU = q.Space.GPUs[0]
	eng, err := simengine.NewEngine(c)
	if err != nil {
		t.Fatal(err)
	}
	rate := 0.97 * capacity(context.Background(), eng.Config(), q.Gen)
	q = question(t, "llama-3.1-8b", rate, "1024", "128", "p95(ttft)<300ms")
	q.Space = Space{GPUs: gpus(t, "h100"), TPs: []int{1}, MaxReplicas: 3, Routers: []string{sim.RoundRobin}}
	q.SearchRequests, q.ValidateRequests = 300, 6000
	ans, err := Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ans.Rejected {
		t.Logf("rejected %s: %v", r.Candidate, r.Verdicts)
	}
	if ans.Winner == nil || ans.Validation == nil {
		t.Fatalf("no winner at %.1f req/s; rejected %d", rate, len(ans.Rejected))
	}
	t.Logf("%.1f req/s: winner %s, validation %v", rate, ans.Winner.Candidate, ans.Validation.Verdicts)
	if len(ans.Rejected) == 0 || ans.Rejected[0].Replicas != 1 || ans.Rejected[0].Met || ans.Rejected[0].Requests != 6000 {
		t.Errorf("rejected %+v: want the one-replica fleet, failing its 6,000-request run", ans.Rejected)
	}
	if !ans.Validation.Met || ans.Winner.Replicas != 2 || ans.Validation.Replicas != 2 {
		t.Errorf("winner %s (validation met %v): want two replicas, meeting the SLO over the long run", ans.Winner.Candidate, ans.Validation.Met)
	}
}

func TestAllInvalidNamesEachCauseOnceOnlyWhenEveryFamilyIsInvalid(t *testing.T) {
	fams := []Family{
		{GPU: "H100", TP: 3, Verdict: "invalid", Reason: "heads do not divide by TP 3"},
		{GPU: "A100", TP: 3, Verdict: "invalid", Reason: "heads do not divide by TP 3"},
		{GPU: "H200", TP: 8, Verdict: "invalid", Reason: "TP 8 needs 8 GPUs"},
	}
	if got, want := AllInvalid(fams), "heads do not divide by TP 3; TP 8 needs 8 GPUs"; got != want {
		t.Errorf("AllInvalid = %q, want %q", got, want)
	}
	fams[1].Verdict = "ok"
	if got := AllInvalid(fams); got != "" {
		t.Errorf("AllInvalid with a valid family = %q, want empty", got)
	}
}
