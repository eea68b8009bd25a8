package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/cpuclock"
	"github.com/knee-dev/knee/internal/livemetrics"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/report"
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
	runtimeTrace      string
	live              liveFlags
	otlp              otlpFlags
	shard             shardFlags
	metrics           metricsFlags
	embedded          embeddedFlags
	wl                workloadFlags
	sess              sessionFlags
	probe             probeFlags
	mix               mixFlags
	lora              loraFlags
	stopOversaturated bool
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
	f.embedded.register(fs)
	f.wl.register(fs, 32, 300)
	f.sess.register(fs)
	f.probe.register(fs)
	f.mix.register(fs)
	f.lora.register(fs)
	fs.BoolVar(&f.stopOversaturated, "stop-oversaturated", false, "open loop (--rate): stop issuing as soon as the queue grows without bound (requests in flight and TTFT rising window after window), and say so")
	cmd.RunE = func(*cobra.Command, []string) error { return runBench(ctx, env, fs, &f) }
	return cmd
}

// runBench is knee bench once its flags are parsed: check them, start the
// target (the embedded server without --url), run the load, report.
func runBench(ctx context.Context, env *Env, fs *pflag.FlagSet, f *benchFlags) error {
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (flags only; see knee bench -h)", fs.Arg(0))
	}
	apiKey, err := apiKeyFrom(env, f.apiKeyEnv)
	if err != nil {
		return err
	}
	if err := f.shard.resolve(env, flagGiven(fs, "seed"), f.noStore); err != nil {
		return err
	}
	f.storeFlags.sharding = &f.shard
	if f.stopOversaturated && f.shard.active() {
		return Usagef("--stop-oversaturated is not supported with --shards: each shard sees only its part of the queue, so the shards would stop at different times")
	}
	if err := f.embedded.refuseWithURL(f.url); err != nil {
		return err
	}
	if err := f.junit.check(); err != nil {
		return err
	}

	grace, err := graceFlags(f.grace, f.requestTimeout)
	if err != nil {
		return err
	}
	if err := f.wl.validate(); err != nil {
		return err
	}
	if err := f.probe.validate(); err != nil {
		return err
	}
	if err := f.mix.load(fs, &f.wl); err != nil {
		return err
	}
	if err := f.mix.checkOwnLoads(fs); err != nil {
		return err
	}
	if err := f.mix.embed(&f.embedded, &f.lora); err != nil {
		return err
	}
	f.metrics.noteSet(fs)
	turns, think, err := f.sess.parse(fs)
	if err != nil {
		return err
	}
	if f.sess.sessions > 0 && !flagGiven(fs, "requests") {
		f.wl.requests = 0 // the conversations' turns bound the run
	}
	if err := f.wl.checkOpenFiles(f.wl.concurrency, f.url == ""); err != nil {
		return err
	}
	if err := f.metrics.validate(); err != nil {
		return err
	}
	if err := checkAPI(f.api); err != nil {
		return err
	}
	if err := checkBaseURL(f.url); err != nil {
		return err
	}
	ignoreEOS, err := parseTriState("--ignore-eos", f.ignoreEOS)
	if err != nil {
		return err
	}
	objectives, err := slo.ParseAll(f.slos)
	if err != nil {
		return Usagef("--slo: %v", err)
	}
	if err := checkAPIObjectives(f.api, objectives); err != nil {
		return err
	}
	if err := checkMixAPIs(f.api, &f.mix, objectives); err != nil {
		return err
	}
	if err := f.endpoints.check(runAPIs(f.api, &f.mix), f.wl.resolvedSeed()); err != nil {
		return err
	}
	f.wl.trace.ctx = ctx // Ctrl-C stops reading a huge trace
	wp, err := f.wl.plan()
	if err != nil {
		return err
	}
	var gen interface{ Item(int64) workload.Item } = wp.gen
	arrivals, warmupDur, warmupN := wp.arrivals, wp.warmup, wp.warmupRequests
	if f.out != "" {
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return Usagef("--out %s: %v", f.out, err)
		}
	}

	target, model := f.url, f.model
	var notes []string
	if target == "" {
		srv, err := f.embedded.start(ctx, f.model)
		if err != nil {
			return err
		}
		defer srv.close()
		target, model = srv.url, srv.model
		msg := fmt.Sprintf("no --url given: using knee's embedded simulated server at %s (%s)", target, srv.describe)
		fmt.Fprintln(env.Stderr, msg)
		notes = append(notes, msg)
	} else if model == "" {
		return Usagef("--model is required with --url (the model name the server serves)")
	} else if err := loadgen.CheckReachable(ctx, target); err != nil {
		msg := fmt.Sprintf("--url %s: %v; nothing was run", redactURL(target), err)
		unrun := &report.Run{Kind: "bench", Version: Version, Target: redactURL(target), Model: model}
		if werr := f.junit.write("knee bench", runSuite(unrun, msg, false)); werr != nil {
			return werr
		}
		return errors.New(msg)
	} else if wp.trace != nil {
		notes = append(notes, f.wl.resolvePrompts(ctx, target, apiKey, model, f.api)...)
	} else {
		var pn []string
		if gen, pn, err = f.wl.promptsFor(ctx, target, apiKey, model, f.api); err != nil {
			return err
		}
		notes = append(notes, pn...)
	}
	notes = append(notes, f.wl.promptsNote())
	if g, ok := gen.(*workload.Generator); ok {
		if note := f.wl.reuseNote(g, f.wl.requests); note != "" {
			notes = append(notes, note)
		}
	}
	var traceNote string
	var stream *workload.TraceStream
	if wp.trace != nil {
		// Prompts in the server's tokens (resolved above), built ahead.
		if stream, err = f.wl.traceForPrompts(wp.trace).Stream(true); err != nil {
			return Usagef("--trace: %v", err)
		}
		defer stream.Close()
		gen, arrivals = stream, stream
		traceNote = wp.trace.Info().String()
	}

	cfg := loadgen.Config{
		BaseURL: target, Model: model, API: f.api, APIKey: apiKey,
		Concurrency: f.wl.concurrency, RateRPS: f.wl.rate, MaxConcurrency: f.wl.maxConcurrency,
		Duration: f.wl.duration, Requests: f.wl.requests,
		Warmup: warmupDur, WarmupRequests: warmupN, Ramp: f.wl.ramp,
		RequestTimeout: f.requestTimeout, Grace: grace,
		StopIfUnreachable: unreachableAfter,
	}
	if arrivals != nil {
		cfg.Arrivals = arrivals
		cfg.Concurrency = 0
	}
	if f.sess.sessions > 0 {
		cfg.Sessions, cfg.Concurrency = f.sess.sessions, 0
		cfg.Turn = f.sess.turnSource(gen, turns, think, f.wl.resolvedSeed())
	}
	f.temperature.apply(&cfg)
	notes = append(notes, f.endpoints.probeRerank(ctx, runAPIs(f.api, &f.mix), target, apiKey, model)...)
	f.endpoints.set(&cfg)
	cfg.StopOversaturated = f.stopOversaturated
	if err := f.probe.apply(&cfg, gen, f.wl.resolvedSeed()); err != nil {
		return err
	}
	if n := f.probe.note(); n != "" {
		notes = append(notes, n)
	}
	if traceNote != "" {
		cfg.RateRPS = wp.trace.Info().MeanRateRPS
		notes = append(notes, traceNote)
	}
	eosNotes, err := benchIgnoreEOS(ctx, &cfg, ignoreEOS, f.api, target, apiKey, model)
	if err != nil {
		return err
	}
	notes = append(notes, eosNotes...)

	meta := f.runMeta(target, model)
	meta.load, meta.config = f.mix.loadLine(meta.load, &f.wl), f.mix.config(meta.config)
	sink, err := newRecordSink(env, &f.storeFlags, f.out, meta)
	if err != nil {
		return err
	}
	recent := newRecentWindow()
	watch := &promptWatch{warn: func(med float64) {
		fmt.Fprintf(env.Stderr, "warning: the server is serving prompts a median %+.1f%% off the requested length (usage.prompt_tokens); %s\n", med, f.wl.promptsNote())
	}}
	cfg.OnRecord = func(r *record.Request) {
		recent.add(r)
		sink.add(r)
		watch.add(r)
		f.live.observe(r)
		f.otlp.observe(r)
	}
	if err := f.live.start(env, livemetrics.Info{Kind: "bench", Run: sink.runID(), Model: model, Target: meta.target}); err != nil {
		sink.abort()
		return err
	}
	defer f.live.close()
	if err := f.otlp.start(env, "bench", sink.runID(), model, target, f.api); err != nil {
		sink.abort()
		return err
	}
	defer f.otlp.close()

	source := func(i int64) loadgen.Request {
		it := gen.Item(i)
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens, Session: it.Session}
	}
	if f.mix.mix != nil {
		seed := f.mix.seed(fs, &f.wl)
		if source, err = f.mix.applyLoad(&cfg, gen, arrivals, seed); err != nil {
			sink.abort()
			return err
		}
		notes = append(notes, f.mix.note(seed))
		if err := f.wl.checkOpenFiles(cfg.Concurrency+usersOf(cfg.UserClasses), f.url == ""); err != nil {
			sink.abort()
			return err
		}
	}
	stopTrace, err := startRuntimeTrace(f.runtimeTrace)
	if err != nil {
		sink.abort()
		return err
	}
	defer stopTrace()
	if f.shard.active() {
		// This shard's part of the whole schedule (after OnRecord is set:
		// records are renumbered as in the whole run before they are kept).
		if cfg, source, err = f.shard.spec.Apply(cfg, source); err != nil {
			sink.abort()
			return Usagef("%v", err)
		}
	}
	meter := startClientMeter()
	scraper := f.metrics.start(ctx, target)
	// Last before the load: the shards' starts agree to what this wait does.
	if err := f.shard.waitStart(ctx, &cfg); err != nil {
		if scraper != nil {
			scraper.Stop()
		}
		sink.abort()
		return err
	}
	run, err := loadgen.Start(ctx, cfg, source)
	if err != nil {
		if scraper != nil {
			scraper.Stop()
		}
		sink.abort()
		return Usagef("%v", err)
	}
	f.live.running(run, liveLoad(&cfg))
	f.otlp.running(run, liveLoad(&cfg))
	var stopProgress func()
	if !f.quiet {
		stopProgress = progress(ctx, env.Stderr, env.IsTerminal, func() progressSnapshot {
			s := run.Snapshot()
			return progressSnapshot{Elapsed: s.Elapsed, Sent: s.Sent, Completed: s.Completed, Errors: s.Errors,
				InFlight: int(s.InFlight), OutputTokens: s.OutputTokens, Target: f.wl.requests, Duration: f.wl.duration,
				Recent: recent.snapshot()}
		})
	}
	res := run.Wait()
	if err := f.shard.started(res.Start); err != nil {
		fmt.Fprintf(env.Stderr, "knee bench: recording the shard's start: %v\n", err)
	}
	meter.stop()
	stopTrace()
	f.otlp.close() // the last export before the report, within its bound
	if stopProgress != nil {
		stopProgress()
	}

	interrupted := ctx.Err() != nil
	var lastSend time.Duration
	for i := range res.Records {
		lastSend = max(lastSend, res.Records[i].Sent)
	}
	if n := f.wl.limitNote(res.StoppedBy, int64(len(res.Records)), lastSend); n != "" {
		notes = append(notes, n)
	}
	if res.Oversaturation != "" {
		notes = append(notes, res.Oversaturation+"; the figures cover the run until then, a load beyond the server's capacity")
		fmt.Fprintln(env.Stderr, "knee bench: "+res.Oversaturation)
	}
	if n := f.mix.splitNote(res.Records); n != "" {
		notes = append(notes, n)
	}
	if res.Interrupted > 0 {
		notes = append(notes, fmt.Sprintf("%d requests in flight at the interrupt were canceled and left out of the statistics (records.jsonl keeps them as canceled)", res.Interrupted))
	}
	opts := stats.Options{OfferedRateRPS: res.OfferedRateRPS, Series: true}
	if len(objectives) > 0 {
		opts.Good = objectives.Good
	}
	f.shard.merged = opts
	overall, classes := classSummaries(res.Records, opts, objectives, f.mix.slos, f.mix.names())
	sum := stats.Summarize(overall, opts)
	status := "complete"
	if interrupted {
		status = "interrupted"
		notes = append(notes, "interrupted: the report covers what was measured before the stop")
	}
	if n := f.wl.promptOffNote(sum.PromptCheck); n != "" {
		notes = append(notes, n)
	}
	notes = append(notes, sessionNotes(res.Records)...)
	if stream != nil && stream.Err() != nil {
		notes = append(notes, fmt.Sprintf("warning: the trace could not be read to its end (%v): the replay stopped there", stream.Err()))
	}
	notes = append(notes, timestampNote(res))
	notes = append(notes, clientFloorWarnings(sum, res, meter)...)
	if w := overloadWarning(sum); w != "" {
		notes = append(notes, w)
		fmt.Fprintln(env.Stderr, "knee bench: "+w)
	}
	failure := ""
	if !interrupted {
		failure = measurementFailure(sum, len(res.Records), f.wl.warmup)
	}
	if res.StoppedBy == loadgen.StopUnreachable {
		failure = fmt.Sprintf("stopped early: every request of the first %v failed to connect to %s (%s)",
			unreachableAfter, redactURL(target), errorKindsLine(sum.ErrorKinds))
	}
	if failure != "" {
		notes = append(notes, "warning: "+failure)
	}
	rep := &report.Run{
		ID: sink.runID(), Kind: "bench", Version: Version, Target: redactURL(target), Model: model,
		Load: meta.load, Config: meta.config, Start: res.Start, Summary: sum,
		SLOs: objectives.Evaluate(sum), Notes: redactAll(notes), ErrorMessages: report.CommonErrors(res.Records, 5),
		Classes: classes,
	}
	series, view := serverView(scraper, res.Start, res.Records, &sum)
	rep.Server = view
	// Before finish, which closes the database.
	if err := saveServerSeries(sink.store, f.out, store.WholeRun, series); err != nil {
		fmt.Fprintf(env.Stderr, "knee bench: saving the server metrics: %v\n", err)
	}
	saveErrs := sink.finish(rep, status, res.Records)
	if err := f.writeReport(env.Stdout, rep); err != nil {
		return err
	}
	if err := f.junit.write("knee bench", runSuite(rep, failure, interrupted)); err != nil {
		return err
	}
	if saveErrs.any() {
		return sink.lost(saveErrs, rep.ID, res.Records)
	}
	if interrupted {
		return fmt.Errorf("interrupted: the report above covers what was measured before the stop%s", storedAs(rep.ID))
	}
	if failure != "" {
		if sum.Requests > 0 {
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

// maxErrorRate is the share of failed requests beyond which a run counts
// as a failed measurement (exit 1): its figures describe mostly failures.
const maxErrorRate = 0.5

// measurementFailure says why a finished run measured nothing worth its
// figures ("" when it did): nothing in the window (the warm-up took every
// request), no completed request, or mostly errors. Such a run exits 1.
func measurementFailure(sum stats.Summary, issued int, warmup string) string {
	top := func() string {
		kind, most := "", 0
		for _, k := range record.ErrorKinds {
			if n := sum.ErrorKinds[string(k)]; n > most {
				kind, most = string(k), n
			}
		}
		return record.ErrorKind(kind).Hint()
	}
	switch {
	case sum.Requests == 0 && issued > 0 && warmup != "":
		return fmt.Sprintf("nothing was measured: all %d requests fell in the warm-up (--warmup %s is as long as the run); shorten --warmup or lengthen the run", issued, warmup)
	case sum.Requests == 0:
		return "nothing was measured: no request was sent in the run's window; lengthen the run"
	case sum.Completed == 0:
		return fmt.Sprintf("all %d requests failed (%s): %s", sum.Requests, errorKindsLine(sum.ErrorKinds), top())
	case sum.ErrorRate > maxErrorRate:
		return fmt.Sprintf("%.0f%% of the %d measured requests failed (%s), so the figures describe mostly failures: %s",
			100*sum.ErrorRate, sum.Requests, errorKindsLine(sum.ErrorKinds), top())
	}
	return ""
}

// graceFlags checks --grace and --request-timeout and returns the grace
// for loadgen, where 0 means its default: --grace 0 is no grace at all.
func graceFlags(grace, requestTimeout time.Duration) (time.Duration, error) {
	switch {
	case grace < 0:
		return 0, Usagef("--grace %v: want 0 (cancel in-flight requests when the run ends) or a positive duration", grace)
	case requestTimeout < 0:
		return 0, Usagef("--request-timeout %v: want a positive duration (0: none)", requestTimeout)
	case grace == 0:
		return -1, nil
	}
	return grace, nil
}

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

// triState is a flag that is true, false, or decided by a probe.
type triState struct{ auto, value bool }

func parseTriState(name, s string) (triState, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return triState{auto: true}, nil
	case "true", "1", "yes":
		return triState{value: true}, nil
	case "false", "0", "no":
		return triState{}, nil
	}
	return triState{}, Usagef("%s %q: want auto, true or false", name, s)
}

// redactURL drops user info and query strings, which may hold credentials.
func redactURL(u string) string { return redact.URL(u) }

// redactAll drops URL credentials from every message of texts, in place:
// notes and errors quote endpoints, and the URL given may carry a password.
func redactAll(texts []string) []string {
	for i := range texts {
		texts[i] = redact.Text(texts[i])
	}
	return texts
}

// redactPairs drops URL credentials from configuration values, in place.
func redactPairs(pairs [][2]string) {
	for i := range pairs {
		pairs[i][1] = redact.Text(pairs[i][1])
	}
}

// timestampNote says where token arrival times came from.
func timestampNote(res *loadgen.Result) string {
	switch {
	case res.KernelTimestamps && res.WallClockSteps > 0:
		return fmt.Sprintf("token arrival times: the kernel's receive timestamps (SO_TIMESTAMPNS); the system clock stepped %d time(s) during the run, and tokens received just before a step may be off by it", res.WallClockSteps)
	case res.KernelTimestamps:
		return "token arrival times: the kernel's receive timestamps (SO_TIMESTAMPNS), so knee's own scheduling delay is not in them"
	case res.UserStampedStreams > 0:
		return fmt.Sprintf("token arrival times: taken in user space after each socket read on %d streams (no kernel receive timestamps there)", res.UserStampedStreams)
	}
	return "token arrival times: taken in user space right after each socket read"
}

// startRuntimeTrace starts a Go runtime trace into path ("": none); stop
// ends it and closes the file, and may be called more than once.
func startRuntimeTrace(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, Usagef("--runtime-trace: %v", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, Usagef("--runtime-trace: %v", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			trace.Stop()
			f.Close()
		})
	}, nil
}

// clientMeter measures, over a run, what bounds how well the client keeps
// time: knee's own CPU and the host's steal of the machine's.
type clientMeter struct {
	cpu          time.Duration // knee's CPU: at start, then over the run
	mach0, mach1 cpuclock.MachineTimes
	machErr      error
}

func startClientMeter() *clientMeter {
	m := &clientMeter{cpu: cpuclock.Process()}
	m.mach0, m.machErr = cpuclock.Machine()
	return m
}

// stop ends the measurement: call it when the run ends.
func (m *clientMeter) stop() {
	m.cpu = cpuclock.Process() - m.cpu
	if m.machErr == nil {
		m.mach1, m.machErr = cpuclock.Machine()
	}
}

// stealShareOver is the host's share of the machine's CPU time beyond
// which knee says the run's timing includes host stalls: on a VM whose
// host takes a few percent, a vCPU is stopped for milliseconds at a time
// (see package wake), and a send or a token read due then waits it out.
const stealShareOver = 0.02

// clientFloorWarnings says when a result may reflect knee's own limits
// rather than the server's: the client fell behind its schedule, its CPU
// was saturated, or the host stopped the machine's CPUs.
func clientFloorWarnings(sum stats.Summary, res *loadgen.Result, m *clientMeter) []string {
	var w []string
	if sum.Lag.Count > 0 && sum.Lag.P99 > 10 {
		w = append(w, fmt.Sprintf("warning: client lag p99 is %.1f ms: knee sent requests late; open-loop TTFT(sched) includes it. Results are beyond this machine's overhead floor (see knee selftest).", sum.Lag.P99))
	}
	if res.Elapsed > 0 {
		util := m.cpu.Seconds() / res.Elapsed.Seconds() / float64(cpuclock.CPUs())
		if util > 0.9 {
			w = append(w, fmt.Sprintf("warning: knee's process used %.0f%% of all CPUs: timing may include client overhead (see knee selftest).", 100*util))
		}
	}
	if m.machErr == nil {
		if s := stealWarning(m.mach0, m.mach1); s != "" {
			w = append(w, s)
		}
	}
	return w
}

// stealWarning says when the host took more than stealShareOver of the
// machine's CPU time between two readings.
func stealWarning(from, to cpuclock.MachineTimes) string {
	share := to.StealShare(from)
	if share <= stealShareOver {
		return ""
	}
	return fmt.Sprintf("warning: the host took %.1f%% of this machine's CPU time during the run (steal): a stopped vCPU delays sends and token reads by milliseconds, so lag and latency tails may be the host's, not the server's.", 100*share)
}

// recordSink receives every record as it finishes: it streams them to the
// run database and to --out/records.jsonl so nothing measured is lost if the
// run is cut short.
type recordSink struct {
	env   *Env
	out   string
	file  *os.File
	jsonl *record.Writer
	recs  chan *record.Request
	done  chan error
	store *storedRun
}

func newRecordSink(env *Env, sf *storeFlags, out string, meta runMeta) (*recordSink, error) {
	s := &recordSink{env: env, out: out, recs: make(chan *record.Request, 4096), done: make(chan error, 1)}
	if out != "" {
		f, err := os.Create(filepath.Join(out, "records.jsonl"))
		if err != nil {
			return nil, Usagef("--out %s: %v", out, err)
		}
		s.file, s.jsonl = f, record.NewWriter(f)
	}
	st, err := sf.begin(env, meta)
	if err != nil {
		return nil, err
	}
	s.store = st
	go s.loop()
	return s, nil
}

// add is loadgen's OnRecord: cheap, hands the record to the writer goroutine.
func (s *recordSink) add(r *record.Request) {
	c := r.Clone()
	s.recs <- &c
}

func (s *recordSink) loop() {
	var firstErr error
	flush := time.NewTicker(time.Second)
	defer flush.Stop()
	for {
		select {
		case r, ok := <-s.recs:
			if !ok {
				if s.jsonl != nil {
					if err := s.jsonl.Flush(); err != nil && firstErr == nil {
						firstErr = err
					}
				}
				s.done <- firstErr
				return
			}
			if s.jsonl != nil {
				if err := s.jsonl.Write(r); err != nil && firstErr == nil {
					firstErr = err
				}
			}
			s.store.add(r)
		case <-flush.C:
			// Flush at least once a second so a kill loses at most the last second.
			if s.jsonl != nil {
				if err := s.jsonl.Flush(); err != nil && firstErr == nil {
					firstErr = err
				}
			}
		}
	}
}

func (s *recordSink) runID() string { return s.store.id() }

func (s *recordSink) abort() {
	close(s.recs)
	<-s.done
	if s.file != nil {
		s.file.Close()
	}
	s.store.finish(nil, "failed")
}

// sinkErrors are what a recordSink could not write, by destination.
type sinkErrors struct {
	jsonl error // --out/records.jsonl
	out   error // --out's summary.json and reports
	store error // the run database
}

func (e sinkErrors) any() bool { return e.jsonl != nil || e.out != nil || e.store != nil }

// finish drains the records, closes the files, writes summary.json and the
// reports into --out, and marks the stored run finished.
func (s *recordSink) finish(rep *report.Run, status string, recs []record.Request) sinkErrors {
	close(s.recs)
	var errs sinkErrors
	errs.jsonl = <-s.done
	if s.file != nil {
		if cerr := s.file.Close(); errs.jsonl == nil {
			errs.jsonl = cerr
		}
	}
	if s.out != "" {
		errs.out = writeOutDir(s.out, rep, recs)
	}
	errs.store = s.store.finish(rep, status)
	return errs
}

// lost says what a run could not save and where its records are kept
// instead: --out/records.jsonl when that was written, the run database when
// it stored them, else a records file written now in the temp folder. A run
// whose results were not all saved must not read as a success.
func (s *recordSink) lost(errs sinkErrors, runID string, recs []record.Request) error {
	var parts []string
	if errs.out != nil {
		parts = append(parts, fmt.Sprintf("--out %s: %v", s.out, errs.out))
	}
	if errs.jsonl != nil {
		parts = append(parts, fmt.Sprintf("--out %s: records.jsonl: %v", s.out, errs.jsonl))
	}
	if errs.store != nil {
		what := "the run database could not store the run"
		if runID != "" {
			what = fmt.Sprintf("the run database could not store run %s (it is not marked complete)", runID)
		}
		parts = append(parts, fmt.Sprintf("%s: %v", what, errs.store))
	}
	if errs.store != nil && s.store != nil && s.store.shard != nil {
		sh := s.store.shard
		parts = append(parts, fmt.Sprintf("shard %d of run %q is not marked complete: run it again (same index and --run-name) to store its part; requests already stored are not stored twice", sh.shard, sh.runName))
	}
	msg := "saving results failed: " + strings.Join(parts, "; ")
	switch {
	case errs.jsonl == nil && s.out != "":
		return fmt.Errorf("%s; all %d records are in %s", msg, len(recs), filepath.Join(s.out, "records.jsonl"))
	case errs.store == nil && runID != "":
		return fmt.Errorf("%s; all %d records are stored as run %s (knee records %s --out FILE)", msg, len(recs), runID, runID)
	}
	path, err := keepRecords(tempDir(s.env), recs)
	if err != nil {
		return fmt.Errorf("%s; keeping the %d records in the temp folder failed too: %v", msg, len(recs), err)
	}
	return fmt.Errorf("%s; all %d records are kept in %s (knee import %s)", msg, len(recs), path, path)
}

// tempDir is $TMPDIR as the command's environment says, else the system's.
func tempDir(env *Env) string {
	if d := env.Getenv("TMPDIR"); d != "" {
		return d
	}
	return os.TempDir()
}

// keepRecords writes recs to a new records file in dir and returns its path.
func keepRecords(dir string, recs []record.Request) (string, error) {
	f, err := os.CreateTemp(dir, "knee-records-*.jsonl")
	if err != nil {
		return "", err
	}
	w := record.NewWriter(f)
	for i := range recs {
		if err = w.Write(&recs[i]); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// writeOutDir writes summary.json, report.md and report.html beside
// records.jsonl; recs (when kept) feed the HTML distributions and waterfall.
func writeOutDir(dir string, rep *report.Run, recs []record.Request) error {
	files := []struct {
		name   string
		render func(*os.File) error
	}{
		{"summary.json", func(f *os.File) error { return report.JSON(f, rep) }},
		{"report.md", func(f *os.File) error { return report.Markdown(f, rep) }},
		{"report.html", func(f *os.File) error { return report.HTML(f, rep, report.HTMLData{Records: recs}) }},
	}
	for _, file := range files {
		f, err := os.Create(filepath.Join(dir, file.name))
		if err != nil {
			return err
		}
		err = file.render(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file.name, err)
		}
	}
	return nil
}

// benchIgnoreEOS sets cfg's ignore_eos and min_tokens from --ignore-eos:
// given, or (auto) what a probe of the server finds it accepts. The notes
// say what the probe found.
func benchIgnoreEOS(ctx context.Context, cfg *loadgen.Config, ignoreEOS triState, api, target, apiKey, model string) (notes []string, err error) {
	cfg.IgnoreEOS, cfg.MinTokens = ignoreEOS.value, ignoreEOS.value
	if api == openai.APIOllama {
		note, err := ollamaEOS(ignoreEOS)
		if err != nil {
			return nil, err
		}
		cfg.IgnoreEOS, cfg.MinTokens = false, false
		notes = append(notes, note)
	} else if !eosApplies(api) {
		// Anthropic's API has no such fields; embeddings and rerank
		// generate nothing.
		if err := refuseEOS(api, ignoreEOS); err != nil {
			return nil, err
		}
		cfg.IgnoreEOS, cfg.MinTokens = false, false
	} else if ignoreEOS.auto {
		endpoint, eerr := openai.Endpoint(target, api)
		if eerr != nil {
			return nil, Usagef("--url %q: %v", target, eerr)
		}
		probeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		pr, perr := openai.Probe(probeCtx, http.DefaultClient, endpoint, apiKey, model, api)
		cancel()
		switch {
		case perr != nil:
			notes = append(notes, fmt.Sprintf("probe for ignore_eos/min_tokens failed (%v); not sending them", perr))
		default:
			cfg.IgnoreEOS, cfg.MinTokens = pr.IgnoreEOS, pr.MinTokens
			if !pr.IgnoreEOS && !pr.MinTokens {
				notes = append(notes, "the server accepts neither ignore_eos nor min_tokens: outputs may be shorter than requested")
			}
		}
	}

	return notes, nil
}

// runMeta is what the run database and the report say ran.
func (f *benchFlags) runMeta(target, model string) runMeta {
	meta := runMeta{kind: "bench", target: redactURL(target), model: model, label: f.label,
		load: f.wl.loadString(), config: append(f.wl.config(), [2]string{"api", f.api}, [2]string{"url", redactURL(target)})}
	meta.config = append(meta.config, f.sess.config()...)
	meta.config = append(meta.config, f.endpoints.config()...)
	if f.url == "" {
		// The port is random; "embedded" keeps runs filterable by target.
		meta.target = "embedded"
		meta.config = append(meta.config, f.embedded.config(f.model)...)
	}
	if len(f.slos) > 0 {
		meta.config = append(meta.config, [2]string{"slos", strings.Join(f.slos, ",")})
	}
	meta.config = append(meta.config, f.metrics.config()...)
	meta.config = append(meta.config, f.mix.configKV()...)
	redactPairs(meta.config)
	return meta
}
