package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimFullDatabaseIsNotSuccess: sim shares bench's run lifecycle: when
// the run database cannot store every record, it exits 1 (it warned and
// exited 0 before), says what was not stored, and names where the records
// are: a file in the temp folder, or --out's records.jsonl.
func TestSimFullDatabaseIsNotSuccess(t *testing.T) {
	fullDatabase(t, 5)
	tmp := t.TempDir()
	env := benchEnv(t)
	env["TMPDIR"] = tmp
	args := []string{"sim", "--requests", "20", "--concurrency", "4", "--input-tokens", "32", "--output-tokens", "4", "--seed", "1", "--quiet"}
	code, stdout, stderr := kneeEnv(t, env, args...)
	if code != ExitFailure {
		t.Fatalf("sim exited %d though 15 of 20 records were not stored, want %d; stderr:\n%s", code, ExitFailure, stderr)
	}
	if !strings.Contains(stdout, "knee sim report") {
		t.Errorf("the report is not printed before the failure:\n%s", stdout)
	}
	keptInTemp(t, stderr, tmp, 20)

	out := t.TempDir()
	code, _, stderr = kneeEnv(t, benchEnv(t), append(args, "--out", out)...)
	if want := "all 20 records are in " + filepath.Join(out, "records.jsonl"); code != ExitFailure || !strings.Contains(stderr, want) {
		t.Errorf("sim --out on a full database: exit %d, want %d and %q in stderr:\n%s", code, ExitFailure, want, stderr)
	}
}

// TestExitCodeFromTheError: an error carries its exit code, wrapped or
// joined, and the message printed is the one that decided it.
func TestExitCodeFromTheError(t *testing.T) {
	t.Parallel()
	slo := &SLOError{Failed: []string{"p95(ttft)<1s"}}
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{nil, ExitOK, ""},
		{errors.New("boom"), ExitFailure, "knee sim: boom\n"},
		{fmt.Errorf("step 3: %w", slo), ExitSLO, "knee sim: SLO failed: [p95(ttft)<1s]\n"},
		{errors.Join(errors.New("interrupted"), slo), ExitSLO, "knee sim: SLO failed: [p95(ttft)<1s]\n"},
		{&RegressionError{Verdict: "worse", FailOn: "worse"}, ExitSLO, ""},
		{fmt.Errorf("sim: %w", Usagef("--rate %v: want more", -1)), ExitUsage, "knee sim: --rate -1: want more\n"},
	} {
		var b strings.Builder
		if code := exitCode(&b, "sim", tc.err); code != tc.code || (tc.msg != "" && b.String() != tc.msg) {
			t.Errorf("%v: exit %d printing %q, want %d printing %q", tc.err, code, b.String(), tc.code, tc.msg)
		}
	}
}
