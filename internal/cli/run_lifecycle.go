package cli

import (
	"io"
	"os"
	"path/filepath"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runlife"
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
	s.recs = record.NewSink(jsonl, st.Add)
	return s, nil
}

// outRecordsWriter is where --out/records.jsonl's bytes go: the file; a
// test puts a full disk in between.
var outRecordsWriter = func(f *os.File) io.Writer { return f }

// add is loadgen's OnRecord: cheap, hands the record to the writer goroutine.
func (s *recordSink) add(r *record.Request) { s.recs.Add(r) }

func (s *recordSink) runID() string { return s.store.ID() }

func (s *recordSink) abort() {
	s.recs.Close()
	if s.file != nil {
		s.file.Close()
	}
	s.store.Finish(nil, "failed")
}

// finish drains the records, closes the files, writes summary.json and the
// reports into --out, and marks the stored run finished.
func (s *recordSink) finish(rep *report.Run, status string, recs []record.Request) runlife.SaveErrors {
	var errs runlife.SaveErrors
	errs.JSONL = s.recs.Close()
	if s.file != nil {
		if errs.JSONL != nil {
			// A full disk cuts the file mid-line: keep only whole
			// records, so what the file holds reads back as it is.
			runlife.TrimCutLine(s.file)
		}
		if cerr := s.file.Close(); errs.JSONL == nil {
			errs.JSONL = cerr
		}
	}
	if s.out != "" {
		errs.Out = report.WriteDir(s.out, rep, recs)
	}
	errs.Store = s.store.Finish(rep, status)
	return errs
}

// lost says what the run could not save (runlife.Lost); recs are the
// records it kept (runlife.Tally), n how many it had.
func (s *recordSink) lost(errs runlife.SaveErrors, runID string, recs []record.Request, n int64) error {
	return lostResults(s.env, s.out, s.store, errs, runID, recs, n)
}

// lostResults is runlife.Lost's error for a run stored as stored.
func lostResults(env *Env, out string, stored *storedRun, errs runlife.SaveErrors, runID string, recs []record.Request, n int64) error {
	l := runlife.Lost{Out: out, Errs: errs, RunID: runID, Recs: recs, N: n, TempDir: tempDir(env)}
	if stored != nil && stored.Shard != nil {
		l.Sharded, l.Shard, l.RunName = true, stored.Shard.Index, stored.Shard.RunName
	}
	return l.Err()
}

// tempDir is $TMPDIR as the command's environment says, else the system's.
func tempDir(env *Env) string {
	if d := env.Getenv("TMPDIR"); d != "" {
		return d
	}
	return os.TempDir()
}
