package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
)

// StepRecords writes each step's records to DIR/records_<kind>_<load>.jsonl
// under --out, so any two steps can be compared later (knee diagnose
// --baseline DIR/records_rate_40.jsonl DIR/records_rate_80.jsonl).
type StepRecords struct {
	Dir string

	mu  sync.Mutex // records arrive from the load generator's workers
	f   *os.File
	w   *record.Writer
	err error
}

// StepRecordsName is the file of one step's records.
func StepRecordsName(l Load) string {
	return fmt.Sprintf("records_%s_%s.jsonl", l.Kind, strconv.FormatFloat(l.Value, 'g', -1, 64))
}

// Add writes r to the current step's file.
func (s *StepRecords) Add(r *record.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil && s.err == nil {
		s.err = s.w.Write(r)
	}
}

// StepFlushEvery is how often a step's file is flushed while the step runs,
// as bench flushes records.jsonl: a kill loses at most the last second.
var StepFlushEvery = time.Second

// flushEvery flushes the step's file every d until stop is called.
func (s *StepRecords) flushEvery(d time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.mu.Lock()
				if s.w != nil && s.err == nil {
					s.err = s.w.Flush()
				}
				s.mu.Unlock()
			}
		}
	}()
	return func() { close(done); <-finished }
}

// RecordingRunner opens a step's file around the inner runner's step.
type RecordingRunner struct {
	Inner Runner
	Rec   *StepRecords
}

// Run measures the step with the inner runner, its records in the step's file.
func (rr *RecordingRunner) Run(ctx context.Context, load Load) (Step, error) {
	s := rr.Rec
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return Step{}, badinput.Errorf("--out %s: %v", s.Dir, err)
	}
	path := filepath.Join(s.Dir, StepRecordsName(load))
	f, err := os.Create(path)
	if err != nil {
		return Step{}, badinput.Errorf("--out: %v", err)
	}
	s.mu.Lock()
	s.f, s.w, s.err = f, record.NewWriter(f), nil
	s.mu.Unlock()
	stopFlush := s.flushEvery(StepFlushEvery)
	step, runErr := rr.Inner.Run(ctx, load)
	stopFlush()
	s.mu.Lock()
	werr := s.err
	if ferr := s.w.Flush(); werr == nil {
		werr = ferr
	}
	if cerr := s.f.Close(); werr == nil {
		werr = cerr
	}
	s.f, s.w = nil, nil
	s.mu.Unlock()
	if runErr == nil && werr != nil {
		runErr = fmt.Errorf("writing %s: %w", path, werr)
	}
	return step, runErr
}
