package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// waitingRunner adds records to the step's file, then waits (up to a
// bound) for them to reach the disk while the step is still running.
type waitingRunner struct {
	rec     *StepRecords
	path    func(Load) string
	flushed bool
}

func (w *waitingRunner) Run(_ context.Context, load Load) (Step, error) {
	for i := range 10 {
		r := record.Request{ID: int64(i), Sent: time.Millisecond, StreamEnd: 2 * time.Millisecond}
		w.rec.Add(&r)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(w.path(load))
		if strings.Count(string(b), "\n") == 10 {
			w.flushed = true
			break
		}
	}
	return Step{}, nil
}

// TestSweepStepFileFlushedWhileRunning: a step's records reach its file
// while the step runs (a kill -9 mid-step keeps them), not only at its end.
func TestSweepStepFileFlushedWhileRunning(t *testing.T) {
	saved := StepFlushEvery
	StepFlushEvery = 10 * time.Millisecond
	t.Cleanup(func() { StepFlushEvery = saved })
	dir := t.TempDir()
	rec := &StepRecords{Dir: dir}
	inner := &waitingRunner{rec: rec, path: func(l Load) string { return filepath.Join(dir, StepRecordsName(l)) }}
	rr := &RecordingRunner{Inner: inner, Rec: rec}
	if _, err := rr.Run(context.Background(), Load{Kind: "concurrency", Value: 4}); err != nil {
		t.Fatal(err)
	}
	if !inner.flushed {
		t.Error("the step's records were not in its file while the step ran")
	}
}
