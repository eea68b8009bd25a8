package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/cobra"
)

// newSimSweepCmd is `knee sim sweep`: the sweep over the simulator, every
// step a fresh engine in virtual time.
func newSimSweepCmd(ctx context.Context, env *Env) *cobra.Command {
	var f sweepFlags
	var engine simEngineFlags
	var client simClientFlags
	var st storeFlags
	var label string
	var probe probeFlags
	cmd := newCommand(env, "sim sweep")
	fs := cmd.Flags()
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee sim sweep [--concurrency 1,4,16,64 | --rate 1,2,4 | --auto] [--slo EXPR]... [flags]")
		fmt.Fprintln(w, "\nPredicts a whole load curve on the simulator and reports the knee and the SLO-safe point (docs/sweep.md).")
		fmt.Fprintln(w)
	})
	f.register(fs, 2000)
	engine.register(fs)
	client.register(fs)
	st.register(fs)
	probe.register(fs)
	fs.StringVar(&label, "label", "", "label stored with the sweep")
	var price gpuPriceFlag
	price.register(fs)
	var replicas int
	var router string
	fs.IntVar(&replicas, "replicas", 1, "engines (replicas) behind a router at every step; the load is the fleet's")
	fs.StringVar(&router, "router", sim.RoundRobin, "how the fleet's gateway picks a replica: "+strings.Join(sim.Routers, ", "))
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		engine.noteSet(fs)
		if replicas < 1 || replicas > 1024 {
			return Usagef("--replicas %d: want 1 to 1024 engines", replicas)
		}
		if !slices.Contains(sim.Routers, router) {
			return Usagef("--router %q: want one of %s", router, strings.Join(sim.Routers, ", "))
		}
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %q (flags only; see knee sim sweep -h)", fs.Arg(0))
		}
		if err := price.check(); err != nil {
			return err
		}
		plan, err := f.plan()
		if err != nil {
			return err
		}
		if err := f.validateWorkload(); err != nil {
			return err
		}
		if err := probe.Validate(); err != nil {
			return err
		}
		if f.wl.MaxConcurrency > 0 || f.wl.Ramp > 0 {
			return Usagef("--max-concurrency and --ramp are not supported by knee sim sweep")
		}
		set, err := f.objectives()
		if err != nil {
			return err
		}
		if err := f.mix.load(fs, &f.wl); err != nil {
			return err
		}
		if err := f.mix.CheckSweep(f.Rate != ""); err != nil {
			return err
		}
		cat, err := engine.catalog()
		if err != nil {
			return err
		}
		ecfg, err := engine.config(cat)
		if err != nil {
			return err
		}
		if f.mix.File != nil {
			if _, err = f.lora.Apply(&ecfg, &f.mix.Mix); err != nil {
				return err
			}
		}
		eng, err := simengine.NewEngine(ecfg)
		if err != nil {
			return Usagef("%v", err)
		}
		f.wl.SimMaxContext = eng.Config().MaxModelLen
		runner, err := f.simRunner(ecfg)
		if err == nil {
			runner.Replicas, runner.Router = replicas, router
		}
		if err != nil {
			return err
		}
		runner.SLOs = set
		runner.GPUPriceUSDPerHour = price.usdPerHour
		if runner.Probes, err = probe.Sim(nil, f.wl.ResolvedSeed()); err != nil {
			return err
		}
		if runner.Client, err = client.client(plan.Kind == sweep.Concurrency, f.wl.Duration); err != nil {
			return err
		}
		if runner.ServerLoop, err = client.serverLoop(); err != nil {
			return err
		}
		var r sweep.Runner = runner
		if f.out != "" {
			rec := &sweep.StepRecords{Dir: f.out}
			runner.OnRecord = func(_ sweep.Load, rr *record.Request) { rec.Add(rr) }
			r = &sweep.RecordingRunner{Inner: runner, Rec: rec}
		}
		res, runErr := sweep.Run(ctx, r, plan, set, f.progress(env.Stderr))
		if runErr != nil && errors.Is(runErr, simengine.ErrTooLong) {
			return tooLongUsage(runErr)
		}
		if res == nil {
			return runErr
		}
		engineTarget := sim.Target(ecfg, engine.ServerProfile.Like())
		target := engineTarget
		if replicas > 1 {
			target = fmt.Sprintf("%d replicas of %s behind %s", replicas, target, router)
		}
		res.Notes = append([]string{fmt.Sprintf("%s; per step %s; workload %s, seed %d",
			target, stepBound(&f.wl), f.workloadNote(), f.wl.ResolvedSeed())}, res.Notes...)
		for _, n := range []string{client.note(), probe.Note()} {
			if n != "" {
				res.Notes = append(res.Notes, n)
			}
		}
		for i := range res.Steps {
			energyRanges(res.Steps[i].Energy, &res.Steps[i].Summary, engine.fittedHost(), ecfg.GPU, ecfg.Model.Name, replicas)
		}
		addSweepRanges(res, engine.fittedHost(), ecfg.GPU.Name, ecfg.Model.Name, replicas)
		status := "complete"
		if runErr != nil {
			status = "interrupted"
		}
		meta := runMeta{Kind: "sweep", Target: engineTarget, Model: ecfg.Model.Name, Label: label,
			Load:   fmt.Sprintf("simulated %s sweep over %d steps", res.LoadKind, len(res.Steps)),
			Config: append(append(f.stepConfig(res), engine.configKV(eng.Config())...), client.configKV()...)}
		if id, err := storeSweep(env, &st, meta, res, status); err != nil {
			fmt.Fprintf(env.Stderr, "knee sim sweep: %v\n", err)
		} else if id != "" {
			res.Notes = append(res.Notes, runlife.StoredNote(id))
			f.junit.runID = id
			f.storedAs = runlife.StoredReport(st.db, env.Getenv, id)
		}
		f.junit.stopped, f.junit.config = runErr, meta.Config
		if err := f.emit(env, res); err != nil {
			return err
		}
		return runErr
	}
	return cmd
}

// simRunner builds the simulator runner from the workload flags: the same
// lengths and (for rate steps) the same arrival seed at every step.
func (f *sweepFlags) simRunner(ecfg simengine.Config) (*sweep.SimRunner, error) {
	warmupDur, warmupN, _ := f.wl.WarmupValue()
	if f.wl.TracePath != "" {
		tr, err := f.wl.openTrace()
		if err != nil {
			return nil, err
		}
		// Each rate step replays the trace at the speed-up giving that
		// mean rate; the stream is the step's lengths too.
		return &sweep.SimRunner{
			Engine: ecfg, Requests: f.wl.Requests, Duration: f.wl.Duration,
			Warmup: warmupDur, WarmupRequests: warmupN,
			Arrivals: func(rate float64) (sim.Arrivals, error) {
				s, err := tr.AtRate(rate).Stream(false)
				if err != nil {
					return nil, Usagef("--trace: %v", err)
				}
				return s, nil
			},
		}, nil
	}
	gen, err := f.wl.generator()
	if err != nil {
		return nil, err
	}
	if err := f.wl.saveScenario(); err != nil {
		return nil, err
	}
	ecfg.Seed = int64(f.wl.ResolvedSeed())
	runner := &sweep.SimRunner{
		Engine: ecfg, Gen: gen, Classes: f.mix.Classes(), Requests: f.wl.Requests, Duration: f.wl.Duration,
		Warmup: warmupDur, WarmupRequests: warmupN,
	}
	var mix *loadsetup.SimMix
	if f.mix.File != nil {
		if mix, err = f.mix.SimClasses(&runner.Engine, f.lora.LoRA, gen, f.wl.ResolvedSeed()); err != nil {
			return nil, err
		}
		runner.Gen, runner.Class = mix.Gen, mix.Class
		// The own-concurrency classes' users run beside every step's.
		runner.Pools, runner.Pool = mix.Pools()
	}
	runner.Arrivals = func(rate float64) (sim.Arrivals, error) {
		a, err := f.wl.ArrivalsAt(rate) // the same schedule at every step's rate
		if err != nil || mix == nil {
			return a, err
		}
		// The own-rate classes' arrivals, merged with the step's.
		return mix.Arrivals(a)
	}
	return runner, nil
}

// stepBound describes how long each step runs.
func stepBound(w *workloadFlags) string {
	switch {
	case w.Requests > 0 && w.Duration > 0:
		return fmt.Sprintf("%d requests or %v", w.Requests, w.Duration)
	case w.Requests > 0:
		return fmt.Sprintf("%d requests", w.Requests)
	}
	return w.Duration.String()
}

// workloadNote describes every step's workload: the mix's classes, or the
// lengths or trace.
func (f *sweepFlags) workloadNote() string {
	if f.mix.File != nil {
		return f.mix.Note(f.wl.ResolvedSeed())
	}
	return f.wl.describe()
}
