package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command's output escapes control characters, whatever its printer
// forgot: a records file whose name carries an escape sequence is named
// escaped by knee import's last line and knee calibrate --from's table
// (both printed it raw before the output was escaped as a whole).
func TestOutputEscapesControlCharacters(t *testing.T) {
	parallelUntimed(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	if code, _, errs := kneeCmd(t, "sim", "--requests", "40", "--concurrency", "4", "--seed", "1", "--quiet", "--no-store", "--out", out); code != 0 {
		t.Fatalf("knee sim: exit %d: %s", code, errs)
	}
	evil := filepath.Join(dir, "r\x1b]0;PWNED\x07.jsonl")
	data, err := os.ReadFile(filepath.Join(out, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evil, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"import", evil, "--db", filepath.Join(dir, "k.db")},
		{"calibrate", "--from", evil},
	} {
		code, stdout, stderr := kneeCmd(t, args...)
		if code != 0 {
			t.Fatalf("knee %s: exit %d: %s", args[0], code, stderr)
		}
		if all := stdout + stderr; strings.ContainsAny(all, "\x1b\x07") || !strings.Contains(all, `r\x1b]0;PWNED\x07.jsonl`) {
			t.Errorf("knee %s: the file's name is not escaped:\n%q", args[0], all)
		}
	}
}
