package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/store"
)

// TestSimFullDatabaseIsNotSuccess: sim shares bench's run lifecycle: when
// the run database cannot store every record, it exits 1 (it warned and
// exited 0 before), says what was not stored, and names where the records
// are: a file in the temp folder, or --out's records.jsonl.
func TestSimFullDatabaseIsNotSuccess(t *testing.T) {
	saved := beginRunWriter
	t.Cleanup(func() { beginRunWriter = saved })
	beginRunWriter = func(st *store.Store, meta store.RunMeta) (runWriter, error) {
		w, err := st.BeginRun(meta)
		return &fullWriter{runWriter: w, keep: 5}, err
	}
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
	if !strings.Contains(stderr, "15 of 20 records could not be stored") || !strings.Contains(stderr, "not marked complete") {
		t.Errorf("stderr does not say what was not stored:\n%s", stderr)
	}
	kept := regexp.MustCompile(`kept in (\S+knee-records-\S+\.jsonl)`).FindStringSubmatch(stderr)
	if kept == nil {
		t.Fatalf("stderr does not name where the records are kept:\n%s", stderr)
	}
	if filepath.Dir(kept[1]) != tmp {
		t.Errorf("records kept in %s, want the temp folder %s", kept[1], tmp)
	}
	if n := len(readRecords(t, kept[1])); n != 20 {
		t.Errorf("%s holds %d records, want all 20", kept[1], n)
	}

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
