package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/calibrate"
)

type calibrateFromJSON struct {
	Profile   calibrate.Profile      `json:"profile"`
	Constants []calibrate.Constant   `json:"constants"`
	Fitted    []calibrate.Comparison `json:"fitted"`
	HeldOut   []calibrate.Comparison `json:"held_out"`
	Range     calibrate.MetricErrors `json:"stated_range"`
}

// calibrateFrom runs knee calibrate --from and checks the profile it
// writes loads and drives knee sim.
func calibrateFrom(t *testing.T, env map[string]string, args ...string) calibrateFromJSON {
	t.Helper()
	prof := filepath.Join(t.TempDir(), "profile.yaml")
	code, out, errs := kneeEnv(t, env, append([]string{"calibrate", "--json", "--out", prof}, args...)...)
	if code != 0 {
		t.Fatalf("knee calibrate %v: exit %d: %s", args, code, errs)
	}
	var res calibrateFromJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("knee calibrate %v --json: %v\n%s", args, err, out)
	}
	if _, err := calibrate.LoadProfile(prof); err != nil {
		t.Fatalf("the written profile does not load: %v", err)
	}
	var s struct {
		Completed int `json:"completed"`
	}
	simJSON(t, &s, "--profile", prof, "--requests", "4", "--concurrency", "2", "--input-tokens", "128", "--output-tokens", "16")
	if s.Completed != 4 {
		t.Fatalf("knee sim --profile: %d completed, want 4", s.Completed)
	}
	return res
}

// knee calibrate --from fits a profile, with no live server, from every
// kind of result file knee reads (internal/ingest/testdata), and says for
// each constant whether the data pinned it.
func TestCalibrateFromResultFiles(t *testing.T) {
	dir := filepath.Join("..", "ingest", "testdata")
	for _, c := range []struct {
		path  string
		steps int
	}{
		{"vllm-sweep", 5}, {"guidellm_benchmarks.json", 6}, {"aiperf", 4}, {"inference-perf", 5},
		{"vllm_detailed.json", 1}, {"records.jsonl", 1},
	} {
		t.Run(c.path, func(t *testing.T) {
			res := calibrateFrom(t, nil, "--from", filepath.Join(dir, c.path))
			if got := len(res.Fitted); got != c.steps {
				t.Errorf("%d load steps fitted, want %d", got, c.steps)
			}
			var pinned, kept int
			for _, k := range res.Constants {
				if k.Pinned {
					pinned++
				} else {
					kept++
				}
				if k.Why == "" {
					t.Errorf("constant %s: no reason given", k.Name)
				}
			}
			if pinned == 0 || kept == 0 {
				t.Errorf("%d constants pinned, %d kept at defaults: want both said", pinned, kept)
			}
			if res.Profile.FitPoints == 0 || !strings.Contains(res.Profile.Note, "default") {
				t.Errorf("profile %+v: want its fit points and what stays at the default", res.Profile)
			}
		})
	}
}

// A sweep knee stored: calibrate --from run:ID fits its steps, and the
// step it holds back is predicted within the range it states.
func TestCalibrateFromStoredSweep(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	env := map[string]string{"KNEE_DB": db}
	code, _, errs := kneeEnv(t, env, "sim", "sweep", "--concurrency", "1,2,4,8,16", "--requests", "120", "--input-tokens", "1024", "--output-tokens", "128", "--seed", "1", "--quiet")
	if code != 0 {
		t.Fatalf("knee sim sweep: exit %d: %s", code, errs)
	}
	res := calibrateFrom(t, env, "--from", "run:last", "--holdout", "1")
	if len(res.Fitted) != 4 || len(res.HeldOut) != 1 {
		t.Fatalf("%d fitted, %d held out; want 4 and 1", len(res.Fitted), len(res.HeldOut))
	}
	h := res.HeldOut[0]
	t.Logf("held out %s: errors TTFT %+.1f%%, TPOT %+.1f%%, throughput %+.1f%%; stated ±%.1f%%, ±%.1f%%, ±%.1f%%", h.Observation.Source,
		100*h.TTFTError, 100*h.TPOTError, 100*h.TPSError, 100*res.Range.TTFTMax, 100*res.Range.TPOTMax, 100*res.Range.TPSMax)
	if h.Observation.Concurrency != 4 {
		t.Errorf("held out the step at concurrency %v, want 4 (the middle of 1..16)", h.Observation.Concurrency)
	}
	for _, e := range [][2]float64{{h.TTFTError, res.Range.TTFTMax}, {h.TPOTError, res.Range.TPOTMax}, {h.TPSError, res.Range.TPSMax}} {
		if !(math.Abs(e[0]) <= e[1]) {
			t.Errorf("held-out error %+.1f%% beyond the stated ±%.1f%%", 100*e[0], 100*e[1])
		}
	}
	// A single stored run (not a sweep): one step at its concurrency.
	code, _, errs = kneeEnv(t, env, "sim", "--concurrency", "4", "--requests", "100", "--input-tokens", "512", "--output-tokens", "64", "--seed", "1", "--quiet")
	if code != 0 {
		t.Fatalf("knee sim: exit %d: %s", code, errs)
	}
	one := calibrateFrom(t, env, "--from", "run:last")
	if len(one.Fitted) != 1 || one.Fitted[0].Observation.Concurrency != 4 {
		t.Fatalf("stored run: %+v; want one step at concurrency 4", one.Fitted)
	}
	for _, k := range one.Constants {
		if k.Name == "front_end" && (k.Pinned || k.Value <= 0) {
			t.Errorf("front end %+v: no step at one request in flight, so the default, shown as its value", k)
		}
	}
}

// Bad --from input is a usage error naming what was wrong.
func TestCalibrateFromRefused(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.json")
	if err := os.WriteFile(notes, []byte(`{"hello": "world"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", filepath.Join(dir, "absent.json")}, "absent.json"},
		{[]string{"--from", empty}, "no result file"},
		{[]string{"--from", notes}, "unknown import format"},
		{[]string{"--from", filepath.Join("..", "ingest", "testdata", "vllm-sweep"), "--holdout", "4"}, "hold out"},
		{[]string{"--from", filepath.Join("..", "ingest", "testdata", "vllm-sweep"), "--holdout", "-1"}, "--holdout"},
		{[]string{"--from", "run:7"}, "7"},
	} {
		code, _, errs := kneeCmd(t, append([]string{"calibrate"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("knee calibrate %v: exit %d, stderr %q; want 2 naming %q", c.args, code, errs, c.want)
		}
	}
}
