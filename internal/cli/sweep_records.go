package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sweep"
)

// stepRecords writes each step's records to DIR/records_<kind>_<load>.jsonl
// under --out, so any two steps can be compared later (knee diagnose
// --baseline DIR/records_rate_40.jsonl DIR/records_rate_80.jsonl).
type stepRecords struct {
	dir string

	mu  sync.Mutex // records arrive from the load generator's workers
	f   *os.File
	w   *record.Writer
	err error
}

// stepRecordsName is the file of one step's records.
func stepRecordsName(l sweep.Load) string {
	return fmt.Sprintf("records_%s_%s.jsonl", l.Kind, strconv.FormatFloat(l.Value, 'g', -1, 64))
}

func (s *stepRecords) add(r *record.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil && s.err == nil {
		s.err = s.w.Write(r)
	}
}

// stepFlushEvery is how often a step's file is flushed while the step runs,
// as bench flushes records.jsonl: a kill loses at most the last second.
var stepFlushEvery = time.Second

// flushEvery flushes the step's file every d until stop is called.
func (s *stepRecords) flushEvery(d time.Duration) (stop func()) {
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

// recordingRunner opens a step's file around the inner runner's step.
type recordingRunner struct {
	inner sweep.Runner
	rec   *stepRecords
}

func (rr *recordingRunner) Run(ctx context.Context, load sweep.Load) (sweep.Step, error) {
	s := rr.rec
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return sweep.Step{}, Usagef("--out %s: %v", s.dir, err)
	}
	path := filepath.Join(s.dir, stepRecordsName(load))
	f, err := os.Create(path)
	if err != nil {
		return sweep.Step{}, Usagef("--out: %v", err)
	}
	s.mu.Lock()
	s.f, s.w, s.err = f, record.NewWriter(f), nil
	s.mu.Unlock()
	stopFlush := s.flushEvery(stepFlushEvery)
	step, runErr := rr.inner.Run(ctx, load)
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
