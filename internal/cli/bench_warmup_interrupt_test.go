package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchInterruptInWarmupSaysSo: Ctrl-C while every request so far is
// warm-up (none measured) prints the report saying so and exits non-zero.
// bench already did (issue 43 item 9's silent case was sweep's, below);
// this keeps it so. The interrupt comes 300 ms into a 60 s warm-up, far
// inside it on any machine.
func TestBenchInterruptInWarmupSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := filepath.Join(t.TempDir(), "knee.db")
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"KNEE_DB": db}[k] }}
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	code := MainEnv(ctx, env, []string{"bench", "--warmup", "60s", "--duration", "120s", "--concurrency", "2",
		"--input-tokens", "16", "--output-tokens", "4", "--quiet"})
	if code == ExitOK {
		t.Errorf("exit 0 for a run interrupted in its warm-up")
	}
	said := stdout.String() + stderr.String()
	if !strings.Contains(said, "interrupted") || !strings.Contains(said, "warm-up") {
		t.Errorf("nothing says the run was interrupted in its warm-up; exit %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// TestSweepInterruptInWarmupSaysSo: Ctrl-C inside the first step's
// warm-up says the sweep was interrupted before it measured anything, and
// where it is stored, not just "context canceled" (issue 43 item 9).
func TestSweepInterruptInWarmupSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := filepath.Join(t.TempDir(), "knee.db")
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"KNEE_DB": db}[k] }}
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	code := MainEnv(ctx, env, []string{"sweep", "--warmup", "60s", "--duration", "120s", "--concurrency", "1,2",
		"--input-tokens", "16", "--output-tokens", "4", "--quiet"})
	if code == ExitOK {
		t.Errorf("exit 0 for a sweep interrupted in its warm-up")
	}
	said := stdout.String() + stderr.String()
	if !strings.Contains(said, "interrupted before the first step measured") || !strings.Contains(said, "warm-up") ||
		!strings.Contains(said, "stored as run 1, status interrupted") {
		t.Errorf("nothing says the sweep was interrupted in its warm-up; exit %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}
