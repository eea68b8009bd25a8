package sweep

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/runcheck"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
)

// TargetRunner measures a load level on a real target with the load
// generator, as SimRunner does on the simulator: every step is Template
// (the target, the bounds and warm-up, probes and endpoints) at the
// step's load, the same workload, and for rate steps a fresh arrival
// schedule from the same seed. The hooks are what the command adds around
// a step: where records go, the live views, the run database.
type TargetRunner struct {
	Template loadgen.Config
	// Items are the requests' prompts and lengths; Trace, when set, is
	// replayed instead at each rate step's mean rate.
	Items func(i int64) workload.Item
	Trace *workload.Trace
	// Arrivals builds a rate step's schedule (loadsetup.Choice.ArrivalsAt).
	Arrivals func(rateRPS float64) (workload.Arrivals, error)
	// IgnoreEOS and MinTokens are sent as given, or, with EOSAuto, as a
	// probe of the first step's server finds them accepted.
	EOSAuto, IgnoreEOS bool
	SLOs               slo.Set
	Classes            *Classes // a --mix's classes (nil: none)
	// AutoPlan: the loads grow automatically, so a step the server's
	// metrics show saturated is cut short (WatchSaturation).
	AutoPlan       bool
	ScrapeInterval time.Duration

	// Server starts one step's target (a fresh embedded server) and says
	// where it listens; nil: Template's.
	Server func(ctx context.Context) (baseURL, model string, stop func(), err error)
	// FirstStep runs once, against the first step's server, before its
	// load (settling what every step's server answers alike); Configure
	// then adjusts every step's configuration.
	FirstStep func(ctx context.Context, baseURL, model string)
	Configure func(cfg *loadgen.Config) error
	// Source replaces the step's request source, given the step's shared
	// rate schedule (nil in a closed loop) and where the step's prompts
	// start in each class's workload (as Items' first, below): a traffic
	// mix. nil: Items.
	Source func(cfg *loadgen.Config, shared workload.Arrivals, first int64) (loadgen.Source, error)
	// BeginStep is told each step before it starts; OnRecord sees every
	// record; Begin may cut the step to a part (a shard) from its start.
	BeginStep func(Load)
	OnRecord  func(*record.Request)
	Begin     func(ctx context.Context, cfg loadgen.Config, src loadgen.Source) (loadgen.Config, loadgen.Source, error)
	// Scrape starts scraping the step's server (nil: no metrics); Running
	// is told the step's run has started; Series receives the step's
	// server metrics.
	Scrape  func(ctx context.Context, baseURL string) *scrape.Scraper
	Running func(run *loadgen.Run, load float64)
	Series  func(*scrape.Series)
	// PromptNote warns when the served prompt lengths are off ("": not).
	PromptNote func(*stats.PromptCheck) string
	// GPUMetrics starts reading the GPUs' exporters for one step (nil, or
	// a nil finish: none); finish stops them and gives the step's energy
	// over the work its records did and notes on what the exporters did.
	GPUMetrics func(ctx context.Context) (finish func(runStart time.Time, work GPUWork) (*energy.Figures, []string))

	// Partial is the step an interrupt cut short, when it measured anything.
	Partial *Step

	first          bool // the first step has run
	probed         bool
	eosOK, minTokV bool
}

// Run measures one load level against the target.
func (r *TargetRunner) Run(ctx context.Context, load Load) (Step, error) {
	if r.BeginStep != nil {
		r.BeginStep(load)
	}
	cfg := r.Template
	shortenStep(ctx, &cfg)
	if r.Server != nil {
		base, model, stop, err := r.Server(ctx)
		if err != nil {
			return Step{}, err
		}
		defer stop()
		cfg.BaseURL, cfg.Model = base, model
	}
	if !r.first { // once: every step's server answers alike
		r.first = true
		if r.FirstStep != nil {
			r.FirstStep(ctx, cfg.BaseURL, cfg.Model)
		}
	}
	if r.Configure != nil {
		if err := r.Configure(&cfg); err != nil {
			return Step{}, err
		}
	}
	opts := stats.Options{}
	if len(r.SLOs) > 0 {
		opts.Good = r.SLOs.Good
	}
	items := r.Items
	var shared workload.Arrivals // a rate step's schedule, which own-rate classes merge with
	cfg.Concurrency = 0
	switch {
	case r.Trace != nil:
		s, err := r.Trace.AtRate(load.Value).Stream(true)
		if err != nil {
			return Step{}, badinput.Errorf("--trace: %v", err)
		}
		defer s.Close()
		items = s.Item
		cfg.Arrivals, cfg.RateRPS = s, load.Value
	case load.Kind == Rate:
		a, err := r.Arrivals(load.Value)
		if err != nil {
			return Step{}, err
		}
		cfg.Arrivals, cfg.RateRPS = a, load.Value
		shared = a
	default:
		cfg.Concurrency, cfg.MaxConcurrency = int(load.Value), 0
	}
	if err := r.eos(ctx, &cfg); err != nil {
		return Step{}, err
	}
	// Template's StopOversaturated stops a rate step whose queue grows
	// without bound; a closed loop's in-flight count is bounded.
	cfg.StopOversaturated = cfg.StopOversaturated && load.Kind == Rate
	var first int64 // the step's first request's index in the workload
	if r.Server == nil && r.Trace == nil {
		first = stepFirstItem(load)
	}
	src := func(i int64) loadgen.Request {
		it := items(first + i)
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens}
	}
	if r.Source != nil {
		s, err := r.Source(&cfg, shared, first)
		if err != nil {
			return Step{}, err
		}
		src = s
	}
	// The step's figures build as its records finish (the hooks take the
	// records themselves): a step keeps none for its own length.
	tally := &stepTally{probes: stats.NewAccumulator(stats.Options{})}
	cfg.OnRecord = func(rec *record.Request) {
		tally.add(rec)
		if r.OnRecord != nil {
			r.OnRecord(rec)
		}
	}
	cfg.DiscardRecords = true
	part := loadgen.Source(src)
	if r.Begin != nil {
		var err error
		if cfg, part, err = r.Begin(ctx, cfg, src); err != nil {
			return Step{}, err
		}
	}
	opts.OfferedRateRPS = cfg.OfferedRateRPS()
	tally.main, tally.classes = stats.NewAccumulator(opts), r.Classes.Accumulate(opts, r.SLOs)
	meter := runcheck.StartMeter()
	var scraper *scrape.Scraper
	if r.Scrape != nil {
		scraper = r.Scrape(ctx, cfg.BaseURL)
	}
	var gpuDone func(time.Time, GPUWork) (*energy.Figures, []string)
	if r.GPUMetrics != nil {
		gpuDone = r.GPUMetrics(ctx)
	}
	run, err := loadgen.Start(ctx, cfg, part)
	if err != nil {
		if scraper != nil {
			scraper.Stop()
		}
		if gpuDone != nil {
			gpuDone(time.Now(), GPUWork{})
		}
		return Step{}, badinput.Errorf("%v", err)
	}
	if r.Running != nil {
		r.Running(run, load.Value)
	}
	var stoppedEarly <-chan string
	stepDone := make(chan struct{})
	if scraper != nil && r.AutoPlan {
		stoppedEarly = scrape.WatchSaturation(ctx, scraper.Snapshot, run.Stop, r.ScrapeInterval, stepDone)
	}
	res := run.Wait()
	meter.Stop()
	close(stepDone)
	var stepEnergy *energy.Figures
	var gpuNotes []string
	if gpuDone != nil {
		stepEnergy, gpuNotes = gpuDone(res.Start, tally.gpuWork())
	}
	sum, probeTTFT := tally.main.Summary(), tally.probeTTFTP95()
	if ctx.Err() != nil {
		if sum.Requests > 0 {
			// Interrupted mid-step: what was measured is kept, marked.
			r.Partial = &Step{Load: load, Summary: sum, Full: true, Warnings: []string{fmt.Sprintf(
				"partial step: interrupted after %.1f s with %d requests measured; its figures cover only that part", res.Elapsed.Seconds(), sum.Requests)}}
		}
		return Step{}, ctx.Err()
	}
	step := Step{Load: load, Summary: sum, Full: true, ProbeTTFTP95: probeTTFT, Oversaturated: res.Oversaturation,
		Classes: tally.classes.Steps(&sum), Energy: stepEnergy}
	for i, n := range gpuNotes {
		if i < 2 {
			step.Warnings = append(step.Warnings, "GPU metrics: "+n)
		}
	}
	switch res.StoppedBy {
	case loadgen.StopUnreachable:
		step.Unreachable = fmt.Sprintf("every request of the first %v failed to connect to %s (%s)",
			cfg.StopIfUnreachable, redact.URL(cfg.BaseURL), record.ErrorKindsLine(sum.ErrorKinds))
	case loadgen.StopTargetGone: // mid-step: the steps after it would measure nothing either
		step.Unreachable = fmt.Sprintf("%s went away mid-step (every request failed to connect for %v; %s)",
			redact.URL(cfg.BaseURL), cfg.StopIfUnreachable, record.ErrorKindsLine(sum.ErrorKinds))
	}
	if res.StoppedBy == loadgen.StopUnreachable { // target gone: loadgen's note below says when
		step.Warnings = append(step.Warnings, step.Unreachable)
	}
	// What the load generator did of its own accord (stopped reusing
	// connections, backed off) is part of the step's account.
	step.Warnings = append(step.Warnings, res.Notes...)
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
	if r.PromptNote != nil {
		if n := r.PromptNote(sum.PromptCheck); n != "" {
			step.Warnings = append(step.Warnings, strings.TrimPrefix(n, "warning: "))
		}
	}
	var series *scrape.Series
	var view *scrape.View
	if scraper != nil {
		series = scraper.Stop()
		series.Rebase(res.Start)
		view = scrape.BuildViewOf(series, &tally.join, sum.Window.StartMS, sum.Window.EndMS)
	}
	step.Server = ServerStepOf(view)
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
	if r.Series != nil {
		r.Series(series)
	}
	return step, nil
}

// eos decides once whether to send ignore_eos and min_tokens.
func (r *TargetRunner) eos(ctx context.Context, cfg *loadgen.Config) error {
	if !r.EOSAuto {
		cfg.IgnoreEOS, cfg.MinTokens = r.IgnoreEOS, r.IgnoreEOS
		return nil
	}
	if !r.probed {
		endpoint, err := openai.Endpoint(cfg.BaseURL, cfg.API)
		if err != nil {
			return badinput.Errorf("--url: %v", err)
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, perr := openai.Probe(pctx, http.DefaultClient, endpoint, cfg.APIKey, cfg.Model, cfg.API)
		r.eosOK = perr == nil && res.IgnoreEOS
		r.minTokV = perr == nil && res.MinTokens
		r.probed = true
	}
	cfg.IgnoreEOS, cfg.MinTokens = r.eosOK, r.minTokV
	return nil
}

// stepTally is what a step's figures take from its records, fed from
// loadgen's workers as each record finishes (SplitProbes, Summarize,
// Classes.Summarize and scrape.BuildView over the step's records, without
// them).
type stepTally struct {
	main, probes *stats.Accumulator // the load's records; the probes'
	classes      *ClassAccumulator
	mu           sync.Mutex // join and work are not safe for concurrent use
	join         scrape.JoinTally
	work         GPUWork
}

func (t *stepTally) add(r *record.Request) {
	if r.Class == record.ProbeClass {
		t.probes.Add(r)
	} else {
		t.main.Add(r)
	}
	t.classes.Add(r)
	t.mu.Lock()
	t.join.Add(r)
	t.work.Add(r)
	t.mu.Unlock()
}

// stepFirstItem is where a step's requests start in the workload when
// every step goes to one target that outlives it: steps that sent the same
// prompts (each from request 0) let a server with a prefix cache answer a
// later step's prompts from what an earlier one left, which read as a
// faster server (a dense sweep of knee serve's vllm profile measured
// 2,985 output tok/s at 64 users where one bench measured 1,731). Each
// load starts at its own place, from its float's bits: deterministic, so
// every shard and a restarted one agree, and for any two loads a sweep
// measures far more requests apart than a step sends, so each step's
// prompts are its own. A fresh embedded server per step has nothing
// cached, and a trace's prompts are the trace's.
func stepFirstItem(load Load) int64 {
	return int64(math.Float64bits(load.Value) >> 2)
}

// probeTTFTP95 is SplitProbes' probe TTFT p95 (nil: no probe had a TTFT).
func (t *stepTally) probeTTFTP95() *float64 {
	if sum := t.probes.Summary(); sum.TTFT.Count > 0 {
		v := sum.TTFT.P95
		return &v
	}
	return nil
}

func (t *stepTally) gpuWork() GPUWork {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.work
}

// GPUWork is what a run's GPU energy is divided by, tallied over every
// record (probes and warm-up too: the GPUs served them) as each finishes:
// the last token's time, the output tokens and the completed requests.
type GPUWork struct {
	End          time.Duration // the latest Done
	OutputTokens int64
	Completed    int64
}

// Add counts r's work.
func (w *GPUWork) Add(r *record.Request) {
	w.End = max(w.End, r.Done)
	w.OutputTokens += int64(r.OutputTokens)
	if r.OK() {
		w.Completed++
	}
}

// stepShareKey carries a guided sweep's request for a shorter step.
type stepShareKey struct{}

// WithStepShare asks the runner for a step share of the configured length
// (its duration and request count; share in (0, 1)): a guided sweep's
// steps whose verdict decides nothing. The share travels in the context so
// that it passes the runners wrapped around TargetRunner (shards, records).
func WithStepShare(ctx context.Context, share float64) context.Context {
	return context.WithValue(ctx, stepShareKey{}, share)
}

// StepShare is the share WithStepShare asked for (1: a whole step).
func StepShare(ctx context.Context) float64 {
	if v, ok := ctx.Value(stepShareKey{}).(float64); ok && v > 0 && v < 1 {
		return v
	}
	return 1
}

// Shortest shortened step: a step must still complete a few requests.
const (
	minShortStep     = 500 * time.Millisecond
	minShortRequests = 4
)

// shortenStep scales cfg's duration and request count by the context's
// step share, not below minShortStep and minShortRequests.
func shortenStep(ctx context.Context, cfg *loadgen.Config) {
	sh := StepShare(ctx)
	if sh == 1 {
		return
	}
	if cfg.Duration > 0 {
		cfg.Duration = max(time.Duration(float64(cfg.Duration)*sh), min(minShortStep, cfg.Duration))
	}
	if cfg.Requests > 0 {
		cfg.Requests = max(int64(math.Round(float64(cfg.Requests)*sh)), min(minShortRequests, cfg.Requests))
	}
}
