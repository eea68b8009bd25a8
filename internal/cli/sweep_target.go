package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/runcheck"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// sweepTargetFlags say what knee sweep measures: a URL, or the embedded
// simulated server (the same flags as knee bench).
type sweepTargetFlags struct {
	targetFlags
	embedded embeddedFlags
	metrics  metricsFlags
	live     liveFlags
	otlp     otlpFlags
	// promptNotes say what built the prompts (promptsFor), for the report.
	promptNotes []string
	// stored is the run database the steps' records go to (nil: --no-store),
	// set once the run is begun.
	stored       *sweepStore
	loadgenGrace time.Duration // grace as loadgen takes it (graceFlags)
	// partial is the step an interrupt cut short, when it measured anything.
	partial *sweep.Step
	// probe sends probes beside every step; stopOversaturated stops a rate
	// step whose queue grows without bound (and the sweep there).
	probe             probeFlags
	stopOversaturated bool
	shard             *sweepShard // sweep --shards (nil: one process)
}

func (t *sweepTargetFlags) register(fs *pflag.FlagSet) {
	t.targetFlags.register(fs, "the embedded simulated server, fresh for every step", "after each step")
	t.embedded.register(fs)
	t.metrics.register(fs)
	t.live.register(fs)
	t.otlp.register(fs)
	t.probe.register(fs)
	fs.BoolVar(&t.stopOversaturated, "stop-oversaturated", false, "rate steps: stop a step as soon as its queue grows without bound (requests in flight and TTFT rising window after window), say so, and measure no higher load")
}

func (t *sweepTargetFlags) noteSet(fs *pflag.FlagSet) { t.metrics.noteSet(fs) }

// targetRunner measures one step with the load generator.
type targetRunner struct {
	t        *sweepTargetFlags
	f        *sweepFlags
	gen      *workload.Generator
	trace    *workload.Trace // a trace replay: each rate step replays it at that mean rate
	set      slo.Set
	apiKey   string
	eos      triState
	probed   bool
	eosOK    bool
	minTok   bool
	rec      *stepRecords // per-step records under --out (nil: none)
	describe string
	mixSrc   loadgen.Source // a --mix's requests (nil: no mix)

	// rerankProbed: the rerank path was settled (probeRerank) at the
	// first step.
	rerankProbed bool
}

func (t *sweepTargetFlags) runner(ctx context.Context, env *Env, f *sweepFlags, set slo.Set) (sweep.Runner, func(), error) {
	if err := checkBaseURL(t.url); err != nil {
		return nil, nil, err
	}
	if err := checkAPI(t.api); err != nil {
		return nil, nil, err
	}
	if err := checkAPIObjectives(t.api, set); err != nil {
		return nil, nil, err
	}
	if err := t.endpoints.check([]string{t.api}, f.wl.resolvedSeed()); err != nil {
		return nil, nil, err
	}
	if t.url != "" && t.model == "" {
		return nil, nil, Usagef("--model is required with --url (the model name the server serves)")
	}
	if err := t.metrics.validate(); err != nil {
		return nil, nil, err
	}
	if err := t.probe.validate(); err != nil {
		return nil, nil, err
	}
	if t.stopOversaturated && f.rate == "" {
		return nil, nil, Usagef("--stop-oversaturated applies to rate steps (--rate): a closed loop's in-flight count is bounded by its concurrency")
	}
	eos, err := parseTriState("--ignore-eos", t.ignoreEOS)
	if err != nil {
		return nil, nil, err
	}
	if t.api == openai.APIOllama {
		if _, err := ollamaEOS(eos); err != nil {
			return nil, nil, err
		}
		eos = triState{} // never sent: the native API has no such fields
	} else if !eosApplies(t.api) {
		if err := refuseEOS(t.api, eos); err != nil {
			return nil, nil, err
		}
		eos = triState{}
	}
	if err := t.embedded.refuseWithURL(t.url); err != nil {
		return nil, nil, err
	}
	steps := int(f.maxStepLoad)
	if f.rate != "" {
		steps = 0 // an open loop's in-flight count is not set; --max-concurrency caps it
	}
	if err := f.wl.checkOpenFiles(steps, t.url == ""); err != nil {
		return nil, nil, err
	}
	if t.loadgenGrace, err = graceFlags(t.grace, t.requestTimeout); err != nil {
		return nil, nil, err
	}
	if err := f.mix.load(f.wl.fs, &f.wl); err != nil {
		return nil, nil, err
	}
	if err := f.mix.embed(&t.embedded, &f.lora); err != nil {
		return nil, nil, err
	}
	if err := f.mix.checkSweep(f.rate != ""); err != nil {
		return nil, nil, err
	}
	r := &targetRunner{t: t, f: f, set: set, eos: eos}
	if r.apiKey, err = apiKeyFrom(env, t.apiKeyEnv); err != nil {
		return nil, nil, err
	}
	if _, err := workload.NewArrivals(f.wl.arrival, 1, f.wl.burstiness, 1); err != nil {
		return nil, nil, Usagef("--arrival: %v", err) // each step builds its own schedule
	}
	switch {
	case f.wl.trace.path != "":
		if r.trace, err = f.wl.openTrace(); err != nil {
			return nil, nil, err
		}
		if t.url != "" {
			t.promptNotes = f.wl.resolvePrompts(ctx, t.url, r.apiKey, t.model, t.api)
		}
		r.trace = f.wl.traceForPrompts(r.trace)
	case t.url != "":
		if r.gen, t.promptNotes, err = f.wl.promptsFor(ctx, t.url, r.apiKey, t.model, t.api); err != nil {
			return nil, nil, err
		}
	default:
		if r.gen, err = f.wl.generator(); err != nil {
			return nil, nil, err
		}
	}
	if f.mix.mix != nil {
		if r.mixSrc, err = f.mix.source(r.gen, f.wl.resolvedSeed()); err != nil {
			return nil, nil, err
		}
	}
	t.promptNotes = append(t.promptNotes, f.wl.promptsNote())
	if t.url == "" {
		// Fail on a bad preset now, not at the first step.
		srv, err := t.embedded.start(ctx, t.model)
		if err != nil {
			return nil, nil, Usagef("embedded server: %v", err)
		}
		r.describe = srv.describe
		srv.close()
		fmt.Fprintf(env.Stderr, "no --url given: every step runs against a fresh embedded simulated server (%s)\n", r.describe)
	}
	var out sweep.Runner = r
	if f.out != "" {
		r.rec = &stepRecords{dir: f.out}
		out = &recordingRunner{inner: out, rec: r.rec}
	}
	return out, func() {}, nil
}

func (t *sweepTargetFlags) notes(f *sweepFlags) []string {
	target := "target " + redactURL(t.url) + ", model " + t.model
	if t.url == "" {
		target = "knee's embedded simulated server, fresh for every step"
	}
	notes := append([]string{fmt.Sprintf("%s; per step %s; workload %s, seed %d",
		target, stepBound(&f.wl), f.workloadNote(), f.wl.resolvedSeed())}, t.promptNotes...)
	if p := t.probe; p.rateRPS > 0 {
		notes = append(notes, fmt.Sprintf("probes: %g/s of %d input, %d output tokens beside every step; the steps' figures and verdicts leave them out, the probe TTFT p95 column shows them",
			p.rateRPS, p.inputTokens, p.outputTokens))
	}
	return notes
}

// Run measures one load level against the target.
func (r *targetRunner) Run(ctx context.Context, load sweep.Load) (sweep.Step, error) {
	r.t.stored.step(load)
	base, model := r.t.url, r.t.model
	if base == "" {
		srv, err := r.t.embedded.start(ctx, r.t.model)
		if err != nil {
			return sweep.Step{}, err
		}
		defer srv.close()
		base, model = srv.url, srv.model
	}
	w := &r.f.wl
	warmupDur, warmupN, _ := w.warmupValue()
	cfg := loadgen.Config{
		BaseURL: base, Model: model, API: r.t.api, APIKey: r.apiKey,
		Duration: w.duration, Requests: w.requests, Warmup: warmupDur, WarmupRequests: warmupN, Ramp: w.ramp,
		RequestTimeout: r.t.requestTimeout, Grace: r.t.loadgenGrace,
	}
	r.t.temperature.apply(&cfg)
	if !r.rerankProbed { // once: every step's server answers alike
		r.rerankProbed = true
		r.t.promptNotes = append(r.t.promptNotes, r.t.endpoints.probeRerank(ctx, []string{r.t.api}, base, r.apiKey, model)...)
	}
	r.t.endpoints.set(&cfg)
	opts := stats.Options{}
	if len(r.set) > 0 {
		opts.Good = r.set.Good
	}
	var items interface{ Item(int64) workload.Item } = r.gen
	var shared workload.Arrivals // a rate step's schedule, which own-rate classes merge with
	if r.trace != nil {
		s, err := r.trace.AtRate(load.Value).Stream(true)
		if err != nil {
			return sweep.Step{}, Usagef("--trace: %v", err)
		}
		defer s.Close()
		items = s
		cfg.Arrivals, cfg.RateRPS, cfg.MaxConcurrency = s, load.Value, w.maxConcurrency
	} else if load.Kind == sweep.Rate {
		a, err := workload.NewArrivals(w.arrival, load.Value, w.burstiness, w.resolvedSeed()^0x9e3779b97f4a7c15)
		if err != nil {
			return sweep.Step{}, Usagef("--arrival: %v", err)
		}
		cfg.Arrivals, cfg.RateRPS, cfg.MaxConcurrency = a, load.Value, w.maxConcurrency
		shared = a
	} else {
		cfg.Concurrency = int(load.Value)
	}
	if err := r.probe(ctx, &cfg); err != nil {
		return sweep.Step{}, err
	}
	cfg.StopOversaturated = r.t.stopOversaturated && load.Kind == sweep.Rate
	cfg.StopIfUnreachable = unreachableAfter // as bench: a gone target ends the step, and the sweep
	if err := r.t.probe.apply(&cfg, r.gen, w.resolvedSeed()); err != nil {
		return sweep.Step{}, err
	}
	src := func(i int64) loadgen.Request {
		it := items.Item(i)
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens}
	}
	switch {
	case r.f.mix.mix != nil && r.f.mix.mix.OwnLoads() != "":
		// Classes with their own rate or users run beside every step.
		mixSrc, err := r.f.mix.applyLoad(&cfg, r.gen, shared, w.resolvedSeed())
		if err != nil {
			return sweep.Step{}, err
		}
		src = mixSrc
	case r.mixSrc != nil:
		src = r.mixSrc
	}
	cfg.OnRecord = func(rec *record.Request) {
		if r.rec != nil {
			r.rec.add(rec)
		}
		r.t.stored.add(rec)
		r.t.live.observe(rec)
		r.t.otlp.observe(rec)
	}
	cfg, part, err := r.t.shard.begin(ctx, cfg, src) // sweep --shards: this shard's part, from the step's start
	if err != nil {
		return sweep.Step{}, err
	}
	meter := runcheck.StartMeter()
	scraper := r.t.metrics.start(ctx, base)
	run, err := loadgen.Start(ctx, cfg, part)
	if err != nil {
		if scraper != nil {
			scraper.Stop()
		}
		return sweep.Step{}, Usagef("%v", err)
	}
	r.t.live.running(run, load.Value)
	r.t.otlp.running(run, load.Value)
	var stoppedEarly <-chan string
	stepDone := make(chan struct{})
	if scraper != nil && r.f.autoPlan() {
		stoppedEarly = watchSaturation(ctx, scraper, run, r.t.metrics.interval, stepDone)
	}
	res := run.Wait()
	meter.Stop()
	close(stepDone)
	opts.OfferedRateRPS = res.OfferedRateRPS
	recs, probeTTFT := splitProbes(res.Records)
	sum := stats.Summarize(recs, opts)
	if ctx.Err() != nil {
		if sum.Requests > 0 {
			// Interrupted mid-step: what was measured is kept, marked.
			r.t.partial = &sweep.Step{Load: load, Summary: sum, Full: true, Warnings: []string{fmt.Sprintf(
				"partial step: interrupted after %.1f s with %d requests measured; its figures cover only that part", res.Elapsed.Seconds(), sum.Requests)}}
		}
		return sweep.Step{}, ctx.Err()
	}
	step := sweep.Step{Load: load, Summary: sum, Full: true, ProbeTTFTP95: probeTTFT, Oversaturated: res.Oversaturation,
		Classes: r.f.mix.classes().Summarize(res.Records, opts, r.set, &sum)}
	if res.StoppedBy == loadgen.StopUnreachable {
		step.Unreachable = fmt.Sprintf("every request of the first %v failed to connect to %s (%s)", unreachableAfter, redactURL(r.t.url), record.ErrorKindsLine(sum.ErrorKinds))
		step.Warnings = append(step.Warnings, step.Unreachable)
	}
	if res.Oversaturation != "" {
		step.Warnings = append(step.Warnings, res.Oversaturation+"; the step's figures cover it until then")
	}
	// The client's own limits would bend the curve too: say so per step.
	for _, w := range runcheck.ClientFloorWarnings(sum, res, meter) {
		step.Warnings = append(step.Warnings, strings.TrimPrefix(w, "warning: "))
	}
	if res.Dropped > 0 {
		step.Warnings = append(step.Warnings, fmt.Sprintf("%d arrivals were dropped waiting for a --max-concurrency slot", res.Dropped))
	}
	if n := r.f.wl.promptOffNote(sum.PromptCheck); n != "" {
		step.Warnings = append(step.Warnings, strings.TrimPrefix(n, "warning: "))
	}
	series, view := serverView(scraper, res.Start, res.Records, &sum)
	step.Server = serverStep(view)
	if stoppedEarly != nil {
		if why := <-stoppedEarly; why != "" && step.Server != nil {
			step.Server.StoppedEarly, step.Server.WaitingGrowing = true, true
			step.Warnings = append(step.Warnings, why)
		}
	}
	if view != nil {
		for i, n := range view.Notes {
			if i < 2 {
				step.Warnings = append(step.Warnings, "server metrics: "+n)
			}
		}
	}
	r.t.stored.server(series)
	return step, nil
}

// probe decides once whether to send ignore_eos and min_tokens.
func (r *targetRunner) probe(ctx context.Context, cfg *loadgen.Config) error {
	if !r.eos.auto {
		cfg.IgnoreEOS, cfg.MinTokens = r.eos.value, r.eos.value
		return nil
	}
	if !r.probed {
		endpoint, err := openai.Endpoint(cfg.BaseURL, cfg.API)
		if err != nil {
			return Usagef("--url: %v", err)
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, perr := openai.Probe(pctx, http.DefaultClient, endpoint, cfg.APIKey, cfg.Model, cfg.API)
		r.eosOK = perr == nil && res.IgnoreEOS
		r.minTok = perr == nil && res.MinTokens
		r.probed = true
	}
	cfg.IgnoreEOS, cfg.MinTokens = r.eosOK, r.minTok
	return nil
}
