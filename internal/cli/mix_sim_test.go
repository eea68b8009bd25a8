package cli

import (
	"encoding/json"
	"testing"
)

// simMix runs knee sim with the three-class mix (two adapters and the base
// model) and returns the JSON report's classes and top level.
func simMix(t *testing.T, maxLoRAs string) ([]map[string]any, map[string]any) {
	t.Helper()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "sim", "--no-store", "--quiet", "--json", "--mix", writeMix(t, threeClassMix),
		"--rate", "20", "--requests", "600", "--max-loras", maxLoRAs)
	if code != ExitSLO { // chat's 1 ms TTFT objective fails
		t.Fatalf("exit %d, want 3; stderr:\n%s", code, stderr)
	}
	var rep struct {
		Classes []map[string]any `json:"classes"`
	}
	var top map[string]any
	json.Unmarshal([]byte(stdout), &rep)
	json.Unmarshal([]byte(stdout), &top)
	if len(rep.Classes) != 3 {
		t.Fatalf("classes %v", rep.Classes)
	}
	return rep.Classes, top
}

func classP95(c map[string]any, metric string) float64 {
	return c["summary"].(map[string]any)[metric].(map[string]any)["p95"].(float64)
}

// TestSimMixAdapterLimit: in the simulator, one adapter slot for two
// adapters makes the adapters' requests wait for each other (and reload),
// so their TTFT grows, while the base model's barely moves; two slots
// remove the wait. The per-class requests add up to the run's.
func TestSimMixAdapterLimit(t *testing.T) {
	one, top := simMix(t, "1")
	two, _ := simMix(t, "2")
	sum := 0.0
	for _, c := range one {
		sum += c["summary"].(map[string]any)["requests"].(float64)
	}
	if sum != top["requests"].(float64) {
		t.Errorf("classes hold %g requests, the run %v", sum, top["requests"])
	}
	// summarize runs on adapter tenant-sum, base on the base model.
	s1, s2 := classP95(one[1], "ttft_ms"), classP95(two[1], "ttft_ms")
	b1, b2 := classP95(one[2], "ttft_ms"), classP95(two[2], "ttft_ms")
	t.Logf("TTFT p95: summarize %.1f ms with one slot, %.1f with two; base %.1f and %.1f", s1, s2, b1, b2)
	if s1 < 3*s2 {
		t.Errorf("adapter class TTFT p95 %.1f ms with --max-loras 1 vs %.1f with 2: want the limit to show (3× at least)", s1, s2)
	}
	if b1 > 3*b2 {
		t.Errorf("base class TTFT p95 %.1f ms with --max-loras 1 vs %.1f with 2: base requests need no slot", b1, b2)
	}
	again, _ := simMix(t, "1")
	if classP95(again[1], "ttft_ms") != s1 || classP95(again[0], "e2e_ms") != classP95(one[0], "e2e_ms") {
		t.Error("the same seed did not reproduce the simulated mix exactly")
	}
}
