package runlife

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
)

// SaveErrors are what a run could not write, by destination.
type SaveErrors struct {
	JSONL error // --out/records.jsonl
	Out   error // --out's summary.json and reports
	Store error // the run database
}

// Any reports whether something could not be written.
func (e SaveErrors) Any() bool { return e.JSONL != nil || e.Out != nil || e.Store != nil }

// Lost is a run that could not save all its results: what failed (Errs),
// --out (Out), the run's id in the database ("" when it has none), its
// records (Recs, as the run kept them; N, how many it had), the folder
// for a temp file, and Shard and RunName when it is one shard of a run.
type Lost struct {
	Out     string
	Errs    SaveErrors
	RunID   string
	Recs    []record.Request
	N       int64
	TempDir string
	Sharded bool
	Shard   int
	RunName string
}

// Err says what a run could not save and where its records are
// kept instead: --out/records.jsonl when that was written, the run database
// when it stored them, else recs written now to a records file in the temp
// folder (n: the run's records; recs may hold fewer, none when the run
// kept none in memory). A run whose results were not all saved must not
// read as a success: the error exits 1. bench and sim share it.
func (l Lost) Err() error {
	out, errs, runID, recs, n := l.Out, l.Errs, l.RunID, l.Recs, l.N
	var parts []string
	if errs.Out != nil {
		parts = append(parts, fmt.Sprintf("--out %s: %v", out, errs.Out))
	}
	if errs.JSONL != nil {
		parts = append(parts, fmt.Sprintf("--out %s: records.jsonl: %v", out, errs.JSONL))
	}
	if errs.Store != nil {
		what := "the run database could not store the run"
		if runID != "" {
			what = fmt.Sprintf("the run database could not store run %s (it is not marked complete)", runID)
		}
		parts = append(parts, fmt.Sprintf("%s: %v", what, errs.Store))
	}
	if errs.Store != nil && l.Sharded {
		parts = append(parts, fmt.Sprintf("shard %d of run %q is not marked complete: run it again (same index and --run-name) to store its part; requests already stored are not stored twice", l.Shard, l.RunName))
	}
	msg := "saving results failed: " + strings.Join(parts, "; ")
	switch {
	case errs.JSONL == nil && out != "":
		return fmt.Errorf("%s; all %d records are in %s", msg, n, filepath.Join(out, "records.jsonl"))
	case errs.Store == nil && runID != "":
		return fmt.Errorf("%s; all %d records are stored as run %s (knee records %s --out FILE)", msg, n, runID, runID)
	}
	// The database kept every record it could not store in a file of its
	// own (named in the message above): with the ones it stored, that is the
	// whole run, so no second, overlapping file is written.
	var unstored *store.UnstoredError
	if errors.As(errs.Store, &unstored) && unstored.Kept != "" && unstored.KeptRecords == unstored.Unstored {
		where := "the other records are stored"
		if runID != "" {
			where = fmt.Sprintf("the other %d are stored as run %s", max(n-int64(unstored.Unstored), 0), runID)
		}
		return fmt.Errorf("%s; %s, so between them every record is kept", msg, where)
	}
	if int64(len(recs)) < n {
		return fmt.Errorf("%s; the run's %d per-request records were not kept (give --out DIR to write them to records.jsonl)", msg, n)
	}
	path, err := record.WriteTemp(l.TempDir, recs)
	if err != nil {
		return fmt.Errorf("%s; keeping the %d records in the temp folder failed too: %v", msg, n, err)
	}
	return fmt.Errorf("%s; all %d records are kept in %s (knee import %s)", msg, n, path, path)
}

// TrimCutLine truncates f after its last line break (to nothing when it
// has none), dropping a line a failed write left cut. It reads back at
// most the last MiB: no record knee writes is longer.
func TrimCutLine(f *os.File) {
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil || end == 0 {
		return
	}
	const back = 1 << 20
	from := max(end-back, 0)
	buf := make([]byte, end-from)
	if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
		return
	}
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		f.Truncate(from + int64(i) + 1)
	} else if from == 0 {
		f.Truncate(0)
	}
}
