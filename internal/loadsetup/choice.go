// Package loadsetup turns what a user chose for the load (lengths,
// prefixes, a dataset or a trace, the load level and its arrivals, the
// bounds and warm-up, the seed) into a plan, and from the plan into a
// loadgen.Config for a real target or a sim.Config for the simulator. It
// is the load's counterpart of enginesetup: bench, sweep, sim and sim
// sweep share it, so they share its checks and messages; the command line
// only declares the flags and fills a Choice.
package loadsetup

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/workload"
)

// MaxInFlight bounds --concurrency and --max-concurrency, and MaxRateRPS
// --rate: each request in flight is a connection and a goroutine, and
// beyond these the client, not the server, is what a run would measure.
const (
	MaxInFlight = 100_000
	MaxRateRPS  = 100_000
)

// Choice is the load a user chose: plain values, filled by flags (or a
// scenario file through them), with Given saying which were set.
type Choice struct {
	Input, Output string // length distributions (workload.ParseDist)
	Dataset       string
	Tokenizer     string
	SharedPrefix  int
	PrefixGroups  int
	PrefixTokens  int
	Seed          uint64
	SeedSet       bool // --seed given (or resolved): else a random one is drawn

	Concurrency    int
	Rate           float64
	Arrival        string
	Burstiness     float64
	MaxConcurrency int

	Requests int64
	Duration time.Duration
	Warmup   string // a duration (10s) or a request count (20)
	Ramp     time.Duration

	// StopOversaturated (an open loop against a real target) stops issuing
	// as soon as the queue grows without bound.
	StopOversaturated bool
	// ContinuousUsage asks the server for usage on every chunk (vLLM's
	// stream_options.continuous_usage_stats), so a chunk of several
	// tokens is counted exactly instead of as one.
	ContinuousUsage bool

	// TracePath replays a trace with the Replay options instead of a
	// synthetic workload.
	TracePath string
	Replay    workload.Replay
	// SimMaxContext is the simulated engine's max model len, set by the
	// commands that simulate, so a trace is cut to what the engine serves.
	SimMaxContext int
	// LoadLists: --concurrency and --rate are lists of steps (sweeps),
	// checked by the sweep, not here.
	LoadLists bool

	// Given names the settings given explicitly, by flag name: a default
	// and an explicit value differ (--requests with --duration, --rate
	// with --concurrency, a trace option without --trace).
	Given Given
}

// Given is the set of settings given explicitly, by flag name.
type Given map[string]bool

// Validate checks the load settings together; errors name the flag and
// are bad input. A --duration given without --requests is a time limit:
// the default request count does not cut it short.
func (c *Choice) Validate() error {
	if c.Duration > 0 && !c.Given["requests"] {
		c.Requests = 0
	}
	if err := c.validateLoadLevel(); err != nil {
		return err
	}
	switch {
	case c.Rate < 0:
		return badinput.Errorf("--rate %v: want a positive number of requests per second", c.Rate)
	case c.Rate == 0 && c.Concurrency <= 0:
		return badinput.Errorf("--concurrency %d: want at least 1 (or give --rate for an open loop)", c.Concurrency)
	case c.Requests < 0:
		return badinput.Errorf("--requests %d: want 0 (no limit) or more", c.Requests)
	case c.Duration < 0:
		return badinput.Errorf("--duration %v: want a positive duration", c.Duration)
	case c.Ramp < 0:
		return badinput.Errorf("--ramp %v: want a positive duration (0: no ramp)", c.Ramp)
	case c.Requests == 0 && c.Duration == 0:
		return badinput.Errorf("give --requests or --duration: every load must be bounded")
	case c.Burstiness <= 0:
		return badinput.Errorf("--burstiness %v: want a positive number", c.Burstiness)
	case c.SharedPrefix < 0:
		return badinput.Errorf("--shared-prefix %d: want 0 or more tokens", c.SharedPrefix)
	case c.PrefixTokens < 0 || c.PrefixGroups < 0:
		return badinput.Errorf("--prefix-groups %d --prefix-tokens %d: want 0 or more", c.PrefixGroups, c.PrefixTokens)
	case c.SharedPrefix > 0 && (c.PrefixTokens > 0 || c.PrefixGroups > 1):
		return badinput.Errorf("--shared-prefix is --prefix-groups 1 --prefix-tokens N: give one or the other")
	case c.PrefixGroups > 0 && c.PrefixTokens == 0:
		return badinput.Errorf("--prefix-groups %d needs --prefix-tokens (each group's shared prefix length)", c.PrefixGroups)
	}
	if _, _, err := c.WarmupValue(); err != nil {
		return err
	}
	return c.validateTrace()
}

// validateLoadLevel checks the single load level of bench and sim:
// settings that would be silently ignored are refused.
func (c *Choice) validateLoadLevel() error {
	if c.LoadLists {
		return nil
	}
	rateSet := c.Given["rate"]
	switch {
	case rateSet && !(c.Rate > 0):
		return badinput.Errorf("--rate %v: want a positive number of requests per second (for a closed loop, give --concurrency instead)", c.Rate)
	case c.Rate > MaxRateRPS:
		return badinput.Errorf("--rate %v: at most %d requests per second (beyond that knee measures itself, not the server)", c.Rate, MaxRateRPS)
	case rateSet && c.Given["concurrency"]:
		return badinput.Errorf("give --concurrency (closed loop) or --rate (open loop), not both; --max-concurrency caps an open loop")
	case c.Concurrency > MaxInFlight:
		return badinput.Errorf("--concurrency %d: at most %d requests in flight (each is a connection)", c.Concurrency, MaxInFlight)
	case c.MaxConcurrency > MaxInFlight:
		return badinput.Errorf("--max-concurrency %d: at most %d requests in flight (each is a connection)", c.MaxConcurrency, MaxInFlight)
	}
	return c.OpenLoopOnly(rateSet)
}

// OpenLoopOnly refuses open-loop settings given without an open loop.
func (c *Choice) OpenLoopOnly(open bool) error {
	if open {
		if c.Given["burstiness"] && c.Arrival != "gamma" {
			return badinput.Errorf("--burstiness applies to --arrival gamma (got --arrival %s)", c.Arrival)
		}
		return nil
	}
	for _, name := range []string{"burstiness", "arrival", "max-concurrency"} {
		if c.Given[name] {
			return badinput.Errorf("--%s applies to an open loop: give --rate too (it would be ignored otherwise)", name)
		}
	}
	return nil
}

// validateTrace refuses trace options without --trace, and with it the
// settings the trace gives.
func (c *Choice) validateTrace() error {
	if c.TracePath == "" {
		for _, n := range []string{"trace-format", "trace-start", "trace-end", "trace-speedup", "trace-rate", "trace-max-context", "trace-sample"} {
			if c.Given[n] {
				return badinput.Errorf("--%s needs --trace FILE", n)
			}
		}
		return nil
	}
	if c.LoadLists && c.Given["concurrency"] {
		return badinput.Errorf("a sweep over a trace steps its rate: give --rate R1,R2,... (each step replays the trace at the speed-up that gives that mean rate) or --rate auto, not --concurrency")
	}
	for _, n := range []string{"rate", "concurrency", "arrival", "burstiness", "dataset", "input-tokens", "output-tokens", "shared-prefix", "prefix-groups", "prefix-tokens", "ramp"} {
		if c.Given[n] && !(c.LoadLists && n == "rate") {
			return badinput.Errorf("--%s does not apply with --trace: the trace gives the arrivals and lengths", n)
		}
	}
	return c.Replay.Check()
}

// CheckOpenFiles refuses a load whose requests in flight need more
// connections than this process may open (limit, ulimit -n; 0: unknown):
// past it, dials and accepts fail with "too many open files" and the run
// measures that. With the embedded server each request holds two
// descriptors (both ends). concurrency is the closed loop's (0 in an open
// loop, where --max-concurrency is what bounds the connections).
func (c *Choice) CheckOpenFiles(concurrency int, embedded bool, limit uint64) error {
	flagName, inFlight := "--concurrency", concurrency
	if c.Rate > 0 || concurrency == 0 {
		flagName, inFlight = "--max-concurrency", c.MaxConcurrency
	}
	if c.Requests > 0 && int64(inFlight) > c.Requests {
		inFlight = int(c.Requests) // no more at once than there are requests
	}
	if limit == 0 || inFlight <= 0 {
		return nil
	}
	per := uint64(1)
	if embedded {
		per = 2
	}
	const spare = 256 // the database, the records file, the runtime
	if limit <= spare {
		return nil
	}
	if most := (limit - spare) / per; uint64(inFlight) > most {
		where := ""
		if embedded {
			where = " (two per request with the embedded server: both ends of each connection)"
		}
		return badinput.Errorf("%s %d: this process may open %d files (ulimit -n) and each request in flight holds a connection%s: at most %d here; raise ulimit -n, or lower the load",
			flagName, inFlight, limit, where, most)
	}
	return nil
}

// WarmupValue parses the warm-up as a duration or a request count.
func (c *Choice) WarmupValue() (time.Duration, int, error) {
	s := strings.TrimSpace(c.Warmup)
	if s == "" {
		return 0, 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return 0, n, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, 0, nil
	}
	return 0, 0, badinput.Errorf("--warmup %q: want a duration such as 10s or a request count such as 20", s)
}

// ResolvedSeed returns the seed to use, drawing a random one the first
// time when none was given: the run then repeats with it.
func (c *Choice) ResolvedSeed() uint64 {
	if !c.SeedSet {
		c.Seed, c.SeedSet = workload.RandomSeed(), true
	}
	return c.Seed
}

// PrefixLen is the shared prefix length of every prefix group.
func (c *Choice) PrefixLen() int { return max(c.SharedPrefix, c.PrefixTokens) }

// Prompts is how a real target's prompts are built: its own tokenizer
// (when it has /tokenize) and the tokens its template adds to every
// prompt. The zero value builds with the chosen local tokenizer.
type Prompts struct {
	Server   *workload.ServerTokenizer
	Overhead int
}

// Generator builds the prompt/length generator; bad distributions are
// bad input.
func (c *Choice) Generator(p Prompts) (*workload.Generator, error) {
	in, err := workload.ParseDist(c.Input)
	if err != nil {
		return nil, badinput.Errorf("--input-tokens: %v", err)
	}
	out, err := workload.ParseDist(c.Output)
	if err != nil {
		return nil, badinput.Errorf("--output-tokens: %v", err)
	}
	var tok workload.Tokenizer
	if p.Server != nil {
		tok = p.Server
	} else if tok, err = workload.LoadTokenizer(c.Tokenizer); err != nil {
		return nil, badinput.Errorf("--tokenizer: %v", err)
	}
	g, err := workload.NewGenerator(workload.Spec{
		Input: in, Output: out, Dataset: c.Dataset, SharedPrefixTokens: c.PrefixLen(), PrefixGroups: c.PrefixGroups,
		Seed: c.ResolvedSeed(), Tokenizer: tok, PromptOverheadTokens: p.Overhead,
	})
	if err != nil {
		return nil, badinput.Errorf("workload: %v", err)
	}
	return g, nil
}

// OpenTrace reads and checks the trace, and bounds the run by it: its
// requests, unless --requests asks for fewer. ctx stops reading a huge
// trace (Ctrl-C).
func (c *Choice) OpenTrace(ctx context.Context) (*workload.Trace, error) {
	tok, err := workload.LoadTokenizer(c.Tokenizer)
	if err != nil {
		return nil, badinput.Errorf("--tokenizer: %v", err)
	}
	tr, err := c.Replay.Open(ctx, c.TracePath, c.ResolvedSeed(), tok, c.SimMaxContext)
	if err != nil {
		return nil, err
	}
	if kept := int64(tr.Info().Kept); !c.Given["requests"] || c.Requests == 0 || c.Requests > kept {
		c.Requests = kept
	}
	return tr, nil
}

// ArrivalsAt builds an open-loop schedule at rate from the chosen process
// and seed (a sweep's rate step, or the run's --rate).
func (c *Choice) ArrivalsAt(rate float64) (workload.Arrivals, error) {
	a, err := workload.NewArrivals(c.Arrival, rate, c.Burstiness, c.ResolvedSeed()^0x9e3779b97f4a7c15)
	if err != nil {
		return nil, badinput.Errorf("--arrival: %v", err)
	}
	return a, nil
}

// Plan is what a Choice resolves to for one run.
type Plan struct {
	Load           Choice              // the choice as it resolved (seed drawn, a trace's request count)
	Gen            *workload.Generator // nil with a trace
	Trace          *workload.Trace     // a trace replay: open a Stream per run
	Arrivals       workload.Arrivals   // nil: closed loop (or a trace)
	Warmup         time.Duration
	WarmupRequests int
}

// Plan resolves the generator (prompts built as p says), the arrival
// schedule and the warm-up; with a trace, trace is the one opened
// already (nil: it is opened now).
func (c *Choice) Plan(ctx context.Context, p Prompts, trace *workload.Trace) (Plan, error) {
	warmup, warmupN, err := c.WarmupValue()
	if err != nil {
		return Plan{}, err
	}
	if c.TracePath != "" {
		if trace == nil {
			if trace, err = c.OpenTrace(ctx); err != nil {
				return Plan{}, err
			}
		}
		return Plan{Load: *c, Trace: trace, Warmup: warmup, WarmupRequests: warmupN}, nil
	}
	gen, err := c.Generator(p)
	if err != nil {
		return Plan{}, err
	}
	var arrivals workload.Arrivals
	if c.Rate > 0 {
		if arrivals, err = c.ArrivalsAt(c.Rate); err != nil {
			return Plan{}, err
		}
	}
	return Plan{Load: *c, Gen: gen, Arrivals: arrivals, Warmup: warmup, WarmupRequests: warmupN}, nil
}

// Target is where a load is sent and how each request is bounded.
type Target struct {
	BaseURL, Model, API, APIKey string
	RequestTimeout              time.Duration
	Grace                       time.Duration // as loadgen takes it: 0 its default, <0 none
}

// LoadgenConfig is the load generator's configuration for the plan against
// target: the load level (an open loop when the plan has arrivals), the
// bounds and the warm-up. The command adds what it alone knows (probes,
// records, the server's own fields).
func (p *Plan) LoadgenConfig(t Target) loadgen.Config {
	c := &p.Load
	cfg := loadgen.Config{
		BaseURL: t.BaseURL, Model: t.Model, API: t.API, APIKey: t.APIKey,
		Concurrency: c.Concurrency, RateRPS: c.Rate, MaxConcurrency: c.MaxConcurrency,
		Duration: c.Duration, Requests: c.Requests,
		Warmup: p.Warmup, WarmupRequests: p.WarmupRequests, Ramp: c.Ramp,
		RequestTimeout: t.RequestTimeout, Grace: t.Grace,
		StopOversaturated: c.StopOversaturated, ContinuousUsage: c.ContinuousUsage,
	}
	if p.Arrivals != nil {
		cfg.Arrivals, cfg.Concurrency = p.Arrivals, 0
	}
	if p.Trace != nil {
		cfg.RateRPS = p.Trace.Info().MeanRateRPS
	}
	return cfg
}

// LimitNote says which limit ended the run's issuing: stoppedBy is
// "requests" or "duration" (loadgen.Stop*), issued the requests sent and
// lastSend the last one's send time.
func (c *Choice) LimitNote(stoppedBy string, issued int64, lastSend time.Duration) string {
	switch stoppedBy {
	case "requests":
		dflt := ""
		if !c.Given["requests"] {
			dflt = " (the default; give --duration alone for a time limit)"
		}
		return fmt.Sprintf("ended by the request limit: --requests %d%s, the last sent at %.1f s", c.Requests, dflt, lastSend.Seconds())
	case "duration":
		return fmt.Sprintf("ended by the time limit: --duration %v, %d requests sent", c.Duration, issued)
	}
	return ""
}

// ReuseNote states the prefix reuse the synthetic workload offers over its
// first n requests: the hit rate an infinite prefix cache would get.
func (c *Choice) ReuseNote(gen *workload.Generator, n int64) string {
	if gen == nil || c.PrefixLen() == 0 || c.Dataset != "" || n <= 0 || n > 10_000_000 {
		return ""
	}
	reused, total := gen.PrefixReuse(n)
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("prefix reuse offered: %.1f%% of prompt tokens (the hit rate of an infinite prefix cache; %d group(s) of a %d-token shared prefix over %d requests)",
		100*float64(reused)/float64(total), max(1, c.PrefixGroups), c.PrefixLen(), n)
}

// ResolvedSettings are the settings as they resolved, defaults included,
// for a saved scenario: lengths, tokenizer, the load level and its bounds.
// Settings that do not apply (an open loop's --arrival in a closed loop)
// are left out, so the file repeats without being refused.
func (c *Choice) ResolvedSettings() [][2]string {
	kv := [][2]string{{"input-tokens", c.Input}, {"output-tokens", c.Output}, {"tokenizer", c.Tokenizer}}
	if c.Requests > 0 {
		kv = append(kv, [2]string{"requests", strconv.FormatInt(c.Requests, 10)})
	}
	if !c.LoadLists {
		if c.Rate > 0 {
			kv = append(kv, [2]string{"arrival", c.Arrival})
		} else {
			kv = append(kv, [2]string{"concurrency", strconv.Itoa(c.Concurrency)})
		}
	}
	return kv
}

// StepTemplate is the load generator's configuration every step of a
// sweep shares (sweep.TargetRunner's Template): the target, the per-step
// bounds and warm-up, --max-concurrency for rate steps. Each step sets
// its own level.
func (c *Choice) StepTemplate(t Target) loadgen.Config {
	warmup, warmupN, _ := c.WarmupValue() // checked by Validate
	p := Plan{Load: *c, Warmup: warmup, WarmupRequests: warmupN}
	cfg := p.LoadgenConfig(t)
	cfg.Concurrency, cfg.RateRPS = 0, 0
	return cfg
}

// SimConfig is the simulator's configuration for the plan on engine:
// the bounds and warm-up, and the load level, an open loop when arrivals
// is set. gen and arrivals are the plan's unless the command replaced
// them (a trace's stream, a traffic mix). Token times are streamed for
// the inter-token statistics, and a request over the context is an
// error record, as a server answers it.
func (p *Plan) SimConfig(engine simengine.Config, gen sim.Lengths, arrivals sim.Arrivals) sim.Config {
	c := &p.Load
	cfg := sim.Config{
		Engine: engine, Gen: gen, Requests: c.Requests, Duration: c.Duration,
		Warmup: p.Warmup, WarmupRequests: p.WarmupRequests, Ramp: c.Ramp,
		StreamTokenTimes: true, TooLongAsErrors: true,
	}
	if arrivals != nil {
		cfg.Arrivals, cfg.MaxConcurrency = arrivals, c.MaxConcurrency
	} else {
		cfg.Concurrency = c.Concurrency
	}
	return cfg
}

// CheckFits refuses synthetic lengths whose average request does not fit
// a simulated engine: over its max model len (of model), or, on an
// engine without chunked prefill, a prompt over the promptLimit tokens a
// step holds (0: none). A rare longer request is left to the run, where it
// is an HTTP 400 record, as a real server answers it. A dataset or a trace
// gives its own lengths and is not checked here.
func (c *Choice) CheckFits(maxModelLen int, model string, promptLimit int) error {
	if c.Dataset != "" || c.TracePath != "" {
		return nil
	}
	in, ierr := workload.ParseDist(c.Input)
	out, oerr := workload.ParseDist(c.Output)
	if ierr == nil && oerr == nil && in.Mean()+out.Mean() > float64(maxModelLen) {
		return badinput.Errorf("--input-tokens %s + --output-tokens %s average %.0f + %.0f = %.0f tokens per request, over the max model len %d of %s (lower them, or raise --max-model-len)",
			c.Input, c.Output, in.Mean(), out.Mean(), in.Mean()+out.Mean(), maxModelLen, model)
	}
	if ierr == nil && promptLimit > 0 && in.Mean() > float64(promptLimit) {
		return badinput.Errorf("--input-tokens %s averages %.0f prompt tokens, over the %d a step holds on an engine without chunked prefill, which refuses longer prompts (TensorRT-LLM's max_num_tokens; lower it, or raise --max-num-batched-tokens)",
			c.Input, in.Mean(), promptLimit)
	}
	return nil
}
