package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
)

// TestKillBench builds knee, runs `knee bench` against the embedded server,
// kills it with SIGKILL mid-run, and checks the stored run: it reads as
// interrupted, and every request that ended well before the kill (per
// records.jsonl, which bench flushes every second) is in the database.
// (internal/store's TestKillMidRun pins the one-second bound on the writer
// itself, with exact timing.)
func TestKillBench(t *testing.T) {
	bin := buildKnee(t) // skips under -short
	dir := t.TempDir()
	db, out := filepath.Join(dir, "knee.db"), filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	cmd := exec.Command(bin, "bench", "--rate", "40", "--duration", "60s", "--requests", "0", "--input-tokens", "64", "--output-tokens", "16",
		"--seed", "1", "--quiet", "--db", db, "--out", out)
	var childOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &childOut, &childOut
	defer func() {
		if t.Failed() {
			t.Logf("knee bench output:\n%s", childOut.String())
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	// Wait until the run has stored a good number of records, then a bit more.
	deadline := time.Now().Add(90 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("bench stored no records in 90 s")
		}
		time.Sleep(250 * time.Millisecond)
		if n := storedRecords(db); n >= 60 {
			break
		}
	}
	time.Sleep(1500 * time.Millisecond)
	killAt := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(store.Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	ri := runs[0]
	if ri.Status != store.StatusInterrupted || ri.Summary != nil {
		t.Errorf("killed bench: status %s, summary %v; want interrupted without a final summary", ri.Status, ri.Summary != nil)
	}
	stored := map[int64]bool{}
	st.Records(ri.ID, func(r *record.Request) error { stored[r.ID] = true; return nil })

	f, err := os.Open(filepath.Join(out, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Offsets are from the load generator's start, a little after the run
	// row's start (probe, server start): 2 s of margin covers that and the
	// one second the bound allows.
	cutoff := killAt.Sub(ri.Start) - 2*time.Second
	checked, missing := 0, 0
	err = record.Scan(f, func(r *record.Request) error {
		if r.StreamEnd < cutoff {
			checked++
			if !stored[r.ID] {
				missing++
			}
		}
		return nil
	})
	if err != nil {
		t.Logf("records.jsonl ends mid-line (killed while writing): %v", err)
	}
	if checked < 20 {
		t.Fatalf("only %d requests ended before the cutoff: nothing to check", checked)
	}
	if missing > 0 {
		t.Errorf("%d of %d requests that ended over a second before the kill are not in the database", missing, checked)
	}
	t.Logf("stored %d records; checked %d that ended before the cutoff", len(stored), checked)

	// knee report reads it as interrupted with a partial summary.
	code, text, errs := kneeEnv(t, nil, "report", "last", "--db", db)
	if code != 0 {
		t.Fatalf("report: exit %d %s", code, errs)
	}
	if !strings.Contains(text, "interrupted") || !strings.Contains(text, "partial summary") {
		t.Errorf("report of the killed run:\n%s", text)
	}
}

func storedRecords(db string) int {
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	st, err := store.Open(db)
	if err != nil {
		return 0
	}
	defer st.Close()
	runs, err := st.ListRuns(store.Filter{})
	if err != nil || len(runs) == 0 {
		return 0
	}
	return runs[0].Records
}
