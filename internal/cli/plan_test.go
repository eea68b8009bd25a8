package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// knee plan prints the cheapest deployment, its validation, the next
// cheaper one failing, the families and the Pareto front; --json has the
// same answer; bad flags are usage errors.
func TestPlanCommand(t *testing.T) {
	args := []string{"plan", "--model", "llama-3.1-8b", "--gpus", "h100,l40s", "--tp", "1,2", "--max-replicas", "4",
		"--max-num-seqs", "0", "--max-num-batched-tokens", "0", "--routers", "round-robin",
		"--rate", "30", "--input-tokens", "512", "--output-tokens", "128", "--requests", "500", "--validate-requests", "1000",
		"--slo", "p95(ttft)<300ms", "--slo", "p99(itl)<40ms", "--seed", "2"}
	code, out, errs := kneeCmd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{"Cheapest deployment meeting every SLO:", "validation (1000 requests):", "meets every SLO",
		"Next cheaper deployment:", "FAILS", "By GPU and TP:", "Pareto front", "The winner's validation run is stored as run "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, js, errs := kneeCmd(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errs)
	}
	var ans struct {
		Winner     struct{ GPU string } `json:"winner"`
		Validation struct{ Met bool }   `json:"validation"`
		Seed       uint64               `json:"seed"`
	}
	if err := json.Unmarshal([]byte(js), &ans); err != nil || ans.Winner.GPU == "" || !ans.Validation.Met || ans.Seed != 2 {
		t.Fatalf("--json: %v %+v\n%s", err, ans, js)
	}
	if !strings.Contains(out, ans.Winner.GPU) {
		t.Errorf("text and JSON winners differ: %s", ans.Winner.GPU)
	}
	costs := filepath.Join(t.TempDir(), "costs.yaml")
	if err := os.WriteFile(costs, []byte("h100: -3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{
		{"--rate", "10"}, // no SLO
		{"--rate", "10", "--slo", "p95(ttft)<1s", "--tp", "0"}, // bad TP
		{"--slo", "p95(ttft)<1s"},                              // no rate
		{"--rate", "10", "--slo", "p95(ttft)<1s", "--gpus", "tpu"},
		{"--rate", "10", "--slo", "p95(ttft)<1s", "--routers", "random"},
		{"--rate", "10", "--slo", "p95(ttft)<1s", "--cost-file", costs},
	} {
		code, _, errs := kneeCmd(t, append([]string{"plan"}, bad...)...)
		if code != 2 || !strings.Contains(errs, "--") {
			t.Errorf("%v: exit %d (%s), want 2 naming the flag", bad, code, errs)
		}
	}
}
