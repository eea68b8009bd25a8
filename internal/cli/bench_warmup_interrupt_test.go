package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/store"
)

// interruptInWarmup runs knee with args (a --warmup far longer than the
// test) and cancels it once the run is registered in its database: from
// then on nothing is measured for a minute (the embedded server's start,
// then the warm-up), so the interrupt finds a stored run with no measured
// request however slow the machine is (a fixed sleep could land before
// the run existed). It returns the exit code and everything printed.
func interruptInWarmup(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := filepath.Join(t.TempDir(), "knee.db")
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"KNEE_DB": db}[k] }}
	go func() {
		defer cancel()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
			st, err := store.OpenReadOnly(db)
			if err != nil {
				continue
			}
			runs, _ := st.ListRuns(store.Filter{Limit: 1})
			st.Close()
			if len(runs) == 1 {
				return
			}
		}
	}()
	code := MainEnv(ctx, env, args)
	return code, stdout.String() + "\n" + stderr.String()
}

// TestBenchInterruptInWarmupSaysSo: Ctrl-C while every request so far is
// warm-up (none measured) prints the report saying so and exits non-zero.
// bench already did (issue 43 item 9's silent case was sweep's, below);
// this keeps it so.
func TestBenchInterruptInWarmupSaysSo(t *testing.T) {
	code, said := interruptInWarmup(t, "bench", "--warmup", "60s", "--duration", "120s", "--concurrency", "2",
		"--input-tokens", "16", "--output-tokens", "4", "--quiet")
	if code == ExitOK || !strings.Contains(said, "interrupted") || !strings.Contains(said, "warm-up") {
		t.Errorf("want a non-zero exit saying the run was interrupted in its warm-up; exit %d:\n%s", code, said)
	}
}

// TestSweepInterruptInWarmupSaysSo: Ctrl-C inside the first step's
// warm-up says the sweep was interrupted before it measured anything, and
// where it is stored, not just "context canceled" (issue 43 item 9).
func TestSweepInterruptInWarmupSaysSo(t *testing.T) {
	code, said := interruptInWarmup(t, "sweep", "--warmup", "60s", "--duration", "120s", "--concurrency", "1,2",
		"--input-tokens", "16", "--output-tokens", "4", "--quiet")
	if code == ExitOK || !strings.Contains(said, "interrupted before the first step measured") || !strings.Contains(said, "warm-up") ||
		!strings.Contains(said, "stored as run 1, status interrupted") {
		t.Errorf("want a non-zero exit saying the sweep was interrupted in its warm-up, and where it is stored; exit %d:\n%s", code, said)
	}
}
