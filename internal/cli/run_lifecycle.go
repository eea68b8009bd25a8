package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/store"
)

// A run's lifecycle, shared by bench and sim: its records stream to
// --out/records.jsonl and the run database as they finish (recordSink);
// at the end the report goes to --out and the database, and what could
// not be saved fails the run (exit 1) naming where the records are
// (lostResults).

// recordSink receives every record as it finishes: it streams them to the
// run database and to --out/records.jsonl so nothing measured is lost if the
// run is cut short.
type recordSink struct {
	env   *Env
	out   string
	file  *os.File
	recs  *record.Sink
	store *storedRun
}

func newRecordSink(env *Env, sf *storeFlags, out string, meta runMeta) (*recordSink, error) {
	s := &recordSink{env: env, out: out}
	var jsonl *record.Writer
	if out != "" {
		f, err := os.Create(filepath.Join(out, "records.jsonl"))
		if err != nil {
			return nil, Usagef("--out %s: %v", out, err)
		}
		s.file, jsonl = f, record.NewWriter(outRecordsWriter(f))
	}
	st, err := sf.begin(env, meta)
	if err != nil {
		return nil, err
	}
	s.store = st
	s.recs = record.NewSink(jsonl, st.add)
	return s, nil
}

// outRecordsWriter is where --out/records.jsonl's bytes go: the file; a
// test puts a full disk in between.
var outRecordsWriter = func(f *os.File) io.Writer { return f }

// add is loadgen's OnRecord: cheap, hands the record to the writer goroutine.
func (s *recordSink) add(r *record.Request) { s.recs.Add(r) }

func (s *recordSink) runID() string { return s.store.id() }

func (s *recordSink) abort() {
	s.recs.Close()
	if s.file != nil {
		s.file.Close()
	}
	s.store.finish(nil, "failed")
}

// sinkErrors are what a recordSink could not write, by destination.
type sinkErrors struct {
	jsonl error // --out/records.jsonl
	out   error // --out's summary.json and reports
	store error // the run database
}

func (e sinkErrors) any() bool { return e.jsonl != nil || e.out != nil || e.store != nil }

// finish drains the records, closes the files, writes summary.json and the
// reports into --out, and marks the stored run finished.
func (s *recordSink) finish(rep *report.Run, status string, recs []record.Request) sinkErrors {
	var errs sinkErrors
	errs.jsonl = s.recs.Close()
	if s.file != nil {
		if errs.jsonl != nil {
			// A full disk cuts the file mid-line: keep only whole
			// records, so what the file holds reads back as it is.
			trimCutLine(s.file)
		}
		if cerr := s.file.Close(); errs.jsonl == nil {
			errs.jsonl = cerr
		}
	}
	if s.out != "" {
		errs.out = report.WriteDir(s.out, rep, recs)
	}
	errs.store = s.store.finish(rep, status)
	return errs
}

// lost says what the run could not save (lostResults); recs are the
// records it kept (runTally), n how many it had.
func (s *recordSink) lost(errs sinkErrors, runID string, recs []record.Request, n int64) error {
	return lostResults(s.env, s.out, s.store, errs, runID, recs, n)
}

// lostResults says what a run could not save and where its records are
// kept instead: --out/records.jsonl when that was written, the run database
// when it stored them, else recs written now to a records file in the temp
// folder (n: the run's records; recs may hold fewer, none when the run
// kept none in memory). A run whose results were not all saved must not
// read as a success: the error exits 1. bench and sim share it.
func lostResults(env *Env, out string, stored *storedRun, errs sinkErrors, runID string, recs []record.Request, n int64) error {
	var parts []string
	if errs.out != nil {
		parts = append(parts, fmt.Sprintf("--out %s: %v", out, errs.out))
	}
	if errs.jsonl != nil {
		parts = append(parts, fmt.Sprintf("--out %s: records.jsonl: %v", out, errs.jsonl))
	}
	if errs.store != nil {
		what := "the run database could not store the run"
		if runID != "" {
			what = fmt.Sprintf("the run database could not store run %s (it is not marked complete)", runID)
		}
		parts = append(parts, fmt.Sprintf("%s: %v", what, errs.store))
	}
	if errs.store != nil && stored != nil && stored.shard != nil {
		sh := stored.shard
		parts = append(parts, fmt.Sprintf("shard %d of run %q is not marked complete: run it again (same index and --run-name) to store its part; requests already stored are not stored twice", sh.shard, sh.runName))
	}
	msg := "saving results failed: " + strings.Join(parts, "; ")
	switch {
	case errs.jsonl == nil && out != "":
		return fmt.Errorf("%s; all %d records are in %s", msg, n, filepath.Join(out, "records.jsonl"))
	case errs.store == nil && runID != "":
		return fmt.Errorf("%s; all %d records are stored as run %s (knee records %s --out FILE)", msg, n, runID, runID)
	}
	// The database kept every record it could not store in a file of its
	// own (named in the message above): with the ones it stored, that is the
	// whole run, so no second, overlapping file is written.
	var unstored *store.UnstoredError
	if errors.As(errs.store, &unstored) && unstored.Kept != "" && unstored.KeptRecords == unstored.Unstored {
		where := "the other records are stored"
		if runID != "" {
			where = fmt.Sprintf("the other %d are stored as run %s", max(n-int64(unstored.Unstored), 0), runID)
		}
		return fmt.Errorf("%s; %s, so between them every record is kept", msg, where)
	}
	if int64(len(recs)) < n {
		return fmt.Errorf("%s; the run's %d per-request records were not kept (give --out DIR to write them to records.jsonl)", msg, n)
	}
	path, err := record.WriteTemp(tempDir(env), recs)
	if err != nil {
		return fmt.Errorf("%s; keeping the %d records in the temp folder failed too: %v", msg, n, err)
	}
	return fmt.Errorf("%s; all %d records are kept in %s (knee import %s)", msg, n, path, path)
}

// trimCutLine truncates f after its last line break (to nothing when it
// has none), dropping a line a failed write left cut. It reads back at
// most the last MiB: no record knee writes is longer.
func trimCutLine(f *os.File) {
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

// tempDir is $TMPDIR as the command's environment says, else the system's.
func tempDir(env *Env) string {
	if d := env.Getenv("TMPDIR"); d != "" {
		return d
	}
	return os.TempDir()
}
