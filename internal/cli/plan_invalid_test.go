package cli

import (
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
