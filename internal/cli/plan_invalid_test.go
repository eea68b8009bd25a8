package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlanInvalidTPIsUsage: a TP the model's heads do not divide by is bad
// input (exit 2 naming the cause), not a failed SLO.
func TestPlanInvalidTPIsUsage(t *testing.T) {
	code, _, stderr := kneeCmd(t, "plan", "--tp", "3", "--rate", "5", "--slo", "p95(ttft)<2s", "--no-store")
	if code != ExitUsage || !strings.Contains(stderr, "heads") {
		t.Errorf("plan --tp 3: exit %d, want 2 naming the heads:\n%s", code, stderr)
	}
}

// TestPlanNoWinnerFailsAsJSON: when no deployment meets the SLOs, --json
// exits 3 as the text form does (a script gating on the exit must not pass),
// and still prints the whole answer.
func TestPlanNoWinnerFailsAsJSON(t *testing.T) {
	args := []string{"plan", "--model", "llama-3.1-8b", "--gpus", "l40s", "--tp", "1", "--max-replicas", "1",
		"--max-num-seqs", "0", "--max-num-batched-tokens", "0", "--routers", "round-robin",
		"--rate", "5", "--input-tokens", "256", "--output-tokens", "16", "--requests", "100",
		"--slo", "p95(ttft)<1us", "--seed", "1", "--no-store"}
	code, out, stderr := kneeCmd(t, args...)
	if code != ExitSLO {
		t.Fatalf("text form: exit %d, want %d:\n%s\n%s", code, ExitSLO, out, stderr)
	}
	code, js, stderr := kneeCmd(t, append(args, "--json")...)
	if code != ExitSLO {
		t.Errorf("--json: exit %d, want %d as the text form:\n%s", code, ExitSLO, stderr)
	}
	var ans struct {
		Winner   *struct{ GPU string }      `json:"winner"`
		Families []struct{ Verdict string } `json:"families"`
	}
	if err := json.Unmarshal([]byte(js), &ans); err != nil || ans.Winner != nil || len(ans.Families) == 0 {
		t.Errorf("--json without a winner: %v %+v, want the answer printed with no winner:\n%s", err, ans, js)
	}
}
