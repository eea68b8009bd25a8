package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knee-dev/knee/internal/compare"
)

// runCompare sets two stored runs side by side, metric by metric.
func runCompare(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "compare")
	db := dbFlag(fs)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	resamples := fs.Int("resamples", 1000, "bootstrap resamples for the confidence intervals")
	minChange := fs.String("min-change", "5%", "smallest relative change worth flagging, even when beyond noise")
	seed := fs.Uint64("seed", 1, "resampling seed (the comparison is deterministic for a seed)")
	minDiff := fs.Duration("min-diff", time.Millisecond, "smallest latency difference worth flagging (knee measures to about 1ms)")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: knee compare RUN_A RUN_B [--json]   (B is judged against A; RUN: an id, last, last~1)")
		fmt.Fprintln(env.Stderr, "Beyond noise: "+compare.Method+".")
		printFlags(fs)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
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
	st, err := openDBRead(env, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	var sides [2]compare.Side
	for i, ref := range pos {
		id, err := resolveRun(st, ref)
		if err != nil {
			return err
		}
		lr, err := loadRun(st, id)
		if err != nil {
			return err
		}
		sides[i] = compare.Side{ID: strconv.FormatInt(id, 10), Summary: lr.report.Summary, Records: lr.records}
	}
	if *minDiff <= 0 {
		return Usagef("--min-diff %v: want a positive duration such as 1ms", *minDiff)
	}
	res := compare.Compare(sides[0], sides[1], compare.Options{Resamples: *resamples, Seed: *seed, MinChange: mc,
		MinDiffMS: float64(*minDiff) / 1e6})
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return compareText(env, &res)
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
		ci := "–"
		if m.Tested {
			ci = fmt.Sprintf("[%s, %s]", cmpNum(*m.CILow, m.Unit), cmpNum(*m.CIHigh, m.Unit))
		}
		change := "–"
		switch {
		case m.Unit == "ratio":
			change = fmt.Sprintf("%+.2f pp", 100*m.Diff)
		case m.A != 0:
			change = fmt.Sprintf("%+.1f%%", 100*m.Change)
		}
		verdict := map[string]string{"worse": "worse ✗", "better": "better ✓", "same": "within noise", "untested": "not judged"}[m.Effect]
		if m.Effect == "same" && m.JitterMS > 0 && math.Abs(m.Diff) <= m.JitterMS && m.Tested && (*m.CILow > 0 || *m.CIHigh < 0) {
			verdict = "within jitter"
		}
		fmt.Fprintf(tw, "%s (%s)\t%s\t%s\t%s\t%s\t%s\t\n", m.Label, m.Unit, cmpNum(m.A, m.Unit), cmpNum(m.B, m.Unit), change, ci, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nbeyond noise = the %s; and a change of at least %.3g%% (--min-change) and %.3g ms (--min-diff); "+
		"against knee's own server, no larger than the token delivery jitter measured against its intended times.\n",
		r.Method, 100*r.MinChange, r.MinDiffMS)
	for _, m := range r.Metrics {
		if m.Note != "" {
			fmt.Fprintf(w, "note: %s: %s\n", m.Label, m.Note)
		}
	}
	for _, c := range r.Cautions {
		fmt.Fprintf(w, "caution: %s\n", c)
	}
	fmt.Fprintf(w, "\nverdict: %s\n", r.Verdict)
	return nil
}

func cmpNum(v float64, unit string) string {
	switch unit {
	case "ratio":
		return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
	}
	if v != v { // NaN: the figure is missing
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
