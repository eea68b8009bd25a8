package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A saved scenario repeats a run exactly: the simulator is deterministic,
// so the records must be byte-identical, seed included though none was given.
func TestScenarioFileRepeatsRun(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	code, _, errs := kneeCmd(t, "sim", "--quiet", "--rate", "7", "--arrival", "gamma", "--burstiness", "0.5",
		"--requests", "60", "--input-tokens", "256:512", "--output-tokens", "32", "--slo", "p95(ttft)<2s",
		"--save-scenario", scen, "--out", a)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	saved, err := os.ReadFile(scen)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rate: \"7\"", "burstiness: \"0.5\"", "seed: ", "- p95(ttft)<2s"} {
		if !strings.Contains(string(saved), want) {
			t.Errorf("scenario lacks %q:\n%s", want, saved)
		}
	}
	if code, _, errs := kneeCmd(t, "sim", "--quiet", "--scenario-file", scen, "--out", b); code != ExitOK {
		t.Fatalf("repeat: exit %d: %s", code, errs)
	}
	ra, _ := os.ReadFile(filepath.Join(a, "records.jsonl"))
	rb, _ := os.ReadFile(filepath.Join(b, "records.jsonl"))
	if len(ra) == 0 || !bytes.Equal(ra, rb) {
		t.Errorf("the repeated run differs (%d vs %d bytes)", len(ra), len(rb))
	}
	// The command line overrides the file.
	c := filepath.Join(dir, "c")
	if code, _, errs := kneeCmd(t, "sim", "--quiet", "--scenario-file", scen, "--requests", "10", "--out", c); code != ExitOK {
		t.Fatalf("override: exit %d: %s", code, errs)
	}
	if n := len(readRecords(t, filepath.Join(c, "records.jsonl"))); n != 10 {
		t.Errorf("--requests on the command line gave %d records, want 10", n)
	}
}

func TestScenarioFileBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{"rate: 5\nbogus: 1\n", `s.yaml:2: "bogus" is not a setting`},
		{"rate: [1, [2]]\n", "want a value or a list"},
		{"rate: fast\n", `rate "fast"`},
		{"- rate\n", "want a mapping"},
		{"", "empty file"},
	} {
		p := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := kneeCmd(t, "sim", "--scenario-file", p)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("scenario %q: exit %d, stderr %q; want exit 2 naming %q", tc.body, code, errs, tc.want)
		}
	}
	if code, _, errs := kneeCmd(t, "bench", "--scenario-file", filepath.Join(dir, "missing.yaml")); code != ExitUsage || !strings.Contains(errs, "missing.yaml") {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
}
