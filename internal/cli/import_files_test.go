package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// recordLine is one knee record as records.jsonl holds it.
func recordLine(id int) string {
	ms := 100 * id
	return fmt.Sprintf(`{"id":%d,"scheduled_ms":%d,"sent_ms":%d.2,"first_token_ms":%d,"done_ms":%d,"stream_end_ms":%d,`+
		`"token_times_ms":[%d,%d,%d],"input_tokens":128,"output_tokens":3,"token_source":"usage"}`+"\n",
		id, ms, ms, ms+60, ms+100, ms+101, ms+60, ms+80, ms+100)
}

// TestImportSparseRecordsFile: a records file whose text ends in a 2 GB
// hole (a sparse file: NUL bytes) is refused where the text ends, within
// seconds and in bounded memory, storing nothing; it used to be read whole.
func TestImportSparseRecordsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "records.jsonl")
	var b strings.Builder
	for i := range 200 {
		b.WriteString(recordLine(i))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 2<<30); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	env := benchEnv(t)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	code, _, stderr := kneeEnv(t, env, "import", path)
	runtime.ReadMemStats(&after)
	if code != ExitUsage || !strings.Contains(stderr, "NUL byte") || len(stderr) > 1000 {
		t.Errorf("import of records then 2 GB of NUL bytes: exit %d, want 2 naming the NUL bytes in a short message:\n%.600s", code, stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v, want seconds at most", d)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Errorf("allocated %d MiB, want the file streamed (under 64 MiB)", grown>>20)
	} else {
		t.Logf("refused in %v, %.1f MiB allocated", time.Since(start).Round(time.Millisecond), float64(grown)/(1<<20))
	}
	if code, out, _ := kneeEnv(t, env, "runs", "--json"); code != ExitOK || strings.Contains(out, `"import"`) {
		t.Errorf("a refused file left a run stored:\n%s", out)
	}
}
