package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// probeRun runs knee bench against the embedded server with probes and
// returns the JSON report's classes by name, and the records.
func probeRun(t *testing.T, args ...string) (map[string]map[string]any, []record.Request) {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"bench", "--no-store", "--quiet", "--json", "--out", out, "--seed", "3",
		"--probe-rate", "20", "--probe-input-tokens", "8", "--probe-output-tokens", "1"}, args...)
	code, stdout, stderr := kneeEnv(t, benchEnv(t), args...)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep struct {
		Requests int `json:"requests"`
		Classes  []struct {
			Name    string         `json:"name"`
			Probe   bool           `json:"probe"`
			Summary map[string]any `json:"summary"`
		} `json:"classes"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	classes := map[string]map[string]any{}
	for _, c := range rep.Classes {
		classes[c.Name] = c.Summary
	}
	recs := readRecords(t, filepath.Join(out, "records.jsonl"))
	probes := 0
	for _, r := range recs {
		if r.Class == record.ProbeClass {
			probes++
			if r.MaxTokens != 1 {
				t.Errorf("probe %d asked for %d tokens, want 1", r.ID, r.MaxTokens)
			}
		}
	}
	if main, ok := classes["main"]; !ok || classes["probe"] == nil {
		t.Fatalf("classes %v: want main and probe", rep.Classes)
	} else if int(main["requests"].(float64)) != rep.Requests {
		t.Errorf("overall requests %d, main class %v: probes must stay out of the overall figures", rep.Requests, main["requests"])
	}
	if probes == 0 || int(classes["probe"]["requests"].(float64)) == 0 {
		t.Fatalf("no probe records (%d) or none measured", probes)
	}
	return classes, recs
}

func ttftStat(c map[string]any, stat string) float64 {
	return c["ttft_ms"].(map[string]any)[stat].(float64)
}

func TestProbeFlagsRejected(t *testing.T) {
	for _, args := range [][]string{{"--probe-rate", "-1"}, {"--probe-rate", "5", "--probe-output-tokens", "0"}} {
		code, _, stderr := kneeEnv(t, benchEnv(t), append([]string{"bench", "--no-store", "--requests", "1", "--concurrency", "1"}, args...)...)
		if code != ExitUsage || !strings.Contains(stderr, "--probe-") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the flag", args, code, stderr)
		}
	}
}

// TestProbeTextReport: the text report has the per-class table.
func TestProbeTextReport(t *testing.T) {
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--no-store", "--quiet", "--concurrency", "2", "--requests", "10",
		"--input-tokens", "32", "--output-tokens", "4", "--probe-rate", "20")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Per class") || !strings.Contains(stdout, "probe*") || !strings.Contains(stdout, "probe: probes beside the load, left out of the overall figures") {
		t.Errorf("text report lacks the per-class table:\n%s", stdout)
	}
}
