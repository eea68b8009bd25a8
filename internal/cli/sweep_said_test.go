package cli

import (
	"strings"
	"testing"
)

// TestSweepPrintsWhatItKeeps: a sweep prints what knee report prints of
// the stored sweep, byte for byte — its title, the steps, the SLOs, every
// note and warning (which the database keeps now) and the summary step's
// detail — for a measured sweep and a simulated one (issue 39 item 2).
func TestSweepPrintsWhatItKeeps(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"sweep", []string{"sweep", "--concurrency", "1,2", "--requests", "8", "--input-tokens", "16", "--output-tokens", "4",
			"--seed", "2", "--slo", "p95(ttft)<2s", "--quiet"}},
		{"sim sweep", []string{"sim", "sweep", "--rate", "2,4", "--requests", "20", "--seed", "2", "--slo", "p95(ttft)<2s", "--quiet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := benchEnv(t)
			code, live, stderr := kneeEnv(t, env, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			code, stored, stderr := kneeEnv(t, env, "report", "last")
			if code != ExitOK {
				t.Fatalf("report: exit %d: %s", code, stderr)
			}
			for _, want := range []string{"knee sweep report · run 1", "SLOs: p95(ttft)<2s", "Note:      ", "stored as run 1", "Warning:   ", "Step "} {
				if !strings.Contains(live, want) {
					t.Errorf("the live sweep does not print %q:\n%s", want, live)
				}
			}
			if live != stored {
				t.Errorf("the live sweep and knee report of it differ at %s", firstDiff(live, stored))
			}
		})
	}
}
