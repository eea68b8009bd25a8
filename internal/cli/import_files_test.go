package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestImportInputs: import keeps what a killed writer left, says when a
// file was imported before, and refuses folders and huge binary files at
// once.
func TestImportInputs(t *testing.T) {
	dir := t.TempDir()
	env := benchEnv(t)
	data, err := os.ReadFile("../ingest/testdata/records.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(data), "\n")
	t.Run("cut last line", func(t *testing.T) {
		cut := filepath.Join(dir, "cut.jsonl")
		if err := os.WriteFile(cut, data[:len(data)-30], 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := kneeEnv(t, env, "import", cut)
		if code != ExitOK || !strings.Contains(stderr, "skipped the last line") {
			t.Fatalf("import of a records file cut mid-line: exit %d, want it imported with a warning:\n%s\n%s", code, stdout, stderr)
		}
		if want := "(knee-records, "; !strings.Contains(stdout, want) || !strings.Contains(stdout, strconv.Itoa(lines-1)+" per-request records") {
			t.Errorf("want %d records imported:\n%s", lines-1, stdout)
		}
	})
	t.Run("twice", func(t *testing.T) {
		path := "../ingest/testdata/vllm_summary.json"
		if code, _, stderr := kneeEnv(t, env, "import", path); code != ExitOK || strings.Contains(stderr, "imported before") {
			t.Fatalf("first import: exit %d: %s", code, stderr)
		}
		code, _, stderr := kneeEnv(t, env, "import", path)
		if code != ExitOK || !strings.Contains(stderr, "same content as run(s)") {
			t.Errorf("second import of the same file: exit %d, want a note naming the earlier run:\n%s", code, stderr)
		}
	})
	t.Run("directory", func(t *testing.T) {
		code, _, stderr := kneeEnv(t, env, "import", dir)
		if code != ExitUsage || !strings.Contains(stderr, "is a directory") {
			t.Errorf("import DIR: exit %d: %s", code, stderr)
		}
	})
	t.Run("huge binary", func(t *testing.T) {
		huge := filepath.Join(dir, "zeros.json")
		if err := os.WriteFile(huge, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(huge, 2<<30); err != nil {
			t.Skipf("no sparse file here: %v", err)
		}
		for _, args := range [][]string{{"import", huge}, {"sweep", "--from", huge}} {
			start := time.Now()
			code, _, stderr := kneeEnv(t, env, args...)
			if code != ExitUsage || !strings.Contains(stderr, "binary file") || len(stderr) > 1000 {
				t.Errorf("%v of 2 GB of NUL bytes: exit %d, want 2 saying binary in a short message:\n%.600s", args, code, stderr)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%v took %v, want seconds at most", args, d)
			}
		}
	})
}

// TestSweepFromFolderReadsItsOwnFiles: --from DIR reads the result files
// in the folder, not its subfolders, and says what it skipped.
func TestSweepFromFolderReadsItsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	src, _ := filepath.Glob("../ingest/testdata/vllm-sweep/*.json")
	for _, p := range src {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644)
	sub := filepath.Join(dir, "deep")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "broken.json"), []byte("{not json"), 0o644)
	code, stdout, stderr := kneeCmd(t, "sweep", "--from", dir)
	if code != ExitOK {
		t.Fatalf("sweep --from DIR: exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "skipped 2 entries") || !strings.Contains(stdout, "deep/") || !strings.Contains(stdout, "notes.txt") {
		t.Errorf("the report does not say what was skipped:\n%s", stdout)
	}
}
