package cli

import (
	"bytes"
	"fmt"

	"github.com/knee-dev/knee/internal/runs"
	"github.com/spf13/cobra"
)

// newRecordsCmd is knee records: a stored run's per-request records, every
// one or only the failures, as JSONL or CSV (internal/runs writes them).
func newRecordsCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "records")
	fs := cmd.Flags()
	db := dbFlag(fs)
	var e runs.Export
	fs.BoolVar(&e.ErrorsOnly, "errors", false, "only failed requests (with their error kind and message)")
	format := fs.String("format", "", "jsonl (records.jsonl's shape) or csv (one row per request, the main fields); default: from --out's extension, else jsonl")
	out := fs.String("out", "", "write to this file instead of stdout (e.g. records.jsonl)")
	fs.IntVar(&e.Step, "step", -1, "a sweep's step, counted from 0 in knee report's steps table (default: every step)")
	fs.IntVar(&e.Limit, "limit", 0, "at most this many records (0: all)")
	cmd.Long = "Usage: knee records RUN [--errors] [--format jsonl|csv] [--step N] [--limit N] [--out FILE]   (RUN: an id or --run-name from knee runs, last, last~1)\n\nLists a stored run's per-request records; --errors only the failures and why.\nknee records RUN --out records.jsonl exports what knee bench --out writes."
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if err := runs.WantOne("records", pos); err != nil {
			return err
		}
		var err error
		if e.Format, err = runs.ExportFormat(*format, *out); err != nil {
			return err
		}
		if err := e.Check(); err != nil {
			return err
		}
		st, id, err := runs.OpenRun(*db, env.Getenv, pos[0])
		if err != nil {
			return err
		}
		defer st.Close()
		info, err := st.Run(id)
		if err != nil {
			return &UsageError{Err: err}
		}
		if err := e.CheckStep(st, info); err != nil {
			return err
		}
		if info.Records == 0 {
			// Not an error: the run exists and holds nothing to list.
			fmt.Fprintf(env.Stderr, "run %d (%s) has no per-request records stored: %s\n", id, info.Kind, runs.NoRecordsWhy(info.Kind, maxStoredSimRecords))
			return nil
		}
		// Written to memory first, so --out is either the whole export or untouched.
		var buf bytes.Buffer
		n, err := e.Write(&buf, st, id)
		if err != nil {
			return err
		}
		what := "records"
		if e.ErrorsOnly {
			what = "failed requests"
		}
		if n == 0 {
			fmt.Fprintf(env.Stderr, "run %d: no %s\n", id, what)
		}
		return writeOut(env, *out, buf.Bytes(), fmt.Sprintf("%d %s of run %d", n, what, id))
	}
	return cmd
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
