package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/livemetrics"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/refit"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newSweepCmd is `knee sweep`: step the load on a target (the embedded
// simulated server when no --url is given) and report the knee and the
// SLO-safe point; or, with --from, analyse points measured by any tool.
func newSweepCmd(ctx context.Context, env *Env) *cobra.Command {
	var f sweepFlags
	var t sweepTargetFlags
	var from, label string
	var st storeFlags
	var sh sweepShard
	var g guidedFlags
	cmd := newCommand(env, "sweep")
	fs := cmd.Flags()
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee sweep [--url URL] [--concurrency 1,4,16,64 | --rate 1,2,4 | --auto] [--slo EXPR]... [flags]")
		fmt.Fprintln(w, "       knee sweep --from FILE.csv|RESULT.json... [--slo EXPR]...")
		fmt.Fprintln(w, "\nSteps the load, then reports the knee (where more load buys little throughput while TTFT grows)")
		fmt.Fprintln(w, "and the SLO-safe point (the highest load meeting every SLO), and why each was chosen (docs/sweep.md).")
		fmt.Fprintln(w, "Exit 3 when SLOs are given and no measured load meets them all.")
		fmt.Fprintln(w)
	})
	fs.StringVar(&from, "from", "", "analyse load points measured elsewhere instead of measuring: a CSV/TSV load table (e.g. "+sweep.ExampleHeader+
		"), or result files of vLLM bench serve (one per load), GuideLLM, AIPerf or inference-perf; several files or a folder may follow")
	f.register(fs, 200)
	t.register(fs, &f.wl)
	st.register(fs)
	sh.register(fs)
	g.register(fs)
	st.sharding = &sh.shardFlags
	fs.StringVar(&label, "label", "", "label stored with the sweep")
	cmd.RunE = func(*cobra.Command, []string) error {
		t.noteSet(fs)
		if fs.NArg() > 0 && from == "" {
			return Usagef("unexpected argument %q (flags only; see knee sweep -h)", fs.Arg(0))
		}
		set, err := f.objectives()
		if err != nil {
			return err
		}
		if from != "" {
			if err := refuseWithFrom(fs); err != nil {
				return err
			}
			// More files may follow --from (a shell glob: --from results/*.json).
			return sweepFrom(ctx, env, &f, append(strings.Split(from, ","), fs.Args()...), set)
		}
		return runSweep(&sweepRun{ctx: ctx, env: env, fs: fs, f: &f, t: &t, st: &st, sh: &sh, label: label, set: set, g: &g})
	}
	return cmd
}

// sweepRun is one knee sweep run's state, filled in step by step; the
// flag structs it points to are values only.
type sweepRun struct {
	ctx   context.Context
	env   *Env
	fs    *pflag.FlagSet
	f     *sweepFlags
	t     *sweepTargetFlags
	st    *storeFlags
	sh    *sweepShard
	label string
	set   slo.Set
	g     *guidedFlags

	// check
	plan sweep.Plan
	meta runMeta
	// startRunner
	shard        *sweepShard // sweep --shards (nil: one process)
	loadgenGrace time.Duration
	promptNotes  []string            // what built the prompts, for the report
	target       *sweep.TargetRunner // its Partial: the step an interrupt cut short
	shardPartial *sweep.Step         // the step another shard left partial
	runner       sweep.Runner
	model        *refit.Model // --guided: the simulator choosing the loads (nil: not guided)
	// openSinks: the run database the steps' records go to (nil: --no-store)
	stored *sweepStore
	// measure
	res    *sweep.Result
	runErr error
}

// runSweep is knee sweep measuring a target, in the steps below: check the
// flags and plan the loads, build the step runner, open the run database
// and the live views, measure the steps, then store and report the
// analysis (the exit code says how it went).
func runSweep(sr *sweepRun) error {
	if err := sr.check(); err != nil {
		return err
	}
	if err := sr.startRunner(); err != nil {
		return err
	}
	closeSinks, err := sr.openSinks()
	if err != nil {
		return err
	}
	defer closeSinks()
	if done, err := sr.measure(); done {
		return err
	}
	return sr.finish()
}

// check refuses bad flags (exit 2) and plans the loads.
func (sr *sweepRun) check() error {
	f, t := sr.f, sr.t
	plan, err := f.plan()
	if err != nil {
		return err
	}
	sr.plan = plan
	if err := sr.g.Check(sr.fs.Changed, plan); err != nil {
		return err
	}
	if err := f.validateWorkload(); err != nil {
		return err
	}
	target := redactURL(t.url)
	model := t.model
	if target == "" {
		target = "embedded"
		if model == "" {
			model = "llama-3.1-8b" // the embedded server's default preset
		}
	}
	sr.meta = runMeta{Kind: "sweep", Target: target, Model: model, Label: sr.label, Load: "sweep (running)"}
	if err := sr.sh.resolve(sr.env, sr.fs, t, f, plan, sr.st.noStore, &sr.meta); err != nil {
		return err
	}
	if sr.sh.Active() {
		sr.shard = sr.sh
	}
	return nil
}

// openSinks begins the stored run and starts the live views; close ends
// the views.
func (sr *sweepRun) openSinks() (close func(), err error) {
	env, t, meta := sr.env, sr.t, &sr.meta
	stored, err := beginSweepStore(env, sr.st, *meta)
	if err != nil {
		return nil, err
	}
	sr.stored = stored
	sr.runner = sr.sh.wrap(env, sr.runner, sr, sr.f.mix.Classes(), sr.set)
	if err := t.live.start(env, livemetrics.Info{Kind: "sweep", Model: meta.Model, Target: meta.Target}); err != nil {
		stored.Finish(*meta, nil, "failed")
		return nil, err
	}
	if err := t.otlp.start(env, "sweep", "", meta.Model, t.url, t.api); err != nil {
		t.live.close(sr.ctx)
		stored.Finish(*meta, nil, "failed")
		return nil, err
	}
	return func() { t.otlp.close(); t.live.close(sr.ctx) }, nil
}

// measure runs the steps, each checkpointed in the database, and analyses
// them; a step cut short by Ctrl-C is kept as a partial step. done: the
// sweep measured nothing to report (err says why).
func (sr *sweepRun) measure() (done bool, err error) {
	f, set, plan, stored := sr.f, sr.set, sr.plan, sr.stored
	progress := f.progress(sr.env.Stderr)
	var measured []sweep.Step
	onStep := func(s sweep.Step) {
		if progress != nil { // nil with --quiet
			progress(s)
		}
		measured = append(measured, s)
		stored.Checkpoint(measured, sweep.Options{SLOs: sweep.Objectives(set), Metric: plan.Metric})
	}
	var res *sweep.Result
	var runErr error
	switch {
	case sr.g.On && sr.g.Bisect:
		res, runErr = sweep.RunGuided(sr.ctx, sr.runner, nil, sr.g.Plan(plan), set, onStep)
	case sr.g.On:
		res, runErr = sweep.RunGuided(sr.ctx, sr.runner, sr.model, sr.g.Plan(plan), set, onStep)
	default:
		res, runErr = sweep.Run(sr.ctx, sr.runner, plan, set, onStep)
	}
	if runErr != nil && sr.partial() != nil {
		// Ctrl-C mid-step: keep the partial step with the steps before it.
		p := *sr.partial()
		sweep.Judge(&p, set)
		measured = append(measured, p)
		if pres, aerr := sweep.Analyze(measured, sweep.Options{SLOs: sweep.Objectives(set), Metric: plan.Metric}); aerr == nil {
			pres.Notes = append(pres.Notes, fmt.Sprintf("the step at %s was interrupted: it is kept as a partial step with the %d requests it measured", p.Load, p.Summary.Requests))
			res = pres
		}
	}
	if res == nil {
		status := "failed"
		if sr.ctx.Err() != nil {
			status = "interrupted"
		}
		id, _ := stored.Finish(sr.meta, nil, status)
		if sr.ctx.Err() != nil && len(measured) == 0 {
			// Ctrl-C before the first step measured a request (in its
			// --warmup, say): "context canceled" alone says nothing.
			why := ""
			if d, n, _ := f.wl.WarmupValue(); d > 0 || n > 0 {
				why = " (a step's warm-up, --warmup, is not measured)"
			}
			return true, fmt.Errorf("interrupted before the first step measured any request%s: nothing to report%s", why, storedAs(id))
		}
		return true, runErr
	}
	sr.res, sr.runErr = res, runErr
	return false, nil
}

// finish stores the analysis, prints it, and says by its error how the
// sweep went: stopped early or not all stored (exit 1), no step met the
// SLOs (3), every step failed (1).
func (sr *sweepRun) finish() error {
	f, t, res, runErr, meta := sr.f, sr.t, sr.res, sr.runErr, &sr.meta
	res.Notes = append(sr.notes(), res.Notes...)
	status := "complete"
	if runErr != nil {
		status = "interrupted"
		res.Notes = append(res.Notes, fmt.Sprintf("stopped early: %v (the steps measured before are analysed)", runErr))
	}
	meta.Load = fmt.Sprintf("%s sweep over %d steps", res.LoadKind, len(res.Steps))
	meta.Config = append(append(f.stepConfig(res), [2]string{"api", t.api}), t.endpoints.ConfigKV()...)
	meta.Config = append(meta.Config, sr.g.ConfigKV()...)
	meta.Config = append(meta.Config, t.gpu.ConfigKV()...)
	if t.url == "" {
		meta.Config = append(meta.Config, t.embedded.config(t.model)...)
	} else {
		meta.Config = append(meta.Config, [2]string{"url", meta.Target})
	}
	profErr := sr.saveProfile()
	id, saveErr := sr.stored.Finish(*meta, res, status)
	if saveErr != nil {
		saveErr = fmt.Errorf("the sweep's report is above, but the run database could not store it all (it is not marked complete): %w", saveErr)
	} else if id != "" {
		res.Notes = append(res.Notes, runlife.StoredNote(id))
		f.junit.runID = id
		if sr.shard == nil {
			// (A shard's sweep is stored whole by the shard that ends the
			// run, maybe after this one prints.)
			f.storedAs = runlife.StoredReport(sr.st.db, sr.env.Getenv, id)
		}
	}
	f.junit.stopped, f.junit.config = runErr, meta.Config
	res.Notes = redact.Texts(res.Notes) // notes quote endpoints of a --url that may carry a password
	failedAll := everyStepFailed(res.Steps)
	if err := f.emit(sr.env, res); err != nil {
		return err // with SLOs, a sweep whose every step failed meets none: exit 3
	}
	if runErr != nil || profErr != nil {
		return errors.Join(runErr, profErr, saveErr)
	}
	if saveErr != nil {
		return saveErr
	}
	if failedAll != "" {
		return errors.New(failedAll)
	}
	return nil
}

// everyStepFailed says why a sweep measured nothing worth its curve (""
// when it did): the gate is internal/sweep's, shared with simulated sweeps.
func everyStepFailed(steps []sweep.Step) string { return sweep.MeasurementFailure(steps) }

// refuseWithFrom refuses measuring flags next to --from: the points come
// from the file, so a load, target or workload flag would be ignored.
func refuseWithFrom(fs *pflag.FlagSet) error {
	analysis := map[string]bool{"from": true, "slo": true, "knee-metric": true, "json": true, "out": true, "quiet": true, "db": true, "no-store": true, "label": true, "junit": true}
	var bad string
	fs.Visit(func(fl *pflag.Flag) {
		if !analysis[fl.Name] && bad == "" {
			bad = fl.Name
		}
	})
	if bad != "" {
		return Usagef("--%s does nothing with --from (the points are read from the file, not measured); drop one of them", bad)
	}
	return nil
}
