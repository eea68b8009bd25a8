package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

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
	step, runErr := rr.inner.Run(ctx, load)
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
