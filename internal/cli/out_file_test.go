package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutFileMessages: report and records --out name what is wrong with
// the destination in the user's terms (exit 2), never a temporary file.
func TestOutFileMessages(t *testing.T) {
	env := benchEnv(t)
	if code, _, stderr := kneeEnv(t, env, "bench", "--requests", "4", "--concurrency", "2", "--input-tokens", "16",
		"--output-tokens", "2", "--quiet"); code != ExitOK {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexistent", "dir", "r.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "last", "--out", dir}, "is a directory"},
		{[]string{"records", "last", "--out", missing}, "does not exist"},
	} {
		code, _, stderr := kneeEnv(t, env, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, ".tmp") {
			t.Errorf("%v: exit %d, want 2 saying %q (no temp file named):\n%s", c.args, code, c.want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nonexistent")); err == nil {
		t.Error("records --out created the missing folder")
	}
}
