package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knee-dev/knee/internal/compare"
	"github.com/knee-dev/knee/internal/junit"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/spf13/cobra"
)

// newCompareCmd is knee compare: it sets two stored runs side by side, metric by metric.
func newCompareCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "compare")
	fs := cmd.Flags()
	db := dbFlag(fs)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	resamples := fs.Int("resamples", 1000, "bootstrap resamples for the confidence intervals")
	minChange := fs.String("min-change", "5%", "smallest relative change worth flagging, even when beyond noise")
	seed := fs.Uint64("seed", 1, "resampling seed (the comparison is deterministic for a seed)")
	minDiff := fs.Duration("min-diff", time.Millisecond, "smallest latency difference worth flagging (knee measures to about 1ms)")
	var junitOut junitFlag
	junitOut.register(fs, "the comparison's verdicts (one test case per metric; failures as --fail-on says)")
	failOn := fs.String("fail-on", "none", "exit 3 when B is judged: worse (any metric worse beyond noise), change (worse or better), none")
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee compare RUN_A RUN_B [--fail-on worse|change] [--json]   (B is judged against A; RUN: an id, last, last~1)")
		fmt.Fprintln(w, "Exit 3 with --fail-on worse when B is worse beyond noise (a regression gate for CI).")
		fmt.Fprintln(w, "Beyond noise: "+compare.Method+".")
	})
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if len(pos) != 2 {
			return Usagef("want two runs: knee compare RUN_A RUN_B (ids from `knee runs`, \"last\", \"last~1\"), got %d arguments", len(pos))
		}
		if *resamples < 100 || *resamples > 100000 {
			return Usagef("--resamples %d: want 100 to 100000", *resamples)
		}
		mc, err := parsePercent(*minChange)
		if err != nil || mc < 0 || mc >= 1 {
			return Usagef("--min-change %q: want a percentage such as 1%% or 0.5%%", *minChange)
		}
		switch *failOn {
		case "none", "worse", "change":
		default:
			return Usagef("--fail-on %q: want worse, change or none", *failOn)
		}
		if err := junitOut.check(); err != nil {
			return err
		}
		st, err := openDBRead(env, *db)
		if err != nil {
			return err
		}
		defer st.Close()
		var sides [2]compare.Side
		var servers [2]*scrape.View
		for i, ref := range pos {
			id, err := resolveRun(st, ref)
			if err != nil {
				return err
			}
			lr, err := loadRun(st, id)
			if err != nil {
				return err
			}
			sides[i] = compare.Side{ID: strconv.FormatInt(id, 10), Summary: lr.report.Summary, Records: lr.records,
				Model: lr.info.Model, Target: lr.info.Target, Setup: compareSetup(lr)}
			servers[i] = lr.report.Server
		}
		if *minDiff <= 0 {
			return Usagef("--min-diff %v: want a positive duration such as 1ms", *minDiff)
		}
		res := compare.Compare(sides[0], sides[1], compare.Options{Resamples: *resamples, Seed: *seed, MinChange: mc,
			MinDiffMS: float64(*minDiff) / 1e6})
		res.Server = serverRows(servers[0], servers[1])
		if *asJSON {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(res)
		} else {
			err = compareText(env, &res)
		}
		if err != nil {
			return err
		}
		if err := junitOut.write("knee compare", junit.CompareSuite(&res, *failOn)); err != nil {
			return err
		}
		if *failOn == "change" && len(res.Better) > 0 || *failOn != "none" && len(res.Worse) > 0 {
			return &RegressionError{Verdict: res.Verdict, FailOn: *failOn}
		}
		if why := unjudged(&res); *failOn != "none" && why != "" {
			return fmt.Errorf("--fail-on %s cannot pass a gate it could not judge: %s", *failOn, why)
		}
		return nil
	}
	return cmd
}

// unjudged says why a comparison could not judge the runs' latency or
// throughput ("" when it could): a gate that saw no evidence must not pass.
func unjudged(res *compare.Result) string {
	if !res.LatencyComparable {
		return res.Verdict
	}
	var untested []string
	for _, m := range res.Metrics {
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
	return res.Verdict
}

// RegressionError: knee compare --fail-on found what it was told to fail
// on (exit 3, like a failed SLO: the runs were compared, the judgement failed).
type RegressionError struct{ Verdict, FailOn string }

func (e *RegressionError) Error() string {
	return fmt.Sprintf("--fail-on %s: %s", e.FailOn, e.Verdict)
}

// compareSetup is what a stored run was, for the comparison's cautions: its
// kind and configuration, less what differs between any two runs anyway.
func compareSetup(lr *loadedRun) [][2]string {
	out := [][2]string{{"kind", lr.info.Kind}}
	for _, kv := range lr.report.Config {
		switch kv[0] {
		case "seed", "url": // a fresh seed per run is the default; url is the target
			continue
		}
		out = append(out, kv)
	}
	return out
}

func parsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if v, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(v, 64)
		return f / 100, err
	}
	return strconv.ParseFloat(s, 64)
}

func compareText(env *Env, r *compare.Result) error {
	w := env.Stdout
	fmt.Fprintf(w, "knee compare: run %s (A) → run %s (B)\n\n", r.A, r.B)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tA\tB\tchange\t95% CI of B−A\tverdict\t")
	for _, m := range r.Metrics {
		unit, num := m.Unit, func(v float64) string { return cmpNum(v, m.Unit) }
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
	if len(r.Server) > 0 {
		fmt.Fprintf(w, "\nservers' own metrics (scraped /metrics; aggregates, shown, not judged):\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "metric\tA\tB\tchange\t")
		for _, row := range r.Server {
			val := func(x *float64) string {
				if x == nil {
					return "–"
				}
				return strconv.FormatFloat(*x, 'f', 1, 64)
			}
			change := "–"
			if row.A != nil && row.B != nil && *row.A != 0 {
				change = fmt.Sprintf("%+.1f%%", 100*(*row.B-*row.A)/(*row.A))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", row.Label, val(row.A), val(row.B), change)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nverdict: %s\n", r.Verdict)
	return nil
}

// serverRows set two runs' scraped server figures side by side (nil unless
// both runs scraped a server knee knows).
func serverRows(a, b *scrape.View) []compare.ServerRow {
	if a == nil || b == nil || a.Window == nil || b.Window == nil {
		return nil
	}
	sa, sb := serverStep(a), serverStep(b)
	f := func(x float64) *float64 { return &x }
	tps := func(w *scrape.Window) *float64 { return w.GenerationTPS }
	rows := []compare.ServerRow{
		{Metric: "server_queue_mean_ms", Label: "server queue mean (ms)", A: sa.QueueMeanMS, B: sb.QueueMeanMS},
		{Metric: "server_prefill_mean_ms", Label: "server prefill mean (ms)", A: sa.PrefillMeanMS, B: sb.PrefillMeanMS},
		{Metric: "server_running_max", Label: "server running max", A: sa.RunningMax, B: sb.RunningMax},
		{Metric: "server_waiting_max", Label: "server waiting max", A: sa.WaitingMax, B: sb.WaitingMax},
		{Metric: "server_preemptions", Label: "server preemptions", A: sa.Preemptions, B: sb.Preemptions},
		{Metric: "server_generation_tps", Label: "server generation tok/s", A: tps(a.Window), B: tps(b.Window)},
	}
	if sa.KVUsageMax != nil || sb.KVUsageMax != nil {
		pctOf := func(x *float64) *float64 {
			if x == nil {
				return nil
			}
			return f(100 * *x)
		}
		rows = append(rows, compare.ServerRow{Metric: "server_kv_usage_max_pct", Label: "server KV usage max (%)", A: pctOf(sa.KVUsageMax), B: pctOf(sb.KVUsageMax)})
	}
	var out []compare.ServerRow
	for _, r := range rows {
		if r.A != nil || r.B != nil {
			out = append(out, r)
		}
	}
	return out
}

func cmpNum(v float64, unit string) string {
	switch unit {
	case "ratio":
		return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) { // the figure is missing
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
