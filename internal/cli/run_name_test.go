package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNameNamesARun: --run-name names a run without --shards; knee runs
// shows the name, every command that takes a run takes it, and a second
// run cannot take a name already given (exit 2, before anything runs).
func TestRunNameNamesARun(t *testing.T) {
	env := map[string]string{"KNEE_DB": filepath.Join(t.TempDir(), "knee.db")}
	bench := []string{"bench", "--concurrency", "2", "--requests", "6", "--input-tokens", "32", "--output-tokens", "4", "--seed", "1", "--quiet"}
	if code, _, errs := kneeEnv(t, env, append(bench, "--run-name", "nightly")...); code != 0 {
		t.Fatalf("bench --run-name nightly: exit %d: %s", code, errs)
	}
	if code, _, errs := kneeEnv(t, env, bench...); code != 0 { // run 2, unnamed, is "last"
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	_, list, _ := kneeEnv(t, env, "runs")
	lines := strings.Split(list, "\n")
	if !strings.Contains(lines[0], "NAME") || !strings.Contains(list, "nightly") {
		t.Errorf("knee runs shows no run name:\n%s", list)
	}
	code, rep, errs := kneeEnv(t, env, "report", "nightly")
	if code != 0 || !strings.Contains(rep, "run 1") {
		t.Errorf("knee report nightly: exit %d, want run 1's report: %s%s", code, rep, errs)
	}
	if code, out, errs := kneeEnv(t, env, "records", "nightly"); code != 0 || strings.Count(out, "\n") != 6 {
		t.Errorf("knee records nightly: exit %d, want its 6 records: %s%s", code, out, errs)
	}
	if code, _, errs := kneeEnv(t, env, "compare", "nightly", "last"); code != 0 && code != 3 {
		t.Errorf("knee compare nightly last: exit %d: %s", code, errs)
	}
	code, _, errs = kneeEnv(t, env, append(bench, "--run-name", "nightly")...)
	if code != ExitUsage || !strings.Contains(errs, `run 1 is already named "nightly"`) {
		t.Errorf("a second run named nightly: exit %d, want 2 naming run 1: %s", code, errs)
	}
	if _, list2, _ := kneeEnv(t, env, "runs"); strings.Count(list2, "\n") != strings.Count(list, "\n") {
		t.Errorf("the refused run was stored:\n%s", list2)
	}
	for _, bad := range []string{"12", "last", "last~1", "a\x1bb"} {
		if code, _, errs := kneeEnv(t, env, append(bench, "--run-name", bad)...); code != ExitUsage || !strings.Contains(errs, "--run-name") {
			t.Errorf("--run-name %q: exit %d, want 2 naming the flag: %s", bad, code, errs)
		}
	}
	if code, _, errs := kneeEnv(t, env, "report", "nosuch"); code != ExitUsage || !strings.Contains(errs, "--run-name") {
		t.Errorf("knee report nosuch: exit %d, want 2 saying a name is taken too: %s", code, errs)
	}
}
