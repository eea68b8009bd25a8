package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/livemetrics"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runcheck"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// benchFlags are knee bench's own flags beside the shared workload flags.
type benchFlags struct {
	targetFlags
	runOutputFlags
	runtimeTrace string
	live         liveFlags
	otlp         otlpFlags
	shard        shardFlags
	metrics      metricsFlags
	gpu          gpuMetricsFlags
	embedded     embeddedFlags
	wl           workloadFlags
	sess         sessionFlags
	probe        probeFlags
	mix          mixFlags
	lora         loraFlags
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
func (s *stringList) Type() string       { return "expr" }

// sloUsage is the --slo help: every kind of objective, not only latency.
const sloUsage = "objective, repeatable: latency 'p95(ttft)<2s' (mean|p50|p90|p95|p99|p999|max of ttft|ttft_sched|itl|tpot|e2e|lag), " +
	"errors 'error_rate<1%' 'rejection_rate<1%', throughput 'goodput>5rps' 'request_throughput>5rps' 'output_throughput>500tok/s'"

func newBenchCmd(ctx context.Context, env *Env) *cobra.Command {
	var f benchFlags
	cmd := newCommand(env, "bench")
	fs := cmd.Flags()
	f.targetFlags.register(fs, "start the embedded simulated server", "after the run ends")
	f.runOutputFlags.register(fs, "records.jsonl, summary.json, report.md and report.html", "live progress")
	fs.StringVar(&f.runtimeTrace, "runtime-trace", "", "write a Go runtime trace of the run to this file (go tool trace FILE): each request's due time, send and writes are logged in it, to find where client lag comes from")
	f.live.register(fs)
	f.otlp.register(fs)
	f.shard.register(fs)
	f.metrics.register(fs)
	f.gpu.register(fs)
	f.embedded.register(fs)
	f.wl.register(fs, 32, 300)
	f.sess.register(fs)
	f.probe.register(fs)
	f.mix.register(fs)
	f.lora.register(fs)
	f.wl.registerTargetLoad(fs, "open loop (--rate): stop issuing as soon as the queue grows without bound (requests in flight and TTFT rising window after window), and say so")
	cmd.RunE = func(*cobra.Command, []string) error { return runBench(ctx, env, fs, &f) }
	return cmd
}

// runBench is knee bench once its flags are parsed, in the steps below:
// check the flags and plan the workload, start the target, configure the
// load, open where records go, build the request source, run the load,
// summarize it, then store and report it (the exit code says how it went).
func runBench(ctx context.Context, env *Env, fs *pflag.FlagSet, f *benchFlags) error {
	b := &benchRun{ctx: ctx, env: env, fs: fs, f: f}
	defer b.close()
	if err := b.check(); err != nil {
		return err
	}
	if err := b.startTarget(); err != nil {
		return err
	}
	if err := b.configure(); err != nil {
		return err
	}
	if err := b.openSinks(); err != nil {
		return err
	}
	if err := b.buildSource(); err != nil {
		b.sink.abort()
		return err
	}
	res, err := b.runLoad()
	if err != nil {
		return err
	}
	rep, status, failure := b.summarize(res)
	return b.finish(rep, status, failure, res)
}

// benchRun is one knee bench run's state, filled in step by step.
type benchRun struct {
	ctx context.Context
	env *Env
	fs  *pflag.FlagSet
	f   *benchFlags

	// check
	preset     string // what the embedded server simulates ("" with --url)
	apiKey     string
	grace      time.Duration
	turns      workload.Dist
	think      workload.Think
	ignoreEOS  loadsetup.EOS
	objectives slo.Set
	wp         loadsetup.Plan
	// startTarget
	target, model string
	notes         []string
	gen           interface{ Item(int64) workload.Item }
	arrivals      workload.Arrivals
	stream        *workload.TraceStream
	// configure, openSinks, buildSource, runLoad
	cfg         loadgen.Config
	meta        runMeta
	sink        *recordSink
	tally       *runlife.Tally // what the report takes from the records (set in runLoad, before the load starts)
	recent      recentWindow
	source      loadgen.Source
	meter       *runcheck.Meter
	scraper     *scrape.Scraper
	gpuScrapers []*scrape.Scraper // one per --gpu-metrics-url
	stopTrace   func()
	interrupted bool     // by Ctrl-C: the report covers what ran until then
	closers     []func() // run last first when runBench returns
}

func (b *benchRun) onClose(c func()) { b.closers = append(b.closers, c) }

func (b *benchRun) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// check refuses bad flags (exit 2) before anything starts, and plans the
// workload: its generator, arrivals and warm-up.
func (b *benchRun) check() error {
	f, fs := b.f, b.fs
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (flags only; see knee bench -h)", fs.Arg(0))
	}
	var err error
	if b.apiKey, err = apiKeyFrom(b.env, f.apiKeyEnv); err != nil {
		return err
	}
	if err := f.shard.Resolve(b.env.Getenv, flagGiven(fs, "seed"), f.noStore); err != nil {
		return err
	}
	f.storeFlags.sharding = &f.shard
	if f.wl.StopOversaturated && f.shard.Active() {
		return Usagef("--stop-oversaturated is not supported with --shards: each shard sees only its part of the queue, so the shards would stop at different times")
	}
	if err := f.embedded.refuseWithURL(f.url); err != nil {
		return err
	}
	if err := f.junit.check(); err != nil {
		return err
	}
	if b.grace, err = loadsetup.Grace(f.grace, f.requestTimeout); err != nil {
		return err
	}
	if err := f.wl.validate(); err != nil {
		return err
	}
	users := 0.0
	if f.wl.Rate == 0 && f.sess.Count == 0 {
		users = float64(f.wl.Concurrency)
	}
	if err := f.shard.RefuseUnsplittable(f.url, users, f.wl.Requests); err != nil {
		return err
	}
	if err := f.probe.Validate(); err != nil {
		return err
	}
	if err := f.mix.load(fs, &f.wl); err != nil {
		return err
	}
	if err := f.mix.CheckOwnLoads(given(fs)); err != nil {
		return err
	}
	if err := f.mix.embed(&f.embedded, &f.lora); err != nil {
		return err
	}
	f.metrics.noteSet(fs)
	if b.turns, b.think, err = f.sess.parse(fs); err != nil {
		return err
	}
	if f.sess.Count > 0 && !flagGiven(fs, "requests") {
		f.wl.Requests = 0 // the conversations' turns bound the run
	}
	if err := f.wl.checkOpenFiles(f.wl.Concurrency, f.url == ""); err != nil {
		return err
	}
	if err := f.gpu.Validate(); err != nil {
		return err
	}
	if err := f.metrics.Validate(); err != nil {
		return err
	}
	if err := loadsetup.CheckAPI(f.api); err != nil {
		return err
	}
	if err := checkBaseURL(f.url); err != nil {
		return err
	}
	if b.ignoreEOS, err = loadsetup.ParseEOS(f.ignoreEOS); err != nil {
		return err
	}
	if b.objectives, err = slo.ParseAll(f.slos); err != nil {
		return Usagef("--slo: %v", err)
	}
	if err := loadsetup.CheckAPIObjectives(f.api, b.objectives); err != nil {
		return err
	}
	if err := f.mix.CheckAPIs(f.api, b.objectives); err != nil {
		return err
	}
	if err := f.endpoints.Check(f.mix.APIs(f.api), f.wl.ResolvedSeed()); err != nil {
		return err
	}
	f.wl.traceCtx = b.ctx // Ctrl-C stops reading a huge trace
	if b.wp, err = f.wl.plan(); err != nil {
		return err
	}
	b.gen, b.arrivals = b.wp.Gen, b.wp.Arrivals
	if f.out != "" {
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return Usagef("--out %s: %v", f.out, err)
		}
	}
	return nil
}

// startTarget starts the embedded server without --url, else checks the
// server answers, and resolves the prompts in its tokens.
func (b *benchRun) startTarget() error {
	f, ctx := b.f, b.ctx
	b.target, b.model = f.url, f.model
	var err error
	if b.target == "" {
		srv, err := f.embedded.start(ctx, f.model)
		if err != nil {
			return err
		}
		b.onClose(srv.close)
		b.target, b.model, b.preset = srv.url, srv.model, srv.preset
		msg := fmt.Sprintf("no --url given: using knee's embedded simulated server at %s (%s)", b.target, srv.describe)
		fmt.Fprintln(b.env.Stderr, msg)
		b.notes = append(b.notes, msg)
	} else if b.model == "" {
		return Usagef("--model is required with --url (the model name the server serves)")
	} else if err := loadgen.CheckReachable(ctx, b.target); err != nil {
		msg := fmt.Sprintf("--url %s: %v; nothing was run", redactURL(b.target), err)
		unrun := &report.Run{Kind: "bench", Version: Version, Target: redactURL(b.target), Model: b.model}
		if werr := f.junit.write("knee bench", runSuite(unrun, msg, false)); werr != nil {
			return werr
		}
		return errors.New(msg)
	} else if b.wp.Trace != nil {
		b.notes = append(b.notes, f.wl.resolvePrompts(ctx, b.target, b.apiKey, b.model, f.api)...)
	} else {
		var pn []string
		if b.gen, pn, err = f.wl.promptsFor(ctx, b.target, b.apiKey, b.model, f.api); err != nil {
			return err
		}
		b.notes = append(b.notes, pn...)
	}
	b.notes = append(b.notes, f.wl.promptsNote())
	if g, ok := b.gen.(*workload.Generator); ok {
		if note := f.wl.ReuseNote(g, f.wl.Requests); note != "" {
			b.notes = append(b.notes, note)
		}
	}
	if b.wp.Trace != nil {
		// Prompts in the server's tokens (resolved above), built ahead.
		if b.stream, err = f.wl.traceForPrompts(b.wp.Trace).Stream(true); err != nil {
			return Usagef("--trace: %v", err)
		}
		b.onClose(func() { b.stream.Close() })
		b.gen, b.arrivals = b.stream, b.stream
	}
	return nil
}

// configure builds the load generator's configuration from the flags, the
// probes and what the server accepts (ignore_eos, min_tokens).
func (b *benchRun) configure() error {
	f, wp := b.f, b.wp
	wp.Arrivals = b.arrivals // a trace's stream, built for the server's prompts
	b.cfg = wp.LoadgenConfig(loadsetup.Target{BaseURL: b.target, Model: b.model, API: f.api, APIKey: b.apiKey,
		RequestTimeout: f.requestTimeout, Grace: b.grace})
	cfg := &b.cfg
	cfg.StopIfUnreachable = unreachableAfter
	if f.sess.Count > 0 {
		cfg.Sessions, cfg.Concurrency = f.sess.Count, 0
		cfg.Turn = loadsetup.TurnSource(b.gen, b.turns, b.think, f.wl.ResolvedSeed())
	}
	f.temperature.apply(cfg)
	b.notes = append(b.notes, f.endpoints.ProbeRerank(b.ctx, f.mix.APIs(f.api), b.target, b.apiKey, b.model)...)
	f.endpoints.Set(cfg)
	if err := f.probe.Apply(cfg, b.gen, f.wl.ResolvedSeed()); err != nil {
		return err
	}
	if n := f.probe.Note(); n != "" {
		b.notes = append(b.notes, n)
	}
	if wp.Trace != nil {
		b.notes = append(b.notes, wp.Trace.Info().String())
	}
	eosNotes, err := b.ignoreEOS.Apply(b.ctx, cfg, f.api, b.target, b.apiKey, b.model)
	if err != nil {
		return err
	}
	b.notes = append(b.notes, eosNotes...)
	return nil
}

// openSinks opens where each record goes as it finishes: the run database,
// --out, the live views and OTLP.
func (b *benchRun) openSinks() error {
	f, env := b.f, b.env
	b.meta = f.runMeta(b.target, b.model, b.preset)
	b.meta.Load, b.meta.Config = f.mix.LoadLine(b.meta.Load, &f.wl.Choice, f.wl.openedTrace), f.mix.Config(b.meta.Config)
	sink, err := newRecordSink(env, &f.storeFlags, f.out, b.meta)
	if err != nil {
		return err
	}
	if sink.store != nil {
		sink.store.KeepsReport = true // the live report is read back from what is stored
	}
	b.sink = sink
	b.recent = newRecentWindow()
	watch := &promptWatch{warn: func(med float64) {
		fmt.Fprintf(env.Stderr, "warning: the server is serving prompts a median %+.1f%% off the requested length (usage.prompt_tokens); %s\n", med, f.wl.promptsNote())
	}}
	b.cfg.OnRecord = func(r *record.Request) {
		b.tally.Add(r)
		b.recent.add(r)
		sink.add(r)
		watch.add(r)
		f.live.observe(r)
		f.otlp.observe(r)
	}
	if err := f.live.start(env, livemetrics.Info{Kind: "bench", Run: sink.runID(), Model: b.model, Target: b.meta.Target}); err != nil {
		sink.abort()
		return err
	}
	b.onClose(func() { f.live.close(b.ctx) })
	if err := f.otlp.start(env, "bench", sink.runID(), b.model, b.target, f.api); err != nil {
		sink.abort()
		return err
	}
	b.onClose(f.otlp.close)
	return nil
}

// buildSource builds what each request sends: the workload's items, or a
// traffic mix's classes; a shard keeps its part of the schedule.
func (b *benchRun) buildSource() error {
	f, gen := b.f, b.gen
	b.source = func(i int64) loadgen.Request {
		it := gen.Item(i)
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens, Session: it.Session}
	}
	var err error
	if f.mix.File != nil {
		seed := f.wl.ResolvedSeed()
		if b.source, err = f.mix.ApplyLoad(&b.cfg, gen, b.arrivals, seed, 0); err != nil {
			return err
		}
		b.notes = append(b.notes, f.mix.Note(seed))
		if err := f.wl.checkOpenFiles(b.cfg.Concurrency+usersOf(b.cfg.UserClasses), f.url == ""); err != nil {
			return err
		}
	}
	stopTrace, err := loadgen.StartRuntimeTrace(f.runtimeTrace)
	if err != nil {
		return Usagef("--runtime-trace: %v", err)
	}
	b.stopTrace = stopTrace
	b.onClose(stopTrace)
	if f.shard.Active() {
		// This shard's part of the whole schedule (after OnRecord is set:
		// records are renumbered as in the whole run before they are kept).
		if b.cfg, b.source, err = f.shard.Spec.Apply(b.cfg, b.source); err != nil {
			return Usagef("%v", err)
		}
	}
	return nil
}

// runLoad runs the load to its end (or Ctrl-C) with the client meter,
// the server's metrics and progress lines around it.
func (b *benchRun) runLoad() (*loadgen.Result, error) {
	f, env, ctx := b.f, b.env, b.ctx
	b.meter = runcheck.StartMeter()
	b.scraper = f.metrics.Start(ctx, b.target)
	b.gpuScrapers = f.gpu.Start(ctx, f.metrics.Interval)
	failed := func(err error) (*loadgen.Result, error) {
		if b.scraper != nil {
			b.scraper.Stop()
		}
		runlife.StopAll(b.gpuScrapers)
		b.sink.abort()
		return nil, err
	}
	// Last before the load: the shards' starts agree to what this wait does.
	if err := f.shard.WaitStart(ctx, &b.cfg); err != nil {
		return failed(err)
	}
	// The records go to the sink and the tally as they finish: the run
	// keeps none for its own length.
	b.cfg.DiscardRecords = true
	opts := stats.Options{OfferedRateRPS: b.cfg.OfferedRateRPS(), Series: true}
	if len(b.objectives) > 0 {
		opts.Good = b.objectives.Good
	}
	f.shard.Merged = opts
	b.tally = runlife.NewTally(opts, b.objectives, f.mix.SLOs, f.mix.Names(), keptRecordsBytes)
	run, err := loadgen.Start(ctx, b.cfg, b.source)
	if err != nil {
		return failed(Usagef("%v", err))
	}
	f.live.running(run, liveLoad(&b.cfg))
	f.otlp.running(run, liveLoad(&b.cfg))
	var stopProgress func()
	if !f.quiet {
		stopProgress = progress(ctx, env.dashboardOut(), env.IsTerminal, func() progressSnapshot {
			s := run.Snapshot()
			return progressSnapshot{Elapsed: s.Elapsed, Sent: s.Sent, Completed: s.Completed, Errors: s.Errors,
				InFlight: int(s.InFlight), OutputTokens: s.OutputTokens, Target: f.wl.Requests, Duration: f.wl.Duration,
				Recent: b.recent.snapshot()}
		})
	}
	res := run.Wait()
	if err := f.shard.Started(res.Start); err != nil {
		fmt.Fprintf(env.Stderr, "knee bench: recording the shard's start: %v\n", err)
	}
	b.meter.Stop()
	b.stopTrace()
	f.otlp.close() // the last export before the report, within its bound
	if stopProgress != nil {
		stopProgress()
	}
	b.interrupted = ctx.Err() != nil
	return res, nil
}

// summarize turns the records into the run's report: statistics overall
// and per class, SLO verdicts, the server's view, and notes on anything
// that bounds what the figures mean. failure is why the run measured
// nothing worth its figures ("" when it did).
func (b *benchRun) summarize(res *loadgen.Result) (rep *report.Run, status, failure string) {
	f, tally := b.f, b.tally
	end := runlife.End{Res: res, Tally: tally, Meter: b.meter, Interrupted: b.interrupted, Grace: b.cfg.Grace,
		LimitNote: f.wl.LimitNote(res.StoppedBy, tally.Count, tally.LastSend), SplitNote: f.mix.SplitNote(tally.ByClass),
		PromptOffNote: f.wl.promptOffNote, Warmup: f.wl.Warmup, UnreachableAfter: unreachableAfter, Target: redactURL(b.target)}
	if b.stream != nil {
		end.TraceErr = b.stream.Err()
	}
	o := end.Outcome()
	for _, msg := range o.Said {
		fmt.Fprintln(b.env.Stderr, "knee bench: "+msg)
	}
	sum, classes, status, failure := o.Summary, o.Classes, o.Status, o.Failure
	notes := append(b.notes, o.Notes...)
	// The report reads what the database keeps (storedConfig, meta.Target,
	// status, notes), so knee report renders the same report.
	rep = &report.Run{
		ID: b.sink.runID(), Kind: "bench", Version: Version, Target: b.meta.Target, Model: b.model, Status: status,
		Load: b.meta.Load, Config: b.meta.StoredConfig(), Start: res.Start, Summary: sum,
		SLOs: b.objectives.Evaluate(sum), Notes: redact.Texts(notes), ErrorMessages: tally.Errors.Top(5),
		Classes: classes,
	}
	for _, kv := range rep.Config {
		if kv[0] == "workload" { // as knee report reads it back (runs.Load)
			rep.Workload = kv[1]
		}
	}
	return rep, status, failure
}

// finish stores the run and its server metrics, prints the report and
// the JUnit verdicts, and says by its error how the run went: results not
// all saved, interrupted, a failed measurement (exit 1), failed SLOs (3).
func (b *benchRun) finish(rep *report.Run, status, failure string, res *loadgen.Result) error {
	f, env := b.f, b.env
	series, view := runlife.ServerView(b.scraper, res.Start, &b.tally.Join, &rep.Summary)
	rep.Server = view
	var gpuSeries []*scrape.Series
	rep.GPU, rep.Energy, gpuSeries = f.gpu.Energy(b.gpuScrapers, res.Start, b.tally.GPUWork())
	// Before finish, which closes the database.
	if err := runlife.SaveServerSeries(b.sink.store, f.out, store.WholeRun, series); err != nil {
		fmt.Fprintf(env.Stderr, "knee bench: saving the server metrics: %v\n", err)
	}
	if err := runlife.SaveGPUSeries(f.out, gpuSeries); err != nil {
		fmt.Fprintf(env.Stderr, "knee bench: saving the GPU metrics: %v\n", err)
	}
	kept := b.tally.KeptRecords()
	saveErrs := b.sink.finish(rep, status, kept)
	write := f.writeReport
	if saveErrs.Out != nil {
		write = f.writeReportUnsaved
	}
	if err := write(env.Stdout, rep); err != nil {
		return err
	}
	if err := f.junit.write("knee bench", runSuite(rep, failure, b.interrupted)); err != nil {
		return err
	}
	if saveErrs.Any() {
		return b.sink.lost(saveErrs, rep.ID, kept, b.tally.Count)
	}
	if b.interrupted {
		return fmt.Errorf("interrupted: the report above covers what was measured before the stop%s", storedAs(rep.ID))
	}
	if st := b.sink.store; st != nil && st.PartialRun != "" {
		return fmt.Errorf("%s%s", st.PartialRun, storedAs(rep.ID))
	}
	if failure != "" {
		if rep.Summary.Requests > 0 {
			failure += whyFailed(rep.ID, f.out)
		}
		return errors.New(failure)
	}
	if failed := append(failedSLOs(rep.SLOs), failedClasses(rep.Classes)...); len(failed) > 0 {
		return &SLOError{Failed: failed}
	}
	return nil
}

// unreachableAfter: a run whose every request of this first stretch
// failed to connect stops there (exit 1) rather than run its course.
const unreachableAfter = 5 * time.Second

func storedAs(id string) string {
	if id == "" {
		return ""
	}
	return " (stored as run " + id + ", status interrupted)"
}

func failedSLOs(results []slo.Result) []string {
	var failed []string
	for _, r := range results {
		if !r.Met {
			failed = append(failed, r.String())
		}
	}
	return failed
}

// writeOutDir is kept for sweep and sim.
var writeOutDir = report.WriteDir

// redactURL drops user info and query strings, which may hold credentials.
func redactURL(u string) string { return redact.URL(u) }

// redactPairs drops URL credentials from configuration values, in place.
func redactPairs(pairs [][2]string) {
	for i := range pairs {
		pairs[i][1] = redact.Text(pairs[i][1])
	}
}

// runMeta is what the run database and the report say ran.
// preset is what the embedded server simulates ("" with --url).
func (f *benchFlags) runMeta(target, model, preset string) runMeta {
	url := redactURL(target)
	if f.url == "" {
		// The port is random and gone when the run ends: "embedded" (with
		// what it simulates) says what was measured, and keeps runs
		// filterable by target.
		url = embeddedTarget(preset)
	}
	meta := runMeta{Kind: "bench", Target: url, Model: model, Label: f.label,
		Load: f.wl.loadString(), Config: append(f.wl.config(), [2]string{"api", f.api}, [2]string{"url", url})}
	meta.Config = append(meta.Config, f.sess.Config()...)
	meta.Config = append(meta.Config, f.endpoints.ConfigKV()...)
	if f.url == "" {
		meta.Config = append(meta.Config, f.embedded.config(f.model)...)
	}
	if len(f.slos) > 0 {
		meta.Config = append(meta.Config, [2]string{"slos", strings.Join(f.slos, ",")})
	}
	meta.Config = append(meta.Config, f.metrics.ConfigKV()...)
	meta.Config = append(meta.Config, f.gpu.ConfigKV()...)
	meta.Config = append(meta.Config, f.mix.ConfigKV()...)
	redactPairs(meta.Config)
	return meta
}
