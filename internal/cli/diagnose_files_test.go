package cli

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDiagnoseInputs: what diagnose says of inputs that are not what it
// reads: a folder, a huge binary file, a GuideLLM file, a cut records
// file, a stored run id.
func TestDiagnoseInputs(t *testing.T) {
	dir := t.TempDir()
	env := benchEnv(t)
	t.Run("directory", func(t *testing.T) {
		code, _, stderr := kneeEnv(t, env, "diagnose", dir)
		if code != ExitUsage || !strings.Contains(stderr, "is a directory") {
			t.Errorf("diagnose DIR: exit %d, want 2 saying it is a directory:\n%s", code, stderr)
		}
	})
	t.Run("huge binary", func(t *testing.T) {
		huge := filepath.Join(dir, "zeros.bin")
		f, err := os.Create(huge)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Truncate(huge, 2<<30); err != nil { // sparse: no disk used
			t.Skipf("no sparse file here: %v", err)
		}
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		code, _, stderr := kneeEnv(t, env, "diagnose", huge)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if code != ExitUsage || !strings.Contains(stderr, "binary file") {
			t.Errorf("diagnose of 2 GB of NUL bytes: exit %d, want 2 saying binary:\n%.500s", code, stderr)
		}
		if len(stderr) > 1000 {
			t.Errorf("the message is %d bytes: quote less of the file", len(stderr))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v, want seconds at most", d)
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
			t.Errorf("allocated %d MiB reading a binary file, want it refused at its first bytes", grown>>20)
		}
	})
	t.Run("guidellm", func(t *testing.T) {
		code, _, stderr := kneeEnv(t, env, "diagnose", "../ingest/testdata/guidellm_benchmarks.json")
		if code != ExitUsage || !strings.Contains(stderr, "GuideLLM") || !strings.Contains(stderr, "knee import") {
			t.Errorf("diagnose of a GuideLLM file: exit %d, want 2 saying what GuideLLM files give:\n%s", code, stderr)
		}
	})
	t.Run("cut last line", func(t *testing.T) {
		data, err := os.ReadFile("../ingest/testdata/records.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, "cut.jsonl")
		if err := os.WriteFile(cut, data[:len(data)-30], 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := kneeEnv(t, env, "diagnose", cut)
		if code != ExitOK || !strings.Contains(stderr, "skipped the last line") || !strings.Contains(stdout, "Verdict") {
			t.Errorf("diagnose of a records file cut mid-line: exit %d, want a diagnosis and a warning:\n%s\n%s", code, stdout, stderr)
		}
	})
	t.Run("run id", func(t *testing.T) {
		if code, _, stderr := kneeEnv(t, env, "bench", "--requests", "12", "--concurrency", "2", "--input-tokens", "32",
			"--output-tokens", "4", "--quiet"); code != ExitOK {
			t.Fatalf("bench: exit %d: %s", code, stderr)
		}
		for _, ref := range []string{"1", "last"} {
			code, stdout, stderr := kneeEnv(t, env, "diagnose", ref)
			if code != ExitOK || !strings.Contains(stdout, "12 requests") {
				t.Errorf("diagnose %s: exit %d, want the stored run diagnosed:\n%s\n%s", ref, code, stdout, stderr)
			}
		}
	})
}

// TestDiagnoseAnswersCancel: a parse stops when its context ends.
func TestDiagnoseAnswersCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "phases.csv")
	rows := strings.Repeat("1,2,3\n", 200000)
	if err := os.WriteFile(path, []byte("queue_ms,prefill_ms,decode_ms\n"+rows), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := readDiagnoseInput(ctx, &Env{Stderr: os.Stderr}, path)
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("a canceled parse: %v, want it to stop with the cancel", err)
	}
}

// TestTraceDirectoryIsUsage: sim and bench --trace DIR say it is a folder
// (exit 2), not "empty input".
func TestTraceDirectoryIsUsage(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"sim", "bench"} {
		code, _, stderr := kneeCmd(t, cmd, "--trace", dir, "--no-store", "--quiet")
		if code != ExitUsage || !strings.Contains(stderr, "is a directory") {
			t.Errorf("%s --trace DIR: exit %d, want 2 saying it is a directory:\n%s", cmd, code, stderr)
		}
	}
}
