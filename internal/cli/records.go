package cli

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/spf13/cobra"
)

// newRecordsCmd is knee records: it lists a stored run's per-request records: every one, or only
// the failures with their messages; as JSONL (records.jsonl's shape, so
// the export reads back with knee import or knee diagnose) or CSV.
func newRecordsCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "records")
	fs := cmd.Flags()
	db := dbFlag(fs)
	errorsOnly := fs.Bool("errors", false, "only failed requests (with their error kind and message)")
	format := fs.String("format", "", "jsonl (records.jsonl's shape) or csv (one row per request, the main fields); default: from --out's extension, else jsonl")
	out := fs.String("out", "", "write to this file instead of stdout (e.g. records.jsonl)")
	step := fs.Int("step", -1, "a sweep's step, counted from 0 in knee report's steps table (default: every step)")
	limit := fs.Int("limit", 0, "at most this many records (0: all)")
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee records RUN [--errors] [--format jsonl|csv] [--step N] [--limit N] [--out FILE]   (RUN: an id from knee runs, last, last~1)")
		fmt.Fprintln(w, "\nLists a stored run's per-request records; --errors only the failures and why.")
		fmt.Fprintln(w, "knee records RUN --out records.jsonl exports what knee bench --out writes.")
		fmt.Fprintln(w)
	})
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if err := wantOneRun("records", pos); err != nil {
			return err
		}
		f := strings.ToLower(*format)
		if f == "" {
			f = "jsonl"
			if strings.HasSuffix(strings.ToLower(*out), ".csv") {
				f = "csv"
			}
		}
		if f == "json" {
			f = "jsonl"
		}
		if f != "jsonl" && f != "csv" {
			return Usagef("--format %q: want jsonl or csv", *format)
		}
		if *limit < 0 {
			return Usagef("--limit %d: want 0 (all) or more", *limit)
		}
		if *step < -1 {
			return Usagef("--step %d: want a step number from 0", *step)
		}
		st, id, err := openRun(env, *db, pos[0])
		if err != nil {
			return err
		}
		defer st.Close()
		info, err := st.Run(id)
		if err != nil {
			return &UsageError{Err: err}
		}
		if *step >= 0 {
			sw, err := st.Sweep(id)
			if err != nil {
				return dbErr(err)
			}
			if sw == nil {
				return Usagef("--step %d: run %d is a %s, not a sweep", *step, id, info.Kind)
			}
			if *step >= len(sw.Steps) {
				return Usagef("--step %d: run %d has steps 0 to %d", *step, id, len(sw.Steps)-1)
			}
		}
		if info.Records == 0 {
			// Not an error: the run exists and holds nothing to list.
			fmt.Fprintf(env.Stderr, "run %d (%s) has no per-request records stored: %s\n", id, info.Kind, noRecordsWhy(info.Kind))
			return nil
		}

		// Written to memory first, so --out is either the whole export or untouched.
		var buf bytes.Buffer
		var emit func(step int, r *record.Request) error
		var flush func() error
		switch f {
		case "jsonl":
			w := record.NewWriter(&buf)
			emit = func(_ int, r *record.Request) error { return w.Write(r) }
			flush = w.Flush
		case "csv":
			cw := csv.NewWriter(&buf)
			if err := cw.Write(recordCSVHeader); err != nil {
				return err
			}
			emit = func(step int, r *record.Request) error { return cw.Write(recordCSVRow(step, r)) }
			flush = func() error { cw.Flush(); return cw.Error() }
		}
		n := 0
		errLimit := errors.New("limit reached")
		err = st.StepRecords(id, func(s int, r *record.Request) error {
			if (*step >= 0 && s != *step) || (*errorsOnly && r.OK()) {
				return nil
			}
			if *limit > 0 && n >= *limit {
				return errLimit
			}
			n++
			return emit(s, r)
		})
		if err != nil && !errors.Is(err, errLimit) {
			return dbErr(err)
		}
		if err := flush(); err != nil {
			return err
		}
		what := "records"
		if *errorsOnly {
			what = "failed requests"
		}
		if n == 0 {
			fmt.Fprintf(env.Stderr, "run %d: no %s\n", id, what)
		}
		return writeOut(env, *out, buf.Bytes(), fmt.Sprintf("%d %s of run %d", n, what, id))
	}
	return cmd
}

func noRecordsWhy(kind string) string {
	switch kind {
	case "import":
		return "a summary-only import: the file had no per-request data"
	case "sweep":
		return "a simulated sweep, or one stored before knee kept sweep records; knee sim sweep --out DIR writes them"
	case "sim", "lab":
		return fmt.Sprintf("this simulation stored only its summary (a simulation keeps its records in the database when --requests sizes it, at most %d; a --duration run keeps none); knee sim --out DIR writes records.jsonl", maxStoredSimRecords)
	}
	return "none were stored"
}

var recordCSVHeader = []string{"id", "step", "warmup", "scheduled_ms", "sent_ms", "ttft_ms", "e2e_ms", "tpot_ms",
	"input_tokens", "output_tokens", "http_status", "finish_reason", "error", "error_message"}

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
		r.FinishReason, string(r.Error), r.ErrorMessage}
}

// whyFailed says where the failed requests' messages can be read.
func whyFailed(runID, outDir string) string {
	switch {
	case runID != "":
		return "; the messages of every failure: knee records " + runID + " --errors"
	case outDir != "":
		return "; the messages of every failure are in " + outDir + "/records.jsonl"
	}
	return "; the most common messages are listed above (--out DIR keeps every record)"
}
