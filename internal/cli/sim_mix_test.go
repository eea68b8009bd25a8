package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// simOut runs knee sim with --out and returns the records, summary.json's
// top level and its classes by name.
func simOut(t *testing.T, args ...string) ([]record.Request, map[string]any, map[string]map[string]any) {
	t.Helper()
	out := t.TempDir()
	code, _, stderr := kneeEnv(t, benchEnv(t), append([]string{"sim", "--no-store", "--quiet", "--out", out}, args...)...)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	var rep struct {
		Classes []struct {
			Name    string         `json:"name"`
			Probe   bool           `json:"probe"`
			Summary map[string]any `json:"summary"`
		} `json:"classes"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &rep)
	classes := map[string]map[string]any{}
	for _, c := range rep.Classes {
		if c.Probe != (c.Name == record.ProbeClass) {
			t.Errorf("class %s: probe %v", c.Name, c.Probe)
		}
		classes[c.Name] = c.Summary
	}
	return readRecords(t, filepath.Join(out, "records.jsonl")), top, classes
}

const simSharedAndOwnUsersMix = ownUsersMix + `  - name: shared
    share: 1
    input_tokens: "128"
    output_tokens: "16"
`

// TestSimOwnConcurrencyMix: knee sim runs classes with their own
// concurrency as pools of their own beside the --concurrency users the
// share classes divide: each class's in-flight requests fill its users and
// never exceed them, the per-class figures add up to the overall ones, the
// load line says what ran, and the seed reproduces the run.
func TestSimOwnConcurrencyMix(t *testing.T) {
	path := writeMix(t, simSharedAndOwnUsersMix)
	recs, top, classes := simOut(t, "--mix", path, "--concurrency", "3", "--requests", "400")
	byClass := map[string][]record.Request{}
	for _, r := range recs {
		byClass[r.Class] = append(byClass[r.Class], r)
	}
	if len(recs) != 400 || len(byClass) != 3 {
		t.Fatalf("%d records in classes %d; want 400 in agents, chat and shared", len(recs), len(byClass))
	}
	sum := 0.0
	for name, users := range map[string]int{"agents": 6, "chat": 2, "shared": 3} {
		if most := inFlightMost(byClass[name]); most != users {
			t.Errorf("class %s: %d in flight at once; want its %d users", name, most, users)
		}
		n := classes[name]["requests"].(float64)
		if int(n) != len(byClass[name]) {
			t.Errorf("class %s: %g requests in the report, %d records", name, n, len(byClass[name]))
		}
		sum += n
	}
	overall := top["requests"].(float64)
	if sum != overall {
		t.Errorf("classes hold %g requests, the run %g", sum, overall)
	}
	notes, _ := json.Marshal(top["notes"])
	if !strings.Contains(string(notes), "load split among the mix's classes, of 400 requests: agents ") || !strings.Contains(string(notes), "its own 6 users") {
		t.Errorf("no note says how the load was split: %s", notes)
	}
	load := top["run"].(map[string]any)["load"].(string)
	if !strings.Contains(load, "concurrency 3") || !strings.Contains(load, "agents closed loop 6 users; chat closed loop 2 users") {
		t.Errorf("load line %q: want the shared users and each class's own", load)
	}
	again, _, _ := simOut(t, "--mix", path, "--concurrency", "3", "--requests", "400")
	for i := range recs {
		if recs[i].ID != again[i].ID || recs[i].Class != again[i].Class || recs[i].Done != again[i].Done || recs[i].InputTokens != again[i].InputTokens {
			t.Fatalf("record %d differs between two runs of one seed: %+v, then %+v", i, recs[i], again[i])
		}
	}
}

// TestSimProbesShowBackgroundLoad: knee sim --probe-rate sends probes as
// bench does (its shape and class), keeps them out of the overall figures
// and reports their TTFT apart; beside a heavy load the probes wait.
func TestSimProbesShowBackgroundLoad(t *testing.T) {
	run := func(args ...string) map[string]map[string]any {
		recs, top, classes := simOut(t, append([]string{"--probe-rate", "10", "--probe-input-tokens", "8", "--duration", "10s", "--seed", "3"}, args...)...)
		probes := 0
		for _, r := range recs {
			if r.Class == record.ProbeClass {
				probes++
				if r.MaxTokens != 1 || r.PromptTokensRequested != 8 {
					t.Errorf("probe %d: %d prompt, %d output tokens; want 8 and 1", r.ID, r.PromptTokensRequested, r.MaxTokens)
				}
			}
		}
		overall := top["requests"].(float64)
		if probes != 100 || classes["probe"] == nil || classes["main"] == nil || overall != classes["main"]["requests"].(float64) || int(overall) != len(recs)-probes {
			t.Fatalf("%d probes (want 100 in 10 s at 10/s), classes %v, overall %g requests of %d records: want the probes apart", probes, classes, overall, len(recs))
		}
		return classes
	}
	light := run("--concurrency", "1", "--input-tokens", "64", "--output-tokens", "8")
	heavy := run("--concurrency", "64", "--input-tokens", "4096", "--output-tokens", "64")
	lp, hp := ttftStat(light["probe"], "p50"), ttftStat(heavy["probe"], "p50")
	t.Logf("probe TTFT p50: light %.1f ms, heavy %.1f ms; main TTFT p50 heavy %.1f ms", lp, hp, ttftStat(heavy["main"], "p50"))
	if hp < 4*lp {
		t.Errorf("probe TTFT p50 beside a heavy load %.1f ms, beside a light one %.1f ms: want the heavy load's at least 4×", hp, lp)
	}
}

// TestSimSweepProbes: knee sim sweep --probe-rate gives every step the
// probes' p95 TTFT, higher beside the heavier step, in sweep.json and the
// table.
func TestSimSweepProbes(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := kneeEnv(t, benchEnv(t), "sim", "sweep", "--no-store", "--quiet", "--out", out, "--concurrency", "1,64", "--duration", "5s",
		"--input-tokens", "2048", "--output-tokens", "64", "--probe-rate", "10")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, md := readSweepSteps(t, out)
	if len(r.Steps) != 2 || r.Steps[0].ProbeTTFTP95 == nil || r.Steps[1].ProbeTTFTP95 == nil {
		t.Fatalf("steps %+v: want two, each with the probes' TTFT", r.Steps)
	}
	if lo, hi := *r.Steps[0].ProbeTTFTP95, *r.Steps[1].ProbeTTFTP95; hi < 4*lo {
		t.Errorf("probe TTFT p95 %.1f ms beside 64 users, %.1f beside 1: want the load to delay the probes", hi, lo)
	}
	if !strings.Contains(md, "probe TTFT p95") {
		t.Errorf("sweep.md has no probe column:\n%s", md)
	}
}

// TestSimMixLoadLine: the load line of a mix with own rates says what ran:
// --rate and --arrival are the share classes' load, each own-rate class
// keeps its own arrival, and the run's bound follows every load.
func TestSimMixLoadLine(t *testing.T) {
	path := writeMix(t, `seed: 11
classes:
  - name: steady
    rate: 10
    arrival: constant
    input_tokens: "64"
    output_tokens: "4"
  - name: open
    share: 1
    input_tokens: "32"
    output_tokens: "4"
`)
	_, top, _ := simOut(t, "--mix", path, "--rate", "5", "--arrival", "gamma", "--burstiness", "0.5", "--requests", "100")
	load := top["run"].(map[string]any)["load"].(string)
	if want := "open loop, 5 req/s gamma (burstiness 0.5) shared by open; own loads: steady open loop 10 req/s constant, 100 requests"; load != want {
		t.Errorf("load line %q,\nwant %q", load, want)
	}
}
