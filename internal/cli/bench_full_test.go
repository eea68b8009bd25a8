package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// fullWriter stores the first keep records and then behaves as a run
// database on a full disk: the rest are lost and Finish says so.
type fullWriter struct {
	runWriter
	mu          sync.Mutex // Add is called from the load's workers, as store.RunWriter's is
	keep, added int
}

func (w *fullWriter) Add(r *record.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.added++
	if w.added <= w.keep {
		w.runWriter.Add(r)
	}
}

func (w *fullWriter) Finish(s stats.Summary, status string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	full := &store.UnstoredError{Unstored: w.added - w.keep, Added: int64(w.added), Err: errDiskFull}
	if err := w.runWriter.Finish(s, store.StatusFailed); err != nil {
		return err
	}
	return full
}

var errDiskFull = errors.New("database or disk is full (SQLITE_FULL)")

// TestBenchFullDatabaseIsNotSuccess: when the run database cannot store
// every record, bench exits non-zero, says what was not stored, and keeps
// every record in a file it names.
func TestBenchFullDatabaseIsNotSuccess(t *testing.T) {
	fullDatabase(t, 5)
	tmp := t.TempDir()
	env := benchEnv(t)
	env["TMPDIR"] = tmp
	code, _, stderr := kneeEnv(t, env, "bench", "--requests", "20", "--concurrency", "4",
		"--input-tokens", "32", "--output-tokens", "4", "--seed", "1", "--quiet")
	if code == ExitOK {
		t.Fatalf("bench exited 0 though 15 of 20 records were not stored; stderr:\n%s", stderr)
	}
	keptInTemp(t, stderr, tmp, 20)
}

// TestBenchOutOnFullDiskFails: --out on a full filesystem (/dev/full gives
// ENOSPC on every write) exits non-zero and says where the records are.
func TestBenchOutOnFullDiskFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	for _, name := range []string{"records.jsonl", "summary.json"} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			if err := os.Symlink("/dev/full", filepath.Join(out, name)); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--requests", "8", "--concurrency", "2",
				"--input-tokens", "32", "--output-tokens", "4", "--seed", "1", "--quiet", "--out", out)
			if code == ExitOK {
				t.Fatalf("bench with %s on a full disk exited 0; stderr:\n%s", name, stderr)
			}
			if !strings.Contains(stderr, name) || !strings.Contains(stderr, "no space left on device") {
				t.Errorf("stderr does not name %s and the full disk:\n%s", name, stderr)
			}
			if !regexp.MustCompile(`all 8 records (are stored as run \d+|are in \S+records.jsonl)`).MatchString(stderr) {
				t.Errorf("stderr does not say where the records are:\n%s", stderr)
			}
		})
	}
}

// TestSweepFullDatabaseIsNotSuccess: a sweep whose records the database
// could not store exits non-zero, saying so.
func TestSweepFullDatabaseIsNotSuccess(t *testing.T) {
	saved := beginRunWriter
	t.Cleanup(func() { beginRunWriter = saved })
	beginRunWriter = func(st *store.Store, meta store.RunMeta) (runWriter, error) {
		w, err := st.BeginRun(meta)
		return &fullWriter{runWriter: w, keep: 3}, err
	}
	code, _, stderr := kneeEnv(t, benchEnv(t), "sweep", "--concurrency", "1,2", "--requests", "6",
		"--input-tokens", "16", "--output-tokens", "2", "--quiet")
	if code == ExitOK || !strings.Contains(stderr, "could not be stored") {
		t.Errorf("sweep on a full database: exit %d, want non-zero saying what was not stored:\n%s", code, stderr)
	}
}

// TestSweepInterruptedBeforeAnyStep: Ctrl-C before any step measured
// stores the sweep as interrupted, not failed.
func TestSweepInterruptedBeforeAnyStep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	db := filepath.Join(t.TempDir(), "knee.db")
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
		Getenv: func(k string) string { return map[string]string{"KNEE_DB": db}[k] }}
	MainEnv(ctx, env, []string{"sweep", "--concurrency", "1,2", "--requests", "6", "--input-tokens", "16", "--output-tokens", "2", "--quiet"})
	_, runs, _ := kneeEnv(t, map[string]string{"KNEE_DB": db}, "runs")
	if strings.Contains(runs, "failed") || !strings.Contains(runs, "interrupted") {
		t.Errorf("a sweep interrupted before its first step:\n%s", runs)
	}
}

// fullDatabase makes every run database started in the test take only keep
// records (the rest fail as a full disk would).
func fullDatabase(t *testing.T, keep int) {
	saved := beginRunWriter
	t.Cleanup(func() { beginRunWriter = saved })
	beginRunWriter = func(st *store.Store, meta store.RunMeta) (runWriter, error) {
		w, err := st.BeginRun(meta)
		return &fullWriter{runWriter: w, keep: keep}, err
	}
}

// keptInTemp checks that stderr says the records were not all stored and
// names a records file in tmp holding all n of them.
func keptInTemp(t *testing.T, stderr, tmp string, n int) {
	t.Helper()
	if !strings.Contains(stderr, fmt.Sprintf("%d of %d records could not be stored", n-5, n)) || !strings.Contains(stderr, "not marked complete") {
		t.Errorf("stderr does not say what was not stored:\n%s", stderr)
	}
	kept := regexp.MustCompile(`kept in (\S+knee-records-\S+\.jsonl)`).FindStringSubmatch(stderr)
	if kept == nil {
		t.Fatalf("stderr does not name where the records are kept:\n%s", stderr)
	}
	if filepath.Dir(kept[1]) != tmp {
		t.Errorf("records kept in %s, want the temp folder %s", kept[1], tmp)
	}
	if got := len(readRecords(t, kept[1])); got != n {
		t.Errorf("%s holds %d records, want all %d", kept[1], got, n)
	}
}

// diskFullAfter passes the first n bytes to w, then fails as a full disk
// does: a write that crosses the limit is cut there.
type diskFullAfter struct {
	w io.Writer
	n int
}

func (d *diskFullAfter) Write(p []byte) (int, error) {
	if len(p) <= d.n {
		d.n -= len(p)
		return d.w.Write(p)
	}
	k, _ := d.w.Write(p[:d.n])
	d.n -= k
	return k, syscall.ENOSPC
}

// TestBenchOutFullDiskLeavesNoHalfFiles: on a full disk, --out's report
// does not claim a report.md that was never written, no empty summary.json
// is left, and records.jsonl holds whole lines only (issue 43 item 9).
func TestBenchOutFullDiskLeavesNoHalfFiles(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	saved := outRecordsWriter
	t.Cleanup(func() { outRecordsWriter = saved })
	outRecordsWriter = func(f *os.File) io.Writer { return &diskFullAfter{w: f, n: 1500} }
	out := t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(out, "summary.json")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--requests", "8", "--concurrency", "2",
		"--input-tokens", "32", "--output-tokens", "4", "--seed", "1", "--out", out)
	if code == ExitOK {
		t.Fatalf("exit 0 on a full disk; stderr:\n%s", stderr)
	}
	if strings.Contains(stdout, "report.md in") {
		t.Errorf("the report points at a report.md that was not written:\n%s", stdout)
	}
	if !strings.Contains(stdout, "could not be written") {
		t.Errorf("the report does not say its --out files could not be written:\n%s", stdout)
	}
	for _, name := range []string{"summary.json", "report.md"} {
		if _, err := os.Lstat(filepath.Join(out, name)); err == nil {
			t.Errorf("%s left in --out though it could not be written", name)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("records.jsonl (%d bytes) ends mid-line: %q", len(b), b[max(len(b)-80, 0):])
	}
	if n := len(readRecords(t, filepath.Join(out, "records.jsonl"))); n == 0 || n >= 8 {
		t.Errorf("records.jsonl holds %d whole records, want some but not all 8", n)
	}
}
