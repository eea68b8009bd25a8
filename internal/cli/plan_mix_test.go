package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPlanMixEveryClassMeetsItsSLOs: with a mix, the winner meets every
// class's own objectives in its validation run, and the next cheaper
// deployment fails one (chat's tight TTFT), which is why it lost.
func TestPlanMixEveryClassMeetsItsSLOs(t *testing.T) {
	mix := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(mix, []byte(`seed: 7
classes:
  - name: chat
    share: 0.5
    input_tokens: "256:768"
    output_tokens: "128:256"
    slo: ["p95(ttft)<120ms"]
  - name: summarize
    share: 0.3
    input_tokens: "2048:4096"
    output_tokens: "128"
    model: adapter-summarize
    slo: ["p95(ttft)<2s"]
  - name: sql
    share: 0.2
    input_tokens: "512"
    output_tokens: "64:128"
    model: adapter-sql
    slo: ["p95(e2e)<4s"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := kneeCmd(t, "plan", "--mix", mix, "--rate", "20", "--gpus", "h100", "--tp", "1", "--max-num-seqs", "0",
		"--max-num-batched-tokens", "0", "--routers", "round-robin", "--requests", "400", "--validate-requests", "1000",
		"--max-loras", "2", "--confidence", "0", "--json", "--no-store")
	if code != ExitOK {
		t.Fatalf("plan --mix: exit %d: %s", code, stderr)
	}
	type class struct {
		Name string `json:"name"`
		Met  bool   `json:"met"`
	}
	type outcome struct {
		Replicas int     `json:"replicas"`
		Met      bool    `json:"met"`
		Classes  []class `json:"classes"`
	}
	var ans struct {
		Winner      *outcome `json:"winner"`
		Validation  *outcome `json:"validation"`
		NextCheaper *outcome `json:"next_cheaper"`
		ClassSLOs   []string `json:"class_slos"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil {
		t.Fatal(err)
	}
	names := func(o *outcome) (n []string) {
		for _, c := range o.Classes {
			n = append(n, c.Name)
		}
		return n
	}
	v := ans.Validation
	if ans.Winner == nil || v == nil || !v.Met || !slices.Equal(names(v), []string{"chat", "summarize", "sql"}) {
		t.Fatalf("winner %+v, validation %+v; want a winner whose validation judges chat, summarize, sql", ans.Winner, v)
	}
	for _, c := range v.Classes {
		if !c.Met {
			t.Errorf("the winner's validation fails class %s", c.Name)
		}
	}
	nc := ans.NextCheaper
	if nc == nil || nc.Met || nc.Replicas >= v.Replicas {
		t.Fatalf("next cheaper %+v; want fewer replicas that fail", nc)
	}
	failedChat := false
	for _, c := range nc.Classes {
		failedChat = failedChat || (c.Name == "chat" && !c.Met)
	}
	if !failedChat {
		t.Errorf("the next cheaper deployment's classes %+v: want chat (the tightest objective) failing", nc.Classes)
	}
	if len(ans.ClassSLOs) != 3 {
		t.Errorf("class_slos %v: want the three classes' objectives", ans.ClassSLOs)
	}
}
