package compare

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/knee-dev/knee/internal/report"
)

// Unjudged says why a comparison could not judge the runs' latency or
// throughput ("" when it could): a gate that saw no evidence must not pass.
func (r *Result) Unjudged() string {
	if !r.LatencyComparable {
		return r.Verdict
	}
	var untested []string
	for _, m := range r.Metrics {
		if m.Name == "error_rate" {
			continue // judged from counts alone, even without records
		}
		if m.Tested {
			return ""
		}
		untested = append(untested, m.Label)
	}
	if len(untested) == 0 {
		return ""
	}
	return r.Verdict
}

// ParsePercent reads "5%" or "0.05" as a fraction.
func ParsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if v, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(v, 64)
		return f / 100, err
	}
	return strconv.ParseFloat(s, 64)
}

// Text writes r as knee compare prints it: a table of metrics with their
// change, interval and verdict, the notes and cautions, the servers' own
// figures, and the verdict.
func Text(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "knee compare: run %s (A) → run %s (B)\n\n", r.A, r.B)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tA\tB\tchange\t95% CI of B−A\tverdict\t")
	for _, m := range r.Metrics {
		unit, num := m.Unit, func(v float64) string { return num2(v, m.Unit) }
		if m.Unit == "ms" {
			// One unit per row, from its larger figure: 80 minutes reads
			// as 79.7 min, not 4782446.1 ms.
			var inUnit func(float64) string
			unit, inUnit = report.DurationUnit(2, m.A, m.B)
			num = func(v float64) string {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return "–"
				}
				return inUnit(v)
			}
		}
		ci := "–"
		if m.Tested {
			ci = fmt.Sprintf("[%s, %s]", num(*m.CILow), num(*m.CIHigh))
		}
		change := "–"
		switch {
		case math.IsNaN(m.Diff) || math.IsInf(m.Diff, 0):
		case m.Unit == "ratio":
			change = fmt.Sprintf("%+.2f pp", 100*m.Diff)
		case m.A != 0:
			change = fmt.Sprintf("%+.1f%%", 100*m.Change)
		}
		verdict := map[string]string{"worse": "worse ✗", "better": "better ✓", "same": "within noise", "untested": "not judged"}[m.Effect]
		if m.WithinJitter {
			verdict = "within jitter"
		}
		fmt.Fprintf(tw, "%s (%s)\t%s\t%s\t%s\t%s\t%s\t\n", m.Label, unit, num(m.A), num(m.B), change, ci, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nbeyond noise = the %s; and a change of at least %.3g%% (--min-change) and %.3g ms (--min-diff); "+
		"against knee's own server, also a change in the server's intended token times (else it is the machine: within jitter).\n",
		r.Method, 100*r.MinChange, r.MinDiffMS)
	// One line per distinct note, naming every metric it applies to.
	var notes []string
	labels := map[string][]string{}
	for _, m := range r.Metrics {
		if m.Note != "" {
			if labels[m.Note] == nil {
				notes = append(notes, m.Note)
			}
			labels[m.Note] = append(labels[m.Note], m.Label)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s: %s\n", strings.Join(labels[n], ", "), n)
	}
	for _, c := range r.Cautions {
		fmt.Fprintf(w, "caution: %s\n", c)
	}
	if err := writeShown(w, "servers' own metrics (scraped /metrics; aggregates, shown, not judged)", r.Server, 'f', 1); err != nil {
		return err
	}
	if err := writeShown(w, "energy (the GPUs' telemetry or the power model; docs/energy.md; shown, not judged)", r.Energy, 'g', 4); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nverdict: %s\n", r.Verdict)
	return nil
}

// num2 is a figure of unit with two decimals ("–" when missing).
func num2(v float64, unit string) string {
	switch unit {
	case "ratio":
		return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) { // the figure is missing
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// writeShown writes rows that are shown, not judged (A, B and B's change
// from A), under title; nothing when there are none. fmtByte and prec format
// the values as strconv.FormatFloat does.
func writeShown(w io.Writer, title string, rows []ServerRow, fmtByte byte, prec int) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tA\tB\tchange\t")
	val := func(x *float64) string {
		if x == nil {
			return "–"
		}
		return strconv.FormatFloat(*x, fmtByte, prec, 64)
	}
	for _, row := range rows {
		change := "–"
		if row.A != nil && row.B != nil && *row.A != 0 {
			change = fmt.Sprintf("%+.1f%%", 100*(*row.B-*row.A)/(*row.A))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", row.Label, val(row.A), val(row.B), change)
	}
	return tw.Flush()
}
