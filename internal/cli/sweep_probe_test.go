package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// sweepStepsJSON is what these tests read of sweep.json's steps.
type sweepStepsJSON struct {
	Steps []struct {
		Load          float64  `json:"load"`
		Requests      int      `json:"requests"`
		ProbeTTFTP95  *float64 `json:"probe_ttft_p95_ms"`
		Oversaturated string   `json:"oversaturated"`
		Summary       struct {
			TTFT struct {
				Count int `json:"count"`
			} `json:"ttft_ms"`
		} `json:"summary"`
	} `json:"steps"`
	Notes []string `json:"notes"`
}

func readSweepSteps(t *testing.T, dir string) (sweepStepsJSON, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r sweepStepsJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	md, err := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if err != nil {
		t.Fatal(err)
	}
	return r, string(md)
}

// TestSweepProbesBesideEveryStep: --probe-rate sends probes beside every
// step (their records kept); each step's summary counts its own requests only, and the table has
// the probes' p95 TTFT, higher beside the heavier step.
func TestSweepProbesBesideEveryStep(t *testing.T) {
	skipEndToEndIfShort(t, "two 3 s steps on a small GPU with probes, draining 2,048-token prompts", "TestShardedSweepMixAndProbes", "TestProbeTextReport")
	out := t.TempDir()
	code, _, stderr := kneeEnv(t, benchEnv(t), "sweep", "--no-store", "--quiet", "--out", out, "--concurrency", "1,16", "--duration", "3s", "--requests", "1000",
		"--input-tokens", "2048", "--output-tokens", "8", "--gpu", "a10g", "--probe-rate", "10")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, md := readSweepSteps(t, out)
	if len(r.Steps) != 2 {
		t.Fatalf("%d steps, want 2", len(r.Steps))
	}
	for _, s := range r.Steps {
		main, probes := 0, 0
		for _, rec := range readRecords(t, filepath.Join(out, fmt.Sprintf("records_concurrency_%g.jsonl", s.Load))) {
			if rec.Class == record.ProbeClass {
				probes++
			} else {
				main++
			}
		}
		if probes < 10 || s.Requests != main {
			t.Errorf("step %g: %d probes sent, the summary counts %d requests of %d main ones: want probes beside it, out of its summary", s.Load, probes, s.Requests, main)
		}
		if s.ProbeTTFTP95 == nil || *s.ProbeTTFTP95 <= 0 {
			t.Fatalf("step %g has no probe TTFT p95", s.Load)
		}
	}
	light, heavy := *r.Steps[0].ProbeTTFTP95, *r.Steps[1].ProbeTTFTP95
	t.Logf("probe TTFT p95: %.1f ms beside 1 in flight, %.1f ms beside 16", light, heavy)
	if heavy < 2*light {
		t.Errorf("probe TTFT p95 beside 16 in flight %.1f ms, beside 1 %.1f ms: want the heavier load's at least twice", heavy, light)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "probes: 10/s of 16 input, 1 output tokens beside every step") {
		t.Errorf("the notes do not say what the probes were: %q", r.Notes)
	}
	if !strings.Contains(md, "probe TTFT p95") {
		t.Errorf("the sweep table has no probe column:\n%s", md)
	}
}

// TestSweepStopsWhenOversaturated: on an L4 with 1,024-token prompts a low
// rate runs its whole step, a high one stops over-saturated, and a higher
// one is not measured; the notes name it. Closed-loop steps refuse the flag.
func TestSweepStopsWhenOversaturated(t *testing.T) {
	skipEndToEndIfShort(t, "a 12 s step and an over-saturated one in real time", "TestBenchStopsWhenOversaturated")
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "sweep", "--no-store", "--quiet", "--out", out, "--rate", "1,60,120",
		"--duration", "12s", "--requests", "2000", "--input-tokens", "1024", "--output-tokens", "64", "--gpu", "l4",
		"--stop-oversaturated", "--grace", "2s")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, md := readSweepSteps(t, out)
	if len(r.Steps) != 2 || r.Steps[0].Load != 1 || r.Steps[1].Load != 60 {
		t.Fatalf("steps %+v: want 1 and 60 req/s, and 120 left out", r.Steps)
	}
	if r.Steps[0].Oversaturated != "" || r.Steps[0].Requests == 0 {
		t.Errorf("1 req/s: %d requests, over-saturated %q: want the whole 12 s step measured", r.Steps[0].Requests, r.Steps[0].Oversaturated)
	}
	if !strings.Contains(r.Steps[1].Oversaturated, "over-saturated") || r.Steps[1].Requests >= 540 {
		t.Errorf("60 req/s: %d requests, over-saturated %q: want it stopped early, saying why", r.Steps[1].Requests, r.Steps[1].Oversaturated)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "120 req/s left out") || !strings.Contains(stdout+md, "stopped: over-saturated") {
		t.Errorf("the notes do not name the load left out: %q", r.Notes)
	}

	code, _, stderr = kneeEnv(t, benchEnv(t), "sweep", "--no-store", "--quiet", "--concurrency", "1,2", "--requests", "2", "--stop-oversaturated")
	if code != ExitUsage || !strings.Contains(stderr, "--stop-oversaturated applies to rate steps") {
		t.Errorf("closed-loop steps with --stop-oversaturated: exit %d, stderr %q; want 2", code, stderr)
	}
}
