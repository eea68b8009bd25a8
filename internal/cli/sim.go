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
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
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
	fs.BoolVar(&f.list, "list", false, "list the GPU and model presets (with any --preset-file, --gpu-file, --model-file) and exit")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		f.engine.noteSet(fs)
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %q (flags only; see knee sim -h)", fs.Arg(0))
		}
		cat, err := f.engine.catalog()
		if err != nil {
			return err
		}
		if f.list {
			return sim.ListPresets(env.Stdout, cat)
		}
		if err := f.wl.validate(); err != nil {
			return err
		}
		if err := f.junit.check(); err != nil {
			return err
		}
		if err := f.fleet.Validate(); err != nil {
			return err
		}
		objectives, err := slo.ParseAll(f.slos)
		if err != nil {
			return Usagef("--slo: %v", err)
		}
		if err := f.mix.load(fs, &f.wl); err != nil {
			return err
		}
		if f.mix.mix != nil && f.sess.sessions > 0 {
			return Usagef("--mix is not supported with --sessions yet")
		}
		if f.probe.rateRPS > 0 && f.sess.sessions > 0 {
			return Usagef("--probe-rate is not supported with --sessions in knee sim yet")
		}
		if err := f.mix.checkOwnLoads(fs); err != nil {
			return err
		}
		if err := f.probe.validate(); err != nil {
			return err
		}
		ecfg, err := f.engine.config(cat)
		if err != nil {
			return err
		}
		var adapterOf []int32
		if f.mix.mix != nil {
			if adapterOf, err = f.lora.apply(&ecfg, &f.mix); err != nil {
				return err
			}
		}
		if err := f.fleet.LoadFile(cat, ecfg); err != nil {
			return err
		}
		eng, err := simengine.NewEngine(ecfg) // validate up front: clear usage errors
		if err != nil {
			return Usagef("%v", err)
		}
		// A workload whose average request does not fit is a usage error up
		// front; a rare longer request becomes an HTTP 400 record, as a real
		// server answers it.
		f.wl.simMaxContext = eng.Config().MaxModelLen
		if f.wl.dataset == "" && f.wl.trace.path == "" && f.mix.mix == nil {
			in, ierr := workload.ParseDist(f.wl.input)
			out, oerr := workload.ParseDist(f.wl.output)
			if c := eng.Config(); ierr == nil && oerr == nil && in.Mean()+out.Mean() > float64(c.MaxModelLen) {
				return Usagef("--input-tokens %s + --output-tokens %s average %.0f + %.0f = %.0f tokens per request, over the max model len %d of %s (lower them, or raise --max-model-len)",
					f.wl.input, f.wl.output, in.Mean(), out.Mean(), in.Mean()+out.Mean(), c.MaxModelLen, c.Model.Name)
			}
			if limit := eng.PromptLimit(); ierr == nil && limit > 0 && in.Mean() > float64(limit) {
				return Usagef("--input-tokens %s averages %.0f prompt tokens, over the %d a step holds on an engine without chunked prefill, which refuses longer prompts (TensorRT-LLM's max_num_tokens; lower it, or raise --max-num-batched-tokens)",
					f.wl.input, in.Mean(), limit)
			}
		}
		f.wl.trace.ctx = ctx // Ctrl-C stops reading a huge trace
		wp, err := f.wl.plan()
		if err != nil {
			return err
		}
		var gen sim.Lengths = wp.gen
		arrivals, warmupDur, warmupN := wp.arrivals, wp.warmup, wp.warmupRequests
		workloadDesc := fmt.Sprintf("input %s, output %s tokens", f.wl.input, f.wl.output)
		var stream *workload.TraceStream
		if wp.trace != nil {
			if stream, err = wp.trace.Stream(false); err != nil {
				return Usagef("--trace: %v", err)
			}
			defer stream.Close()
			gen, arrivals = stream, stream
			workloadDesc = wp.trace.Info().String()
		}
		ecfg.Seed = int64(f.wl.resolvedSeed()) // the front-end jitter repeats with the workload
		var mixGen *workload.MixGenerator
		if f.mix.mix != nil {
			seed := f.mix.seed(fs, &f.wl)
			if mixGen, err = workload.NewMixGenerator(f.mix.mix, wp.gen.Spec(), seed); err != nil {
				return Usagef("--mix %v", err)
			}
			gen = mixGen
			workloadDesc = f.mix.note(seed)
			if f.mix.mix.OwnRates() {
				// The own-rate classes' arrivals, merged with --rate's.
				if arrivals, err = f.mix.schedule(mixGen, arrivals, seed); err != nil {
					return err
				}
			}
		}
		turns, think, err := f.sess.parse(fs)
		if err != nil {
			return err
		}
		// A run's size is bounded (sim.MaxRequests): what can be known
		// before it starts is refused before it starts.
		if err := sim.CheckSize(f.wl.requests, f.wl.duration, f.mix.offeredRate(f.wl.rate)); err != nil {
			return Usagef("%v", err)
		}
		cfg := sim.Config{
			Engine: ecfg, Gen: gen, Requests: f.wl.requests, Duration: f.wl.duration,
			Warmup: warmupDur, WarmupRequests: warmupN, Ramp: f.wl.ramp,
			// Token times feed the inter-token statistics and records.jsonl;
			// they live only until each record is added and written.
			StreamTokenTimes: true,
			TooLongAsErrors:  true,
		}
		if mixGen != nil {
			cfg.Class = func(i int64) (string, int32) {
				k := mixGen.ClassOf(i)
				return f.mix.mix.Classes[k].Name, adapterOf[k]
			}
		}
		switch {
		case f.sess.sessions > 0:
			cfg.Sessions = f.sess.sessions
			cfg.Turn = f.sess.simTurnSource(gen, turns, think, f.wl.resolvedSeed())
			if !flagGiven(fs, "requests") {
				cfg.Requests = math.MaxInt64 // the conversations end by themselves
			}
		case arrivals != nil:
			cfg.Arrivals = arrivals
			cfg.MaxConcurrency = f.wl.maxConcurrency
		default:
			cfg.Concurrency = f.wl.concurrency
			f.mix.simPools(&cfg, mixGen)
		}
		if cfg.Probes, err = f.probe.sim(wp.gen, f.wl.resolvedSeed()); err != nil {
			return err
		}
		if cfg.Client, err = f.client.client(cfg.Concurrency > 0 || len(cfg.Pools) > 0 || cfg.Sessions > 0, f.wl.duration); err != nil {
			return err
		}
		if cfg.ServerLoop, err = f.client.serverLoop(); err != nil {
			return err
		}

		var (
			file   *os.File
			writer *record.Writer
			werr   error
		)
		if f.out != "" {
			if err := os.MkdirAll(f.out, 0o755); err != nil {
				return Usagef("--out %s: %v", f.out, err)
			}
			file, err = os.Create(filepath.Join(f.out, "records.jsonl"))
			if err != nil {
				return Usagef("--out %s: %v", f.out, err)
			}
			defer file.Close()
			writer = record.NewWriter(file)
		}
		opts := stats.Options{OfferedRateRPS: f.mix.offeredRate(f.wl.rate), Series: true}
		if wp.trace != nil {
			opts.OfferedRateRPS = wp.trace.Info().MeanRateRPS
		}
		if len(objectives) > 0 {
			opts.Good = objectives.Good
		}
		acc := stats.NewAccumulator(opts)
		classes := newClassAccumulators(f.probe.classes(f.mix.names()), opts, objectives, f.mix.slos)
		target := sim.Target(ecfg, f.engine.ServerProfile.Like())
		if f.fleet.Active() {
			target = f.fleet.Target(ecfg)
		}
		meta := runMeta{kind: "sim", target: target, model: ecfg.Model.Name, label: f.label,
			load: f.mix.loadLine(f.wl.loadString(), &f.wl), config: f.mix.config(f.configKV(eng))}
		stored, err := f.storeFlags.begin(env, meta)
		if err != nil {
			return err
		}
		// Per-request records of very long simulations stay out of the database
		// (--out streams them to a file instead); the summary is always stored.
		storeRecords := f.wl.requests > 0 && f.wl.requests <= maxStoredSimRecords
		if writer == nil && !storeRecords && cfg.Client.ChunkCost == 0 && cfg.ServerLoop.ChunkCost == 0 && classes == nil {
			// No record leaves the run: inter-token statistics come from the
			// engine a step at a time (every decoding request of a step gets
			// the same gap) instead of one token time per token. A client
			// with a chunk cost sees other gaps than the engine's.
			cfg.StreamTokenTimes, cfg.OnGaps = false, acc.AddGaps
		}
		start := time.Now()
		var done int64
		var lastSend time.Duration
		lastProgress := start
		var (
			res    sim.Result
			fres   sim.FleetResult
			runErr error
			ttfts  = enginesetup.ReplicaTTFTs{}
		)
		var turnRecs []record.Request // sessions: what their report needs of each turn
		onRecord := func(r *record.Request) {
			if r.Class != record.ProbeClass { // the probes are a class apart, not the load's
				acc.Add(r)
			}
			classes.add(r)
			if r.Session != "" {
				turnRecs = append(turnRecs, record.Request{Session: r.Session, Turn: r.Turn, Sent: r.Sent, FirstToken: r.FirstToken,
					Done: r.Done, StreamEnd: r.StreamEnd, Error: r.Error, Warmup: r.Warmup})
			}
			if f.fleet.Active() {
				ttfts.Add(r)
			}
			lastSend = max(lastSend, r.Sent)
			// Long simulations say they are alive every few seconds.
			if done++; !f.quiet && done&0x3fff == 0 && time.Since(lastProgress) > 3*time.Second {
				lastProgress = time.Now()
				fmt.Fprintf(env.Stderr, "knee sim: %d requests finished, %.0f s of virtual time\n", done, r.Done.Seconds())
			}
			if writer != nil && werr == nil {
				werr = writer.Write(r)
			}
			if storeRecords {
				c := r.Clone() // the simulator reuses r
				stored.add(&c)
			}
		}
		if f.fleet.Active() {
			fres, runErr = sim.RunFleet(ctx, f.fleet.Config(cfg), onRecord)
			res = fres.Result
		} else {
			res, runErr = sim.Run(ctx, cfg, onRecord)
		}
		elapsed := time.Since(start)
		if writer != nil {
			if err := writer.Flush(); werr == nil {
				werr = err
			}
		}
		if werr != nil {
			stored.finish(nil, "failed")
			return fmt.Errorf("writing %s: %w", filepath.Join(f.out, "records.jsonl"), werr)
		}
		if runErr != nil && errors.Is(runErr, simengine.ErrTooLong) {
			stored.finish(nil, "failed")
			return tooLongUsage(runErr)
		}
		interrupted := runErr != nil && ctx.Err() != nil
		if runErr != nil && !interrupted {
			stored.finish(nil, "failed")
			return runErr
		}

		sum := acc.Summary()
		rep := &report.Run{
			Kind: "sim", Version: Version, Target: target, Model: ecfg.Model.Name,
			Load: meta.load, Workload: workloadDesc,
			Config: meta.config,
			Start:  start, Summary: sum, SLOs: objectives.Evaluate(sum),
			Notes: sim.Notes(eng, res, elapsed), Engine: report.SimEngineFigures(eng, res),
			Classes: classes.summaries(),
		}
		if c := ecfg.LoRA; c.MaxLoRAs > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("LoRA: %d adapter slots of rank %d (a batch holds at most %d distinct adapters; a miss loads one before its step)",
				c.MaxLoRAs, c.MaxLoRARank, c.MaxLoRAs))
		}
		rep.Predictions = heldOutRanges(&sum, f.engine.fittedHost())
		if f.fleet.Active() {
			rep.Notes = append(rep.Notes, f.fleet.Notes(fres, ttfts)...)
		}
		for _, n := range []string{f.mix.splitOf(rep.Classes), f.client.note(), f.probe.note()} {
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
		if !interrupted {
			stoppedBy := "duration"
			if cfg.Requests > 0 && res.Issued >= cfg.Requests {
				stoppedBy = "requests"
			}
			rep.Notes = append(rep.Notes, f.wl.limitNote(stoppedBy, res.Issued, lastSend))
		}
		rep.Notes = append(rep.Notes, sessionNotes(turnRecs)...)
		if stream != nil && stream.Err() != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("warning: the trace could not be read to its end (%v): the replay stopped there", stream.Err()))
		}
		if note := f.wl.reuseNote(wp.gen, res.Issued); note != "" {
			rep.Notes = append(rep.Notes, note)
		}
		if res.Failed > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%d requests were longer than the max model len %d and refused (HTTP 400 records)", res.Failed, eng.Config().MaxModelLen))
		}
		if !storeRecords && stored != nil {
			if f.wl.requests == 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("this run's summary is stored, not its %d per-request records: the database keeps a simulation's records only when --requests sizes it (at most %d); use --out DIR for records.jsonl, or --requests N", res.Issued, maxStoredSimRecords))
			} else {
				rep.Notes = append(rep.Notes, fmt.Sprintf("this run's summary is stored, not its %d per-request records: the database keeps a simulation's records for runs of at most %d requests; use --out DIR for records.jsonl", res.Issued, maxStoredSimRecords))
			}
		}
		status := "complete"
		if interrupted {
			status = "interrupted"
			rep.Status = "interrupted"
			rep.Notes = append(rep.Notes, "interrupted: the report covers the requests finished before the stop")
		}
		rep.ID = stored.id()
		if err := stored.finish(rep, status); err != nil {
			fmt.Fprintf(env.Stderr, "knee sim: saving the run: %v\n", err)
		}
		if f.out != "" {
			if err := writeOutDir(f.out, rep, nil); err != nil {
				return err
			}
		}
		if err := f.writeReport(env.Stdout, rep); err != nil {
			return err
		}
		if err := f.junit.write("knee sim", runSuite(rep, "", interrupted)); err != nil {
			return err
		}
		if failed := append(failedSLOs(rep.SLOs), failedClasses(rep.Classes)...); len(failed) > 0 {
			return &SLOError{Failed: failed}
		}
		return nil
	}
	return cmd
}

// configKV is the run's resolved settings for reports and the store.
func (f *simFlags) configKV(eng *simengine.Engine) [][2]string {
	return append(append(append(append(f.wl.config(), f.engine.configKV(eng.Config())...), f.client.configKV()...), f.fleet.ConfigKV()...), f.mix.configKV()...)
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
