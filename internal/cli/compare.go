package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/compare"
	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/junit"
	"github.com/knee-dev/knee/internal/runs"
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
		fmt.Fprintln(w, "Usage: knee compare RUN_A RUN_B [--fail-on worse|change] [--json]   (B is judged against A; RUN: an id or --run-name, last, last~1)")
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
		mc, err := compare.ParsePercent(*minChange)
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
		var energies [2]*energy.Figures
		for i, ref := range pos {
			id, err := resolveRun(st, ref)
			if err != nil {
				return err
			}
			lr, err := runs.Load(st, id)
			if err != nil {
				return err
			}
			sides[i] = compare.Side{ID: strconv.FormatInt(id, 10), Summary: lr.Report.Summary, Records: lr.Records,
				Model: lr.Info.Model, Target: lr.Info.Target, Setup: compareSetup(lr)}
			servers[i] = lr.Report.Server
			energies[i] = lr.Report.Energy
		}
		if *minDiff <= 0 {
			return Usagef("--min-diff %v: want a positive duration such as 1ms", *minDiff)
		}
		res := compare.Compare(sides[0], sides[1], compare.Options{Resamples: *resamples, Seed: *seed, MinChange: mc,
			MinDiffMS: float64(*minDiff) / 1e6})
		if a, b := servers[0], servers[1]; a != nil && b != nil && a.Window != nil && b.Window != nil {
			res.Server = compare.ServerRows(serverStep(a), serverStep(b), a.Window.GenerationTPS, b.Window.GenerationTPS)
		}
		res.Energy = compare.EnergyRows(energies[0], energies[1])
		if *asJSON {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(res)
		} else {
			err = compare.Text(env.Stdout, &res)
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
		if why := res.Unjudged(); *failOn != "none" && why != "" {
			return fmt.Errorf("--fail-on %s cannot pass a gate it could not judge: %s", *failOn, why)
		}
		return nil
	}
	return cmd
}

// RegressionError: knee compare --fail-on found what it was told to fail
// on (exit 3, like a failed SLO: the runs were compared, the judgement failed).
type RegressionError struct{ Verdict, FailOn string }

func (e *RegressionError) ExitCode() int { return ExitSLO }

func (e *RegressionError) Error() string {
	return fmt.Sprintf("--fail-on %s: %s", e.FailOn, e.Verdict)
}

// compareSetup is what a stored run was, for the comparison's cautions: its
// kind and configuration, less what differs between any two runs anyway.
func compareSetup(lr *runs.Loaded) [][2]string {
	out := [][2]string{{"kind", lr.Info.Kind}}
	for _, kv := range lr.Report.Config {
		switch kv[0] {
		case "seed", "url": // a fresh seed per run is the default; url is the target
			continue
		}
		out = append(out, kv)
	}
	return out
}
