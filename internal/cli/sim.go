package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/knee-dev/knee/internal/enginesetup"
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// simFlags are knee sim's flags beside the shared workload flags.
type simFlags struct {
	wl     workloadFlags
	sess   sessionFlags
	engine simEngineFlags
	client simClientFlags
	fleet  fleetFlags
	runOutputFlags
	list  bool
	mix   mixFlags
	lora  loraFlags
	probe probeFlags
	price gpuPriceFlag
}

func newSimCmd(ctx context.Context, env *Env) *cobra.Command {
	var f simFlags
	cmd := newCommand(env, "sim")
	fs := cmd.Flags()
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee sim [flags]   (knee sim --list shows the GPU and model presets)")
		fmt.Fprintln(w, "\nSimulates a vLLM-like serving engine (SGLang- or TensorRT-LLM-like with --server-profile sglang or tensorrt-llm) in virtual time and reports what knee bench would measure.")
		fmt.Fprintln(w, "With --client-chunk-cost, --client-gap or --client-start it reports what a slower client (another tool's) would measure.")
		fmt.Fprintln(w)
	})
	f.wl.register(fs, 32, 1000)
	f.sess.register(fs)
	f.engine.register(fs)
	f.client.register(fs)
	f.fleet.register(fs)
	f.mix.register(fs)
	f.lora.register(fs)
	f.probe.register(fs)
	f.runOutputFlags.register(fs, "records.jsonl (streamed), summary.json and report.md", "progress lines on stderr")
	f.price.register(fs)
	fs.BoolVar(&f.list, "list", false, "list the GPU and model presets (with any --preset-file, --gpu-file, --model-file) and exit")
	cmd.RunE = func(*cobra.Command, []string) error { return runSim(ctx, env, fs, &f) }
	return cmd
}

// runSim is knee sim once its flags are parsed, in the steps below: check
// the flags, set up the engine, plan the workload and configure the
// simulation, open where records go, simulate, summarize, then store and
// report (the exit code says how it went).
func runSim(ctx context.Context, env *Env, fs *pflag.FlagSet, f *simFlags) error {
	r := &simRun{ctx: ctx, env: env, fs: fs, f: f}
	defer r.close()
	if err := r.check(); err != nil {
		return err
	}
	if listed, err := r.engine(); err != nil || listed {
		return err
	}
	if err := r.configure(); err != nil {
		return err
	}
	if err := r.openSinks(); err != nil {
		return err
	}
	if err := r.simulate(); err != nil {
		return err
	}
	return r.finish(r.summarize())
}

// simRun is one knee sim run's state, filled in step by step.
type simRun struct {
	ctx context.Context
	env *Env
	fs  *pflag.FlagSet
	f   *simFlags

	// check, engine
	objectives slo.Set
	ecfg       simengine.Config
	eng        *simengine.Engine
	adapterOf  []int32
	// configure
	wp           loadsetup.Plan
	workloadDesc string
	stream       *workload.TraceStream
	cfg          sim.Config
	// openSinks
	file         *os.File
	writer       *record.Writer
	acc          *stats.Accumulator
	classes      *runlife.ClassAccumulators
	meta         runMeta
	stored       *storedRun
	storeRecords bool
	// simulate
	start       time.Time
	elapsed     time.Duration
	done        int64
	lastSend    time.Duration
	res         sim.Result
	fres        sim.FleetResult
	ttfts       enginesetup.ReplicaTTFTs
	sessions    stats.SessionTally // sessions: what their report needs of each turn
	kept        runlife.Keeper     // the stored records, while they fit in keptRecordsBytes
	interrupted bool
	closers     []func()
}

func (r *simRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// check refuses bad flags (exit 2) before anything is set up.
func (r *simRun) check() error {
	f, fs := r.f, r.fs
	f.engine.noteSet(fs)
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (flags only; see knee sim -h)", fs.Arg(0))
	}
	return f.price.check()
}

// engine resolves the simulated engine (listed reports --list, which
// ends the command there) and checks the workload fits it.
func (r *simRun) engine() (listed bool, err error) {
	f, fs := r.f, r.fs
	cat, err := f.engine.catalog()
	if err != nil {
		return false, err
	}
	if f.list {
		return true, sim.ListPresets(r.env.Stdout, cat)
	}
	if err := f.wl.validate(); err != nil {
		return false, err
	}
	if err := f.junit.check(); err != nil {
		return false, err
	}
	if err := f.fleet.Validate(); err != nil {
		return false, err
	}
	if r.objectives, err = slo.ParseAll(f.slos); err != nil {
		return false, Usagef("--slo: %v", err)
	}
	if err := f.mix.load(fs, &f.wl); err != nil {
		return false, err
	}
	if f.mix.File != nil && f.sess.Count > 0 {
		return false, Usagef("--mix is not supported with --sessions yet")
	}
	if f.probe.RateRPS > 0 && f.sess.Count > 0 {
		return false, Usagef("--probe-rate is not supported with --sessions in knee sim yet")
	}
	if err := f.mix.CheckOwnLoads(given(fs)); err != nil {
		return false, err
	}
	if err := f.probe.Validate(); err != nil {
		return false, err
	}
	if r.ecfg, err = f.engine.config(cat); err != nil {
		return false, err
	}
	if f.mix.File != nil {
		if r.adapterOf, err = f.lora.Apply(&r.ecfg, &f.mix.Mix); err != nil {
			return false, err
		}
	}
	if err := f.fleet.LoadFile(cat, r.ecfg); err != nil {
		return false, err
	}
	eng, err := simengine.NewEngine(r.ecfg) // validate up front: clear usage errors
	if err != nil {
		return false, Usagef("%v", err)
	}
	r.eng = eng
	// A workload whose average request does not fit is a usage error up
	// front; a rare longer request becomes an HTTP 400 record, as a real
	// server answers it.
	f.wl.SimMaxContext = eng.Config().MaxModelLen
	if f.mix.File == nil {
		if err := f.wl.CheckFits(eng.Config().MaxModelLen, eng.Config().Model.Name, eng.PromptLimit()); err != nil {
			return false, err
		}
	}
	return false, nil
}

// configure plans the workload (a trace's stream, a traffic mix's
// classes, conversations) and builds the simulation's configuration.
func (r *simRun) configure() error {
	f, fs := r.f, r.fs
	f.wl.traceCtx = r.ctx // Ctrl-C stops reading a huge trace
	wp, err := f.wl.plan()
	if err != nil {
		return err
	}
	r.wp = wp
	var gen sim.Lengths = wp.Gen
	arrivals := wp.Arrivals
	r.workloadDesc = fmt.Sprintf("input %s, output %s tokens", f.wl.Input, f.wl.Output)
	if wp.Trace != nil {
		if r.stream, err = wp.Trace.Stream(false); err != nil {
			return Usagef("--trace: %v", err)
		}
		r.closers = append(r.closers, func() { r.stream.Close() })
		gen, arrivals = r.stream, r.stream
		r.workloadDesc = wp.Trace.Info().String()
	}
	r.ecfg.Seed = int64(f.wl.ResolvedSeed()) // the front-end jitter repeats with the workload
	var mix *loadsetup.SimMix
	if f.mix.File != nil {
		seed := f.wl.ResolvedSeed()
		if mix, err = f.mix.ForSim(wp.Gen.Spec(), r.adapterOf, seed); err != nil {
			return err
		}
		gen = mix.Gen
		r.workloadDesc = f.mix.Note(seed)
		// The own-rate classes' arrivals, merged with --rate's.
		if arrivals, err = mix.Arrivals(arrivals); err != nil {
			return err
		}
	}
	turns, think, err := f.sess.parse(fs)
	if err != nil {
		return err
	}
	// A run's size is bounded (sim.MaxRequests): what can be known before
	// it starts is refused before it starts.
	if err := sim.CheckSize(f.wl.Requests, f.wl.Duration, f.mix.OfferedRate(f.wl.Rate)); err != nil {
		return Usagef("%v", err)
	}
	// Token times feed the inter-token statistics and records.jsonl;
	// they live only until each record is added and written.
	r.cfg = wp.SimConfig(r.ecfg, gen, arrivals)
	cfg := &r.cfg
	if mix != nil {
		cfg.Class = mix.Class
	}
	switch {
	case f.sess.Count > 0:
		// The conversations are the load: no other loop beside them.
		cfg.Concurrency, cfg.Arrivals, cfg.MaxConcurrency = 0, nil, 0
		cfg.Sessions = f.sess.Count
		cfg.Turn = loadsetup.SimTurnSource(gen, turns, think, f.wl.ResolvedSeed())
		if !flagGiven(fs, "requests") {
			cfg.Requests = math.MaxInt64 // the conversations end by themselves
		}
	case arrivals == nil:
		mix.SimPools(cfg)
	}
	if cfg.Probes, err = f.probe.Sim(wp.Gen, f.wl.ResolvedSeed()); err != nil {
		return err
	}
	if cfg.Client, err = f.client.client(cfg.Concurrency > 0 || len(cfg.Pools) > 0 || cfg.Sessions > 0, f.wl.Duration); err != nil {
		return err
	}
	if cfg.ServerLoop, err = f.client.serverLoop(); err != nil {
		return err
	}
	return nil
}

// openSinks opens where each record goes: --out/records.jsonl, the run
// database (records of runs small enough), the statistics.
func (r *simRun) openSinks() error {
	f, wp := r.f, r.wp
	if f.out != "" {
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return Usagef("--out %s: %v", f.out, err)
		}
		file, err := os.Create(filepath.Join(f.out, "records.jsonl"))
		if err != nil {
			return Usagef("--out %s: %v", f.out, err)
		}
		r.file, r.writer = file, record.NewWriter(file)
		r.closers = append(r.closers, func() { file.Close() })
	}
	opts := stats.Options{OfferedRateRPS: f.mix.OfferedRate(f.wl.Rate), Series: true}
	if wp.Trace != nil {
		opts.OfferedRateRPS = wp.Trace.Info().MeanRateRPS
	}
	if len(r.objectives) > 0 {
		opts.Good = r.objectives.Good
	}
	r.acc = stats.NewAccumulator(opts)
	r.classes = runlife.NewClassAccumulators(f.probe.Classes(f.mix.Names()), opts, r.objectives, f.mix.SLOs)
	target := sim.Target(r.ecfg, f.engine.ServerProfile.Like())
	if f.fleet.Active() {
		target = f.fleet.Target(r.ecfg)
	}
	r.meta = runMeta{Kind: "sim", Target: target, Model: r.ecfg.Model.Name, Label: f.label,
		Load: f.mix.LoadLine(f.wl.loadString(), &f.wl.Choice, f.wl.openedTrace), Config: f.mix.Config(f.configKV(r.eng))}
	if r.workloadDesc != "" {
		// Kept with the run, so knee report shows the workload line too.
		r.meta.Config = append(r.meta.Config, [2]string{"workload", r.workloadDesc})
	}
	stored, err := f.storeFlags.begin(r.env, r.meta)
	if err != nil {
		return err
	}
	if stored != nil {
		stored.KeepsReport = true // the live report is what knee report renders from the stored run
	}
	r.stored = stored
	// Per-request records of very long simulations stay out of the database
	// (--out streams them to a file instead); the summary is always stored.
	r.storeRecords = f.wl.Requests > 0 && f.wl.Requests <= maxStoredSimRecords
	r.kept = runlife.Keeper{Budget: keptRecordsBytes}
	if cfg := &r.cfg; r.writer == nil && !r.storeRecords && cfg.Client.ChunkCost == 0 && cfg.ServerLoop.ChunkCost == 0 && r.classes == nil {
		// No record leaves the run: inter-token statistics come from the
		// engine a step at a time (every decoding request of a step gets
		// the same gap) instead of one token time per token. A client
		// with a chunk cost sees other gaps than the engine's.
		cfg.StreamTokenTimes, cfg.OnGaps = false, r.acc.AddGaps
	}
	return nil
}

// configKV is the run's resolved settings for reports and the store.
func (f *simFlags) configKV(eng *simengine.Engine) [][2]string {
	return append(append(append(append(f.wl.config(), f.engine.configKV(eng.Config())...), f.client.configKV()...), f.fleet.ConfigKV()...), f.mix.ConfigKV()...)
}

// maxStoredSimRecords bounds the records a simulation puts in the database.
const maxStoredSimRecords = 50000

// tooLongUsage is a simulation stopped by a request the engine refused
// as too long, as a usage error saying which flag to change (sim sweep
// uses it too).
func tooLongUsage(err error) error {
	if errors.Is(err, simengine.ErrPromptOverBudget) {
		return Usagef("%v (lower --input-tokens, or raise --max-num-batched-tokens)", err)
	}
	return Usagef("%v (the model's context limit; lower --input-tokens/--output-tokens or raise --max-model-len)", err)
}

// simulate runs the simulation to its end (or Ctrl-C), each record to
// the statistics, --out and the database as it finishes.
func (r *simRun) simulate() error {
	f, env, stored := r.f, r.env, r.stored
	r.start = time.Now()
	lastProgress := r.start
	r.ttfts = enginesetup.ReplicaTTFTs{}
	var werr error
	onRecord := func(rec *record.Request) {
		if rec.Class != record.ProbeClass { // the probes are a class apart, not the load's
			r.acc.Add(rec)
		}
		r.classes.Add(rec)
		r.sessions.Add(rec)
		if f.fleet.Active() {
			r.ttfts.Add(rec)
		}
		r.lastSend = max(r.lastSend, rec.Sent)
		// Long simulations say they are alive every few seconds.
		if r.done++; !f.quiet && r.done&0x3fff == 0 && time.Since(lastProgress) > 3*time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(env.Stderr, "knee sim: %d requests finished, %.0f s of virtual time\n", r.done, rec.Done.Seconds())
		}
		if r.writer != nil && werr == nil {
			werr = r.writer.Write(rec)
		}
		if r.storeRecords {
			c := rec.Clone() // the simulator reuses rec
			stored.Add(&c)
			// Where the records go if the store fails, and what --out's
			// report draws its curves from, as knee report does (while
			// they fit in their budget: 50,000 long records would not).
			r.kept.Add(&c)
		}
	}
	var runErr error
	if f.fleet.Active() {
		r.fres, runErr = sim.RunFleet(r.ctx, f.fleet.Config(r.cfg), onRecord)
		r.res = r.fres.Result
	} else {
		r.res, runErr = sim.Run(r.ctx, r.cfg, onRecord)
	}
	r.elapsed = time.Since(r.start)
	if r.writer != nil {
		if err := r.writer.Flush(); werr == nil {
			werr = err
		}
	}
	if werr != nil {
		stored.Finish(nil, "failed")
		return fmt.Errorf("writing %s: %w", filepath.Join(f.out, "records.jsonl"), werr)
	}
	if runErr != nil && errors.Is(runErr, simengine.ErrTooLong) {
		stored.Finish(nil, "failed")
		return tooLongUsage(runErr)
	}
	r.interrupted = runErr != nil && r.ctx.Err() != nil
	if runErr != nil && !r.interrupted {
		stored.Finish(nil, "failed")
		return runErr
	}
	return nil
}

// summarize turns the statistics into the run's report: the engine's
// figures, the SLO verdicts, the held-out ranges and notes on anything
// that bounds what the figures mean.
func (r *simRun) summarize() *report.Run {
	f, env, eng, res := r.f, r.env, r.eng, r.res
	sum := r.acc.Summary()
	rep := &report.Run{
		Kind: "sim", Version: Version, Target: r.meta.Target, Model: r.ecfg.Model.Name,
		Load: r.meta.Load, Workload: r.workloadDesc, Status: "complete",
		// What the database keeps (the notes, engine figures and ranges
		// too: storedRun.finish), so knee report renders the same report.
		Config: r.meta.StoredConfig(),
		Start:  r.start, Summary: sum, SLOs: r.objectives.Evaluate(sum),
		Notes: sim.Notes(eng, res, r.elapsed), Engine: report.SimEngineFigures(eng, res),
		Classes: r.classes.Summaries(),
		Energy:  simEnergy(res.Engine.GPUs, res.End.Seconds(), res.Engine.EnergyJ, res.Tokens, res.Completed, f.price),
	}
	if c := r.ecfg.LoRA; c.MaxLoRAs > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("LoRA: %d adapter slots of rank %d (a batch holds at most %d distinct adapters; a miss loads one before its step)",
			c.MaxLoRAs, c.MaxLoRARank, c.MaxLoRAs))
	}
	rep.Predictions = heldOutRanges(&sum, f.engine.fittedHost(), r.ecfg.GPU.Name, r.ecfg.Model.Name, max(f.fleet.Replicas, 1))
	energyRanges(rep.Energy, &sum, f.engine.fittedHost(), r.ecfg.GPU, r.ecfg.Model.Name, max(f.fleet.Replicas, 1))
	if f.fleet.Active() {
		rep.Notes = append(rep.Notes, f.fleet.Notes(r.fres, r.ttfts)...)
	}
	for _, n := range []string{f.mix.SplitOf(rep.Classes), f.client.note(), f.probe.Note()} {
		if n != "" {
			rep.Notes = append(rep.Notes, n)
		}
	}
	if c := eng.Config(); c.MaxModelLen < c.Model.MaxContext && f.engine.MaxModelLen == 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("max model len lowered from %s's %d to %d tokens, what the KV cache holds (vLLM would refuse to start; set --max-model-len)",
			c.Model.Name, c.Model.MaxContext, c.MaxModelLen))
	}
	if w := overloadWarning(sum); w != "" {
		rep.Notes = append(rep.Notes, w)
		if !f.quiet {
			fmt.Fprintln(env.Stderr, "knee sim: "+w)
		}
	}
	if !r.interrupted {
		stoppedBy := "duration"
		if r.cfg.Requests > 0 && res.Issued >= r.cfg.Requests {
			stoppedBy = "requests"
		}
		rep.Notes = append(rep.Notes, f.wl.LimitNote(stoppedBy, res.Issued, r.lastSend))
	}
	rep.Notes = append(rep.Notes, r.sessions.Notes()...)
	if r.stream != nil && r.stream.Err() != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("warning: the trace could not be read to its end (%v): the replay stopped there", r.stream.Err()))
	}
	if note := f.wl.ReuseNote(r.wp.Gen, res.Issued); note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	if res.Failed > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d requests were longer than the max model len %d and refused (HTTP 400 records)", res.Failed, eng.Config().MaxModelLen))
	}
	if !r.storeRecords && r.stored != nil {
		if f.wl.Requests == 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("this run's summary is stored, not its %d per-request records: the database keeps a simulation's records only when --requests sizes it (at most %d); use --out DIR for records.jsonl, or --requests N", res.Issued, maxStoredSimRecords))
		} else {
			rep.Notes = append(rep.Notes, fmt.Sprintf("this run's summary is stored, not its %d per-request records: the database keeps a simulation's records for runs of at most %d requests; use --out DIR for records.jsonl", res.Issued, maxStoredSimRecords))
		}
	}
	if r.interrupted {
		rep.Status = "interrupted"
		rep.Notes = append(rep.Notes, "interrupted: the report covers the requests finished before the stop")
	}
	return rep
}

// finish stores the run, writes --out, prints the report and the JUnit
// verdicts, and says by its error how the run went: results not all saved
// (exit 1, naming where the records are), failed SLOs (3).
func (r *simRun) finish(rep *report.Run) error {
	f, env := r.f, r.env
	status := "complete"
	if r.interrupted {
		status = "interrupted"
	}
	rep.ID = r.stored.ID()
	saveErrs := runlife.SaveErrors{Store: r.stored.Finish(rep, status)}
	if f.out != "" {
		// In request order, as knee report reads them back.
		if err := writeOutDir(f.out, rep, r.kept.Sorted()); err != nil {
			return err
		}
	}
	if err := f.writeReport(env.Stdout, rep); err != nil {
		return err
	}
	if err := f.junit.write("knee sim", runSuite(rep, "", r.interrupted)); err != nil {
		return err
	}
	if saveErrs.Any() {
		return lostResults(env, f.out, r.stored, saveErrs, rep.ID, r.kept.Sorted(), r.done)
	}
	if failed := append(failedSLOs(rep.SLOs), failedClasses(rep.Classes)...); len(failed) > 0 {
		return &SLOError{Failed: failed}
	}
	return nil
}
