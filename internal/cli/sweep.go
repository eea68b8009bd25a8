package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/knee-dev/knee/internal/livemetrics"
	"github.com/knee-dev/knee/internal/record"
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
	t.register(fs)
	st.register(fs)
	sh.register(fs)
	st.sharding = &sh.shardFlags
	fs.StringVar(&label, "label", "", "label stored with the sweep")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
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
		plan, err := f.plan()
		if err != nil {
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
		meta := runMeta{kind: "sweep", target: target, model: model, label: label, load: "sweep (running)"}
		if err := sh.resolve(env, fs, &t, &f, plan, st.noStore, &meta); err != nil {
			return err
		}
		runner, cleanup, err := t.runner(ctx, env, &f, set)
		if err != nil {
			return err
		}
		defer cleanup()
		stored, err := beginSweepStore(env, &st, meta)
		if err != nil {
			return err
		}
		t.stored = stored
		runner = sh.wrap(env, runner, &t, f.mix.classes(), set)
		if err := t.live.start(env, livemetrics.Info{Kind: "sweep", Model: model, Target: target}); err != nil {
			stored.finish(meta, nil, "failed")
			return err
		}
		defer t.live.close(ctx)
		if err := t.otlp.start(env, "sweep", "", model, t.url, t.api); err != nil {
			stored.finish(meta, nil, "failed")
			return err
		}
		defer t.otlp.close()
		progress := f.progress(env.Stderr)
		var measured []sweep.Step
		res, runErr := sweep.Run(ctx, runner, plan, set, func(s sweep.Step) {
			if progress != nil { // nil with --quiet
				progress(s)
			}
			measured = append(measured, s)
			stored.checkpoint(measured, sweep.Options{SLOs: sweep.Objectives(set), Metric: plan.Metric})
		})
		if runErr != nil && t.partial != nil {
			// Ctrl-C mid-step: keep the partial step with the steps before it.
			p := *t.partial
			sweep.Judge(&p, set)
			measured = append(measured, p)
			if pres, aerr := sweep.Analyze(measured, sweep.Options{SLOs: sweep.Objectives(set), Metric: plan.Metric}); aerr == nil {
				pres.Notes = append(pres.Notes, fmt.Sprintf("the step at %s was interrupted: it is kept as a partial step with the %d requests it measured", p.Load, p.Summary.Requests))
				res = pres
			}
		}
		if res == nil {
			status := "failed"
			if ctx.Err() != nil {
				status = "interrupted"
			}
			stored.finish(meta, nil, status)
			return runErr
		}
		res.Notes = append(t.notes(&f), res.Notes...)
		status := "complete"
		if runErr != nil {
			status = "interrupted"
			res.Notes = append(res.Notes, fmt.Sprintf("stopped early: %v (the steps measured before are analysed)", runErr))
		}
		meta.load = fmt.Sprintf("%s sweep over %d steps", res.LoadKind, len(res.Steps))
		meta.config = append(append(f.stepConfig(res), [2]string{"api", t.api}), t.endpoints.config()...)
		if t.url == "" {
			meta.config = append(meta.config, t.embedded.config(t.model)...)
		} else {
			meta.config = append(meta.config, [2]string{"url", target})
		}
		id, saveErr := stored.finish(meta, res, status)
		if saveErr != nil {
			saveErr = fmt.Errorf("the sweep's report is above, but the run database could not store it all (it is not marked complete): %w", saveErr)
		} else if id != "" {
			res.Notes = append(res.Notes, "stored as run "+id)
			f.junit.runID = id
		}
		f.junit.stopped, f.junit.config = runErr, meta.config
		res.Notes = redactAll(res.Notes) // notes quote endpoints of a --url that may carry a password
		failedAll := everyStepFailed(res.Steps)
		if err := f.emit(env, res); err != nil {
			return err // with SLOs, a sweep whose every step failed meets none: exit 3
		}
		if runErr != nil {
			return errors.Join(runErr, saveErr)
		}
		if saveErr != nil {
			return saveErr
		}
		if failedAll != "" {
			return errors.New(failedAll)
		}
		return nil
	}
	return cmd
}

// everyStepFailed says why a sweep measured nothing ("" when some step
// completed requests): a sweep whose every step failed found no curve, and
// must not pass as a success.
func everyStepFailed(steps []sweep.Step) string {
	if len(steps) == 0 {
		return "the sweep measured no step"
	}
	kinds := map[string]int{}
	requests := 0
	for i := range steps {
		sum := &steps[i].Summary
		if sum.Completed > 0 {
			return ""
		}
		requests += sum.Requests
		for k, n := range sum.ErrorKinds {
			kinds[k] += n
		}
	}
	if requests == 0 {
		return fmt.Sprintf("every step of the sweep failed: none of its %d steps measured a request", len(steps))
	}
	top, most := "", 0
	for _, k := range record.ErrorKinds {
		if n := kinds[string(k)]; n > most {
			top, most = string(k), n
		}
	}
	return fmt.Sprintf("every step of the sweep failed: none of the %d requests of its %d steps completed (%s): %s",
		requests, len(steps), errorKindsLine(kinds), record.ErrorKind(top).Hint())
}

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
