package runs

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// CheckKind refuses a --kind that names no kind of run.
func CheckKind(kind string) error {
	switch kind {
	case "", store.KindBench, store.KindSweep, store.KindSim, store.KindLab, store.KindImport:
		return nil
	}
	return badinput.Errorf("--kind %q: want bench, sweep, sim, lab or import", kind)
}

// Table writes list as knee runs' table, newest first as given. A run
// without a summary (killed, or still running) shows the figures computed
// from its stored records.
func Table(w io.Writer, st *store.Store, list []store.RunInfo) error {
	// One unit for the TTFT column, chosen from its largest figure, so a
	// stuck run's 80 minutes reads as such, not as 4782446.1 ms.
	type row struct {
		reqs, rps string
		ttftMs    float64 // NaN: none
	}
	rows := make([]row, len(list))
	var ttfts []float64
	for i, r := range list {
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTARTED\tKIND\tSTATUS\tLABEL\tTARGET\tMODEL\tREQS\tREQ/S\tTTFT P95 "+strings.ToUpper(unit))
	for i, r := range list {
		ttft := "–"
		if !math.IsNaN(rows[i].ttftMs) {
			ttft = inUnit(rows[i].ttftMs)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, cell(r.Name, 24), r.Start.Local().Format("2006-01-02 15:04"), r.Kind, r.Status,
			cell(r.Label, 24), cell(r.Target, 32), cell(r.Model, 28), rows[i].reqs, rows[i].rps, ttft)
	}
	return tw.Flush()
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

// cell fits s to a column of n runes ("-" when empty).
func cell(s string, n int) string {
	if s == "" {
		return "-"
	}
	// A label, a target or a model came from a flag, a file or a server:
	// a tab or a newline would break the table, an escape the terminal.
	s = redact.Control(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ParseSince reads a duration back from now (90m, 24h, 7d) or a date
// (2026-11-01, or RFC 3339).
func ParseSince(s string, now time.Time) (time.Time, error) {
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

// Row is one stored run as knee runs --json and the web UI's runs page
// list it; each adds its own columns after these.
type Row struct {
	ID      int64     `json:"id"`
	Name    string    `json:"name,omitempty"` // --run-name
	Kind    string    `json:"kind"`
	Status  string    `json:"status"`
	Label   string    `json:"label,omitempty"`
	Target  string    `json:"target,omitempty"`
	Model   string    `json:"model,omitempty"`
	Version string    `json:"knee_version,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"`
	Records int       `json:"records"`
}

// RowOf is r's row.
func RowOf(r *store.RunInfo) Row {
	return Row{ID: r.ID, Name: r.Name, Kind: r.Kind, Status: r.Status, Label: r.Label, Target: r.Target, Model: r.Model, Version: r.Version,
		Start: r.Start, End: r.End, Records: r.Records}
}

type runJSON struct {
	Row
	Config  json.RawMessage `json:"config"`
	Summary any             `json:"summary,omitempty"`
}

// JSON writes list as knee runs --json's array.
func JSON(w io.Writer, list []store.RunInfo) error {
	out := make([]runJSON, 0, len(list))
	for _, r := range list {
		j := runJSON{Row: RowOf(&r), Config: r.Config}
		if r.Summary != nil {
			j.Summary = r.Summary
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
