package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// knee diagnose RUN --step N diagnoses that step of a stored sweep: its
// verdict and facts are those of the step's records exported by knee
// records --step N and diagnosed as a file; a step the sweep lacks, a
// negative one, or --step with a file is bad input naming what it wants.
func TestDiagnoseStoredSweepStep(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"KNEE_DB": filepath.Join(dir, "knee.db")}
	if code, _, errs := kneeEnv(t, env, "sweep", "--concurrency", "1,4", "--requests", "12", "--input-tokens", "32", "--output-tokens", "4", "--seed", "1", "--quiet"); code != ExitOK {
		t.Fatalf("knee sweep: exit %d: %s", code, errs)
	}
	recs := filepath.Join(dir, "step0.jsonl")
	if code, _, errs := kneeEnv(t, env, "records", "last", "--step", "0", "--out", recs); code != ExitOK {
		t.Fatalf("knee records --step 0: exit %d: %s", code, errs)
	}
	code, fromRun, errs := kneeEnv(t, env, "diagnose", "last", "--step", "0", "--json")
	if code != ExitOK {
		t.Fatalf("knee diagnose last --step 0: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "diagnosing its step 0, 1 in flight") {
		t.Errorf("knee diagnose --step 0 does not say which step it judged: %q", errs)
	}
	code, fromFile, errs := kneeEnv(t, env, "diagnose", recs, "--json")
	if code != ExitOK {
		t.Fatalf("knee diagnose of step 0's records: exit %d: %s", code, errs)
	}
	if fromRun != fromFile {
		t.Errorf("knee diagnose last --step 0 differs from diagnosing knee records --step 0's output:\n%s\nvs\n%s", fromRun, fromFile)
	}
	// The default is the summarised step (1 here), which differs from step 0.
	_, summarised, _ := kneeEnv(t, env, "diagnose", "last", "--json")
	if summarised == fromRun {
		t.Errorf("knee diagnose last and --step 0 agree; the default should be step 1, the summarised one")
	}

	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"last", "--step", "2"}, "--step 2: run 1 has steps 0 to 1: 0 (1 in flight), 1 (4 in flight)"},
		{[]string{"last", "--step", "-3"}, "--step -3: want a step number from 0"},
		{[]string{recs, "--step", "0"}, "is a file; --step picks a step of a stored sweep"},
	} {
		code, _, errs := kneeEnv(t, env, append([]string{"diagnose"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("knee diagnose %v: exit %d, stderr %q; want exit 2 naming %q", c.args, code, errs, c.want)
		}
	}
}
