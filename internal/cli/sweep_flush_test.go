package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sweep"
)

// waitingRunner adds records to the step's file, then waits (up to a
// bound) for them to reach the disk while the step is still running.
type waitingRunner struct {
	rec     *stepRecords
	path    func(sweep.Load) string
	flushed bool
}

func (w *waitingRunner) Run(_ context.Context, load sweep.Load) (sweep.Step, error) {
	for i := range 10 {
		r := record.Request{ID: int64(i), Sent: time.Millisecond, StreamEnd: 2 * time.Millisecond}
		w.rec.add(&r)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(w.path(load))
		if strings.Count(string(b), "\n") == 10 {
			w.flushed = true
			break
		}
	}
	return sweep.Step{}, nil
}

// TestSweepStepFileFlushedWhileRunning: a step's records reach its file
// while the step runs (a kill -9 mid-step keeps them), not only at its end.
func TestSweepStepFileFlushedWhileRunning(t *testing.T) {
	saved := stepFlushEvery
	stepFlushEvery = 10 * time.Millisecond
	t.Cleanup(func() { stepFlushEvery = saved })
	dir := t.TempDir()
	rec := &stepRecords{dir: dir}
	inner := &waitingRunner{rec: rec, path: func(l sweep.Load) string { return filepath.Join(dir, stepRecordsName(l)) }}
	rr := &recordingRunner{inner: inner, rec: rec}
	if _, err := rr.Run(context.Background(), sweep.Load{Kind: "concurrency", Value: 4}); err != nil {
		t.Fatal(err)
	}
	if !inner.flushed {
		t.Error("the step's records were not in its file while the step ran")
	}
}
