package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/spf13/cobra"
)

// newRunsCmd is knee runs: it lists stored runs, newest first.
func newRunsCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "runs")
	fs := cmd.Flags()
	db := dbFlag(fs)
	var f store.Filter
	fs.StringVar(&f.Target, "target", "", "only runs whose target contains this text")
	fs.StringVar(&f.Model, "model", "", "only runs whose model contains this text")
	fs.StringVar(&f.Label, "label", "", "only runs whose label contains this text")
	fs.StringVar(&f.Kind, "kind", "", "only runs of this kind: bench, sweep, sim, lab, import")
	since := fs.String("since", "", "only runs started since: a duration back from now (24h, 7d) or a date (2026-11-01)")
	fs.IntVar(&f.Limit, "limit", 50, "at most this many runs (0: all)")
	asJSON := fs.Bool("json", false, "print the runs as JSON")
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee runs [--target T] [--model M] [--label L] [--kind K] [--since 7d|2026-11-01] [--json]")
	})
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if len(pos) > 0 {
			return Usagef("unexpected argument %q (runs takes only flags; see knee runs -h)", pos[0])
		}
		switch f.Kind {
		case "", store.KindBench, store.KindSweep, store.KindSim, store.KindLab, store.KindImport:
		default:
			return Usagef("--kind %q: want bench, sweep, sim, lab or import", f.Kind)
		}
		if *since != "" {
			t, err := parseSince(*since, time.Now())
			if err != nil {
				return Usagef("--since %q: %v", *since, err)
			}
			f.Since = t
		}
		if f.Limit < 0 {
			return Usagef("--limit %d: want 0 or more", f.Limit)
		}
		st, err := openDBRead(env, *db)
		if err != nil {
			if *db == "" && env.Getenv("KNEE_DB") == "" && errors.Is(err, store.ErrNoDatabase) {
				// A fresh install: nothing stored yet is not an error.
				fmt.Fprintf(env.Stdout, "no runs stored yet (%s does not exist; knee bench, sweep, sim, lab and import store runs there)\n", store.Redact(store.DefaultPath(env.Getenv)))
				return nil
			}
			return err
		}
		defer st.Close()
		runs, err := st.ListRuns(f)
		if err != nil {
			return dbErr(err)
		}
		if *asJSON {
			return writeRunsJSON(env, runs)
		}
		if len(runs) == 0 {
			fmt.Fprintf(env.Stdout, "no runs in %s match\n", store.Redact(st.Path()))
			return nil
		}
		// One unit for the TTFT column, chosen from its largest figure, so
		// a stuck run's 80 minutes reads as such, not as 4782446.1 ms.
		type row struct {
			reqs, rps string
			ttftMs    float64 // NaN: none
		}
		rows := make([]row, len(runs))
		var ttfts []float64
		for i, r := range runs {
			rows[i] = row{strconv.Itoa(r.Records), "–", math.NaN()}
			s := r.Summary
			if s == nil && r.Records > 0 && r.Kind != store.KindSweep {
				// Killed or still running: the figures knee report computes
				// from the stored records (a sweep's mix its steps: no figure).
				s = partialSummary(st, r.ID)
			}
			if s != nil {
				rows[i].reqs = strconv.Itoa(s.Requests)
				rows[i].rps = strconv.FormatFloat(s.RequestThroughputRPS, 'f', 2, 64)
				if s.TTFT.Count > 0 && !math.IsInf(s.TTFT.P95, 0) && !math.IsNaN(s.TTFT.P95) {
					rows[i].ttftMs = s.TTFT.P95
					ttfts = append(ttfts, s.TTFT.P95)
				}
			}
		}
		unit, inUnit := report.DurationUnit(1, ttfts...)
		tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTARTED\tKIND\tSTATUS\tLABEL\tTARGET\tMODEL\tREQS\tREQ/S\tTTFT P95 "+strings.ToUpper(unit))
		for i, r := range runs {
			ttft := "–"
			if !math.IsNaN(rows[i].ttftMs) {
				ttft = inUnit(rows[i].ttftMs)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Start.Local().Format("2006-01-02 15:04"), r.Kind, r.Status,
				cell(r.Label, 24), cell(r.Target, 32), cell(r.Model, 28), rows[i].reqs, rows[i].rps, ttft)
		}
		return tw.Flush()
	}
	return cmd
}

// partialSummary summarises a run's stored records, as knee report does for
// a run that never finished; nil when they cannot be read.
func partialSummary(st *store.Store, id int64) *stats.Summary {
	acc := stats.NewAccumulator(stats.Options{})
	if err := st.Records(id, func(r *record.Request) error { acc.Add(r); return nil }); err != nil {
		return nil
	}
	s := acc.Summary()
	return &s
}

func cell(s string, n int) string {
	if s == "" {
		return "-"
	}
	s = strings.ReplaceAll(s, "\t", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// parseSince reads a duration back from now (90m, 24h, 7d) or a date
// (2026-11-01, or RFC 3339).
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(d, 64); err == nil && n >= 0 {
			return now.Add(-time.Duration(n * 24 * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want a duration back from now (90m, 24h, 7d) or a date (2026-11-01)")
}

type runJSON struct {
	ID      int64           `json:"id"`
	Kind    string          `json:"kind"`
	Status  string          `json:"status"`
	Label   string          `json:"label,omitempty"`
	Target  string          `json:"target,omitempty"`
	Model   string          `json:"model,omitempty"`
	Version string          `json:"knee_version,omitempty"`
	Start   time.Time       `json:"start"`
	End     *time.Time      `json:"end,omitempty"`
	Records int             `json:"records"`
	Config  json.RawMessage `json:"config"`
	Summary any             `json:"summary,omitempty"`
}

func writeRunsJSON(env *Env, runs []store.RunInfo) error {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		j := runJSON{ID: r.ID, Kind: r.Kind, Status: r.Status, Label: r.Label, Target: r.Target, Model: r.Model, Version: r.Version,
			Start: r.Start, Records: r.Records, Config: r.Config}
		if !r.End.IsZero() {
			end := r.End
			j.End = &end
		}
		if r.Summary != nil {
			j.Summary = r.Summary
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
