package runs

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/store"
)

// Export is what knee records writes of a run: every record, or only the
// failures; all steps of a sweep or one; as JSONL (records.jsonl's shape,
// so the export reads back with knee import or knee diagnose) or CSV.
type Export struct {
	Format     string // jsonl or csv
	ErrorsOnly bool
	Step       int // a sweep's step from 0; -1: every step
	Limit      int // at most this many records; 0: all
}

// ExportFormat is the format --format (or else --out's extension) names:
// jsonl (the default; json is taken for it) or csv.
func ExportFormat(format, out string) (string, error) {
	f := strings.ToLower(format)
	if f == "" {
		f = "jsonl"
		if strings.HasSuffix(strings.ToLower(out), ".csv") {
			f = "csv"
		}
	}
	if f == "json" {
		f = "jsonl"
	}
	if f != "jsonl" && f != "csv" {
		return "", badinput.Errorf("--format %q: want jsonl or csv", format)
	}
	return f, nil
}

// Check refuses a negative limit or step, before any database is opened.
func (e Export) Check() error {
	if e.Limit < 0 {
		return badinput.Errorf("--limit %d: want 0 (all) or more", e.Limit)
	}
	if e.Step < -1 {
		return badinput.Errorf("--step %d: want a step number from 0", e.Step)
	}
	return nil
}

// CheckStep refuses a step that run info does not have.
func (e Export) CheckStep(st *store.Store, info *store.RunInfo) error {
	if e.Step < 0 {
		return nil
	}
	sw, err := st.Sweep(info.ID)
	if err != nil {
		return DBErr(err)
	}
	if sw == nil {
		return badinput.Errorf("--step %d: run %d is a %s, not a sweep", e.Step, info.ID, info.Kind)
	}
	if e.Step >= len(sw.Steps) {
		return badinput.Errorf("--step %d: run %d has steps 0 to %d", e.Step, info.ID, len(sw.Steps)-1)
	}
	return nil
}

// Write writes run id's records that e selects to w and counts them.
func (e Export) Write(w io.Writer, st *store.Store, id int64) (n int, err error) {
	var emit func(step int, r *record.Request) error
	var flush func() error
	switch e.Format {
	case "jsonl":
		rw := record.NewWriter(w)
		emit = func(_ int, r *record.Request) error { return rw.Write(r) }
		flush = rw.Flush
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(recordCSVHeader); err != nil {
			return 0, err
		}
		emit = func(step int, r *record.Request) error { return cw.Write(recordCSVRow(step, r)) }
		flush = func() error { cw.Flush(); return cw.Error() }
	default:
		return 0, badinput.Errorf("--format %q: want jsonl or csv", e.Format)
	}
	errLimit := errors.New("limit reached")
	err = st.StepRecords(id, func(s int, r *record.Request) error {
		if (e.Step >= 0 && s != e.Step) || (e.ErrorsOnly && r.OK()) {
			return nil
		}
		if e.Limit > 0 && n >= e.Limit {
			return errLimit
		}
		n++
		return emit(s, StepNumbered(s, r))
	})
	if err != nil && !errors.Is(err, errLimit) {
		return n, DBErr(err)
	}
	return n, flush()
}

// StepNumbered gives a sweep's record (step ≥ 0) its number within its
// step: a sharded sweep stores it as step × 2^44 + number
// (store.SweepRecordID) so that a restarted shard stores none twice, a raw
// key nobody should read; one process's sweep already numbers each step
// from 0, and is unchanged. The step is the stored one, in load order.
// knee records, knee report and the ui all number through it.
func StepNumbered(step int, r *record.Request) *record.Request {
	if step >= 0 {
		r.ID = store.SweepRequestID(r.ID)
	}
	return r
}

// NoRecordsWhy says why a run of kind stored no per-request records; a
// simulation keeps at most maxSim.
func NoRecordsWhy(kind string, maxSim int) string {
	switch kind {
	case "import":
		return "a summary-only import: the file had no per-request data"
	case "sweep":
		return "a simulated sweep, or one stored before knee kept sweep records; knee sim sweep --out DIR writes them"
	case "sim", "lab":
		return fmt.Sprintf("this simulation stored only its summary (a simulation keeps its records in the database when --requests sizes it, at most %d; a --duration run keeps none); knee sim --out DIR writes records.jsonl", maxSim)
	}
	return "none were stored"
}

var recordCSVHeader = []string{"id", "step", "warmup", "scheduled_ms", "sent_ms", "ttft_ms", "e2e_ms", "tpot_ms",
	"input_tokens", "output_tokens", "http_status", "finish_reason", "error", "error_message"}

// recordCSVRow is one record's row; the texts a server wrote are escaped,
// since the CSV is read on a terminal as often as in a spreadsheet (the
// JSONL export keeps them exact, JSON-escaped).
func recordCSVRow(step int, r *record.Request) []string {
	msOf := func(d time.Duration, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64)
	}
	stepCell, status := "", ""
	if step >= 0 {
		stepCell = strconv.Itoa(step)
	}
	if r.HTTPStatus != 0 {
		status = strconv.Itoa(r.HTTPStatus)
	}
	ttft, okT := r.TTFT()
	e2e, okE := r.E2E()
	tpot, okP := r.TPOT()
	return []string{strconv.FormatInt(r.ID, 10), stepCell, strconv.FormatBool(r.Warmup), msOf(r.Scheduled, true), msOf(r.Sent, true),
		msOf(ttft, okT), msOf(e2e, okE), msOf(tpot, okP), strconv.Itoa(r.InputTokens), strconv.Itoa(r.OutputTokens), status,
		redact.Control(r.FinishReason), string(r.Error), redact.Control(r.ErrorMessage)}
}
