package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareFailOnCannotJudgeExits1: two runs stored without per-request
// records cannot be judged; --fail-on worse must not pass them silently.
func TestCompareFailOnCannotJudgeExits1(t *testing.T) {
	env := benchEnv(t)
	dir := "../ingest/testdata/vllm-sweep"
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) < 2 {
		t.Fatalf("want two vLLM results in %s", dir)
	}
	for _, f := range files[:2] {
		if code, _, stderr := kneeEnv(t, env, "import", f); code != ExitOK {
			t.Fatalf("import %s: exit %d: %s", f, code, stderr)
		}
	}
	code, stdout, stderr := kneeEnv(t, env, "compare", "last~1", "last", "--fail-on", "worse")
	if code != ExitFailure {
		t.Fatalf("compare --fail-on worse of two summary-only runs: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitFailure, stdout, stderr)
	}
	if !strings.Contains(stderr, "cannot judge") {
		t.Errorf("stderr does not give the reason:\n%s", stderr)
	}
	// Without a gate, showing the figures side by side is a success.
	if code, _, stderr := kneeEnv(t, env, "compare", "last~1", "last"); code != ExitOK {
		t.Errorf("compare without --fail-on: exit %d: %s", code, stderr)
	}
}
