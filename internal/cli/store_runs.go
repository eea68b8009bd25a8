package cli

// Helpers shared by runs, report, compare and import: opening the run
// database, resolving what the user typed as a run, and loading a stored run
// as the report model.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// dbFlag registers --db on fs.
func dbFlag(fs *pflag.FlagSet) *string {
	return fs.String("db", "", "run database: an SQLite file or a postgres:// URL (default $KNEE_DB, else $XDG_DATA_HOME/knee/knee.db)")
}

// openDB opens the database named by --db, $KNEE_DB or the default path. A
// database that is damaged, not a knee database, or newer than this knee is
// bad input (exit 2).
func openDB(env *Env, flagPath string) (*store.Store, error) {
	path := flagPath
	if path == "" {
		path = store.DefaultPath(env.Getenv)
	}
	st, err := store.Open(path)
	if err != nil {
		if errors.Is(err, store.ErrNotDatabase) || errors.Is(err, store.ErrTooNew) {
			return nil, Usagef("%v", err)
		}
		return nil, fmt.Errorf("opening the run database %s: %w", store.Redact(path), err)
	}
	return st, nil
}

// openDBRead opens the database for a command that only reads (runs,
// report, compare, records): read-only, so it works on a read-only folder or
// file, and never creating anything. A missing file is bad input naming it.
func openDBRead(env *Env, flagPath string) (*store.Store, error) {
	path := flagPath
	if path == "" {
		path = store.DefaultPath(env.Getenv)
	}
	st, err := store.OpenReadOnly(path)
	if err != nil {
		if errors.Is(err, store.ErrNoDatabase) {
			return nil, Usagef("%w; pass --db FILE or set KNEE_DB to read another", err)
		}
		return nil, dbErr(err)
	}
	return st, nil
}

// dbErr makes a damaged or foreign database file bad input (exit 2): the
// store names the file.
func dbErr(err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		return err
	}
	if errors.Is(err, store.ErrNotDatabase) || errors.Is(err, store.ErrTooNew) {
		return &UsageError{Err: err}
	}
	return err
}

// resolveRun turns a user's run reference (12, last, last~1) into an id; an
// unknown or malformed reference is bad input.
func resolveRun(st *store.Store, ref string) (int64, error) {
	id, err := st.ResolveID(ref)
	if err != nil {
		return 0, &UsageError{Err: err}
	}
	return id, nil
}

// loadedRun is a stored run ready to render or compare.
type loadedRun struct {
	info    *store.RunInfo
	report  *report.Run
	records []record.Request // nil when the run stored none (summary-only import)
	sweep   *sweep.Result    // nil unless the run is a sweep with steps
}

// loadRun reads run id with its records and sweep. A run that never
// finished gets a partial summary computed from its stored records.
func loadRun(st *store.Store, id int64) (*loadedRun, error) {
	info, err := st.Run(id)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	lr := &loadedRun{info: info}
	if lr.sweep, err = st.SweepResult(id); err != nil {
		return nil, dbErr(err)
	}
	if lr.sweep != nil && len(lr.sweep.Steps) == 0 {
		lr.sweep = nil
	}
	step, stepName := -1, ""
	if lr.sweep != nil {
		// A sweep's summary is one step's; its records are that step's too,
		// so the distributions drawn (and compared) match the summary.
		var why string
		step, why = sweepSummaryStep(lr.sweep)
		stepName = fmt.Sprintf("%s (%s)", lr.sweep.Steps[step].Load, why)
	}
	if info.Records > 0 {
		err = st.StepRecords(id, func(s int, r *record.Request) error {
			if step < 0 || s == step {
				lr.records = append(lr.records, *r)
			}
			return nil
		})
		if err != nil {
			return nil, dbErr(err)
		}
	}
	var notes []string
	var sum stats.Summary
	switch {
	case info.Summary != nil:
		sum = *info.Summary
		if info.Records == 0 {
			// A summary-only import: JSON has no NaN, so the percentiles
			// its file lacked read back as +Inf; they are missing, not slow.
			for _, d := range []*stats.Dist{&sum.TTFT, &sum.TTFTSched, &sum.ITL, &sum.TPOT, &sum.E2E, &sum.Lag} {
				unInf(d)
			}
		}
		if info.Status == store.StatusInterrupted {
			notes = append(notes, "interrupted: the run was stopped before its end; the figures cover what was measured until then")
		}
	default:
		sum = stats.Summarize(lr.records, stats.Options{Series: true})
		switch info.Status {
		case store.StatusRunning:
			notes = append(notes, fmt.Sprintf("still running (last write %s): a partial summary of the %d records stored so far",
				info.Heartbeat.Format("15:04:05"), len(lr.records)))
		default:
			notes = append(notes, fmt.Sprintf("%s: the run never finished (killed or crashed); this partial summary is computed from the %d records stored before it stopped",
				info.Status, len(lr.records)))
		}
	}
	var cfg [][2]string
	for _, kv := range configPairs(info.Config) {
		if kv[0] == "note" { // importers keep the file's caveats as notes
			notes = append(notes, kv[1])
			continue
		}
		cfg = append(cfg, kv)
	}
	rep := &report.Run{ID: strconv.FormatInt(id, 10), Kind: info.Kind, Version: info.Version, Target: info.Target, Model: info.Model,
		Label: info.Label, Status: info.Status, Config: cfg, Start: info.Start, Summary: sum, Notes: notes,
		Sweep: lr.sweep, Step: stepName, ErrorMessages: report.CommonErrors(lr.records, 5)}
	for _, kv := range cfg {
		switch kv[0] {
		case "load":
			rep.Load = kv[1]
		case "workload":
			rep.Workload = kv[1]
		case "slo", "slos":
			if set, err := slo.ParseAll(splitSLOs(kv[1])); err == nil {
				rep.SLOs = set.Evaluate(sum)
			}
		}
	}
	if order, own := storedClasses(cfg); len(order) > 0 && len(lr.records) > 0 {
		var objectives slo.Set
		for _, r := range rep.SLOs {
			objectives = append(objectives, r.Objective)
		}
		_, rep.Classes = classSummaries(lr.records, stats.Options{}, objectives, own, order)
	}
	view, note := loadServerView(st, id, max(step, store.WholeRun), lr.records, &sum)
	rep.Server = view
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	lr.report = rep
	return lr, nil
}

func unInf(d *stats.Dist) {
	for _, v := range []*float64{&d.Mean, &d.P50, &d.P90, &d.P95, &d.P99, &d.P999, &d.Max} {
		if math.IsInf(*v, 0) {
			*v = math.NaN()
		}
	}
}

func splitSLOs(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '\n' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// configPairs flattens a stored JSON configuration object into ordered
// key/value pairs (nested objects as dotted keys, arrays as JSON text),
// keeping the order the object was written in.
func configPairs(raw json.RawMessage) [][2]string {
	var out [][2]string
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(prefix string) error
	walk = func(prefix string) error {
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key := fmt.Sprint(tok)
			if prefix != "" {
				key = prefix + "." + key
			}
			var v json.RawMessage
			// Peek: objects recurse, everything else is one value.
			if err := dec.Decode(&v); err != nil {
				return err
			}
			v = bytes.TrimSpace(v)
			switch {
			case len(v) > 0 && v[0] == '{':
				sub := configPairs(v)
				for _, kv := range sub {
					out = append(out, [2]string{key + "." + kv[0], kv[1]})
				}
			case len(v) > 0 && v[0] == '"':
				var s string
				json.Unmarshal(v, &s)
				out = append(out, [2]string{key, s})
			default:
				out = append(out, [2]string{key, string(v)})
			}
		}
		return nil
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	walk("")
	return out
}

// pairsJSON writes ordered pairs as a JSON object, keeping their order.
func pairsJSON(pairs [][2]string) json.RawMessage {
	b, _ := report.OrderedKV(pairs).MarshalJSON() // strings always marshal
	return b
}
