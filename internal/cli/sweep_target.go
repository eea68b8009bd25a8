package cli

import (
	"context"
	"fmt"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/scrape"
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
	gpu      gpuMetricsFlags
	live     liveFlags
	otlp     otlpFlags
	// probe sends probes beside every step.
	probe probeFlags
}

func (t *sweepTargetFlags) register(fs *pflag.FlagSet, wl *workloadFlags) {
	t.targetFlags.register(fs, "the embedded simulated server, fresh for every step", "after each step")
	t.embedded.register(fs)
	t.metrics.register(fs)
	t.gpu.register(fs)
	t.live.register(fs)
	t.otlp.register(fs)
	t.probe.register(fs)
	wl.registerTargetLoad(fs, "rate steps: stop a step as soon as its queue grows without bound (requests in flight and TTFT rising window after window), say so, and measure no higher load")
}

func (t *sweepTargetFlags) noteSet(fs *pflag.FlagSet) { t.metrics.noteSet(fs) }

// startRunner checks the target's flags and builds the runner that
// measures each step (sweep.TargetRunner), with --out's per-step records.
func (sr *sweepRun) startRunner() error {
	ctx, env, f, t, set := sr.ctx, sr.env, sr.f, sr.t, sr.set
	if err := checkBaseURL(t.url); err != nil {
		return err
	}
	if err := loadsetup.CheckAPI(t.api); err != nil {
		return err
	}
	if err := loadsetup.CheckAPIObjectives(t.api, set); err != nil {
		return err
	}
	if err := t.endpoints.Check([]string{t.api}, f.wl.ResolvedSeed()); err != nil {
		return err
	}
	if t.url != "" && t.model == "" {
		return Usagef("--model is required with --url (the model name the server serves)")
	}
	if err := t.metrics.Validate(); err != nil {
		return err
	}
	if err := t.gpu.Validate(); err != nil {
		return err
	}
	if err := t.probe.Validate(); err != nil {
		return err
	}
	if f.wl.StopOversaturated && f.Rate == "" {
		return Usagef("--stop-oversaturated applies to rate steps (--rate): a closed loop's in-flight count is bounded by its concurrency")
	}
	eos, err := loadsetup.ParseEOS(t.ignoreEOS)
	if err != nil {
		return err
	}
	if eos, _, err = eos.ForAPI(t.api); err != nil { // each step probes the server when auto
		return err
	}
	var priorFlags []string // --guided with --url: what the server runs, for the model
	if sr.g.On {
		priorFlags = []string{"gpu", "tp", "profile"}
	}
	if err := t.embedded.refuseWithURL(t.url, priorFlags...); err != nil {
		return err
	}
	steps := int(f.maxStepLoad)
	if f.Rate != "" {
		steps = 0 // an open loop's in-flight count is not set; --max-concurrency caps it
	}
	if err := f.wl.checkOpenFiles(steps, t.url == ""); err != nil {
		return err
	}
	if sr.loadgenGrace, err = loadsetup.Grace(t.grace, t.requestTimeout); err != nil {
		return err
	}
	if err := f.mix.load(f.wl.fs, &f.wl); err != nil {
		return err
	}
	if err := f.mix.embed(&t.embedded, &f.lora); err != nil {
		return err
	}
	if err := f.mix.CheckSweep(f.Rate != ""); err != nil {
		return err
	}
	apiKey, err := apiKeyFrom(env, t.apiKeyEnv)
	if err != nil {
		return err
	}
	if _, err := f.wl.ArrivalsAt(1); err != nil {
		return err // each step builds its own schedule
	}
	var gen *workload.Generator
	var trace *workload.Trace
	switch {
	case f.wl.TracePath != "":
		if trace, err = f.wl.openTrace(); err != nil {
			return err
		}
		if t.url != "" {
			sr.promptNotes = f.wl.resolvePrompts(ctx, t.url, apiKey, t.model, t.api)
		}
		trace = f.wl.traceForPrompts(trace)
	case t.url != "":
		if gen, sr.promptNotes, err = f.wl.promptsFor(ctx, t.url, apiKey, t.model, t.api); err != nil {
			return err
		}
	default:
		if gen, err = f.wl.generator(); err != nil {
			return err
		}
	}
	if err := f.wl.saveScenario(); err != nil {
		return err
	}
	var mixSrc func(first int64) loadgen.Source // a --mix's requests from a step's first (nil: no mix)
	if f.mix.File != nil {
		if mixSrc, err = f.mix.Source(gen, f.wl.ResolvedSeed()); err != nil {
			return err
		}
	}
	sr.promptNotes = append(sr.promptNotes, f.wl.promptsNote())
	template := f.wl.StepTemplate(loadsetup.Target{BaseURL: t.url, Model: t.model, API: t.api, APIKey: apiKey,
		RequestTimeout: t.requestTimeout, Grace: sr.loadgenGrace})
	template.StopIfUnreachable = unreachableAfter // as bench: a gone target ends the step, and the sweep
	r := &sweep.TargetRunner{
		Template: template,
		Trace:    trace, Arrivals: f.wl.ArrivalsAt, EOSAuto: eos.Auto, IgnoreEOS: eos.Value,
		SLOs: set, Classes: f.mix.Classes(),
		AutoPlan: f.autoPlan(), ScrapeInterval: t.metrics.Interval,
		FirstStep: func(ctx context.Context, base, model string) {
			sr.promptNotes = append(sr.promptNotes, t.endpoints.ProbeRerank(ctx, []string{t.api}, base, apiKey, model)...)
		},
		BeginStep:  func(l sweep.Load) { sr.stored.Step(l) },
		Begin:      sr.shard.begin, // sweep --shards: this shard's part, from the step's start
		Scrape:     t.metrics.Start,
		PromptNote: f.wl.promptOffNote,
		GPUMetrics: t.gpu.StepHook(t.metrics.Interval),
		Series:     func(s *scrape.Series) { sr.stored.Server(s) },
		Running: func(run *loadgen.Run, load float64) {
			t.live.running(run, load)
			t.otlp.running(run, load)
		},
	}
	t.temperature.apply(&r.Template)
	if gen != nil {
		r.Items = gen.Item
	}
	r.Configure = func(cfg *loadgen.Config) error {
		t.endpoints.Set(cfg)
		return t.probe.Apply(cfg, gen, f.wl.ResolvedSeed()) // each step's probes start afresh, as its load does
	}
	switch {
	case f.mix.File != nil && f.mix.File.OwnLoads() != "":
		// Classes with their own rate or users run beside every step.
		r.Source = func(cfg *loadgen.Config, shared workload.Arrivals, first int64) (loadgen.Source, error) {
			return f.mix.ApplyLoad(cfg, gen, shared, f.wl.ResolvedSeed(), first)
		}
	case mixSrc != nil:
		r.Source = func(_ *loadgen.Config, _ workload.Arrivals, first int64) (loadgen.Source, error) {
			return mixSrc(first), nil
		}
	}
	var rec *sweep.StepRecords // per-step records under --out (nil: none)
	if f.out != "" {
		rec = &sweep.StepRecords{Dir: f.out}
	}
	r.OnRecord = func(x *record.Request) {
		if rec != nil {
			rec.Add(x)
		}
		sr.stored.Add(x)
		t.live.observe(x)
		t.otlp.observe(x)
	}
	if t.url == "" {
		// Fail on a bad preset now, not at the first step.
		srv, err := t.embedded.start(ctx, t.model)
		if err != nil {
			return Usagef("embedded server: %v", err)
		}
		srv.close()
		// The run is stored, and its live notes name it, as bench's is:
		// by its preset, not the first step's ephemeral URL.
		sr.meta.Target = embeddedTarget(srv.preset)
		fmt.Fprintf(env.Stderr, "no --url given: every step runs against a fresh embedded simulated server (%s)\n", srv.describe)
		r.Server = func(ctx context.Context) (string, string, func(), error) {
			srv, err := t.embedded.start(ctx, t.model)
			if err != nil {
				return "", "", nil, err
			}
			return srv.url, srv.model, srv.close, nil
		}
	}
	if sr.g.On && !sr.g.Bisect {
		if sr.model, err = sr.guidedModel(); err != nil {
			return err
		}
	}
	sr.target = r
	sr.runner = r
	if rec != nil {
		sr.runner = &sweep.RecordingRunner{Inner: r, Rec: rec}
	}
	return nil
}

// notes say what the sweep measured and how its prompts were built.
func (sr *sweepRun) notes() []string {
	t, f := sr.t, sr.f
	target := "target " + redactURL(t.url) + ", model " + t.model
	if t.url == "" {
		target = "target " + sr.meta.Target + ", a fresh embedded simulated server for every step"
	}
	notes := append([]string{fmt.Sprintf("%s; per step %s; workload %s, seed %d",
		target, stepBound(&f.wl), f.workloadNote(), f.wl.ResolvedSeed())}, sr.promptNotes...)
	if p := t.probe; p.RateRPS > 0 {
		notes = append(notes, fmt.Sprintf("probes: %g/s of %d input, %d output tokens beside every step; the steps' figures and verdicts leave them out, the probe TTFT p95 column shows them",
			p.RateRPS, p.InputTokens, p.OutputTokens))
	}
	return notes
}

// partial is the step an interrupt cut short, when it measured anything:
// another shard's, else this process's.
func (sr *sweepRun) partial() *sweep.Step {
	if sr.shardPartial != nil || sr.target == nil {
		return sr.shardPartial
	}
	return sr.target.Partial
}
