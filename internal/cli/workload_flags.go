package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// workloadFlags declare the load flags that bench, sweep and sim share
// (loadsetup.Choice), so the three speak the same language.
type workloadFlags struct {
	loadsetup.Choice
	fs           *pflag.FlagSet
	scenarioFile string
	saveTo       string

	// Set during a run: how a real target's prompts are built
	// (resolvePrompts), the trace opened once per command, and what stops
	// reading it (Ctrl-C).
	prompts     loadsetup.Prompts
	openedTrace *workload.Trace
	traceCtx    context.Context
}

// maxInFlight and maxRateRPS bound the load (loadsetup's).
const (
	maxInFlight = loadsetup.MaxInFlight
	maxRateRPS  = loadsetup.MaxRateRPS
)

func (w *workloadFlags) register(fs *pflag.FlagSet, defaultConcurrency int, defaultRequests int64) {
	c := &w.Choice
	fs.StringVar(&c.Input, "input-tokens", "512", "prompt length distribution: 512, 256:1024 (uniform), normal:512,128, lognormal:512,128")
	fs.StringVar(&c.Output, "output-tokens", "128", "output length distribution (same forms as --input-tokens)")
	fs.StringVar(&c.Dataset, "dataset", "", "JSONL prompts or ShareGPT JSON file instead of synthetic prompts")
	fs.StringVar(&c.Tokenizer, "tokenizer", "cl100k_base", "tokenizer: cl100k_base, o200k_base, or a path to a HF tokenizer.json")
	fs.IntVar(&c.SharedPrefix, "shared-prefix", 0, "tokens of prefix shared by every prompt (0: every prompt unique); the same as --prefix-groups 1 --prefix-tokens N")
	fs.IntVar(&c.PrefixGroups, "prefix-groups", 0, "split the prompts into this many groups, each starting with its own shared prefix of --prefix-tokens (system prompts)")
	fs.IntVar(&c.PrefixTokens, "prefix-tokens", 0, "tokens of each prefix group's shared prefix (counted in --input-tokens)")
	fs.Var((*seedValue)(c), "seed", "seed for a reproducible workload (default: random)")
	fs.IntVar(&c.Concurrency, "concurrency", defaultConcurrency, "closed loop: requests kept in flight")
	fs.Float64Var(&c.Rate, "rate", 0, "open loop: arrivals per second (overrides --concurrency)")
	fs.StringVar(&c.Arrival, "arrival", "poisson", "open-loop arrival process: constant, poisson, gamma")
	fs.Float64Var(&c.Burstiness, "burstiness", 1, "gamma shape: 1 = Poisson, <1 burstier, >1 smoother")
	fs.IntVar(&c.MaxConcurrency, "max-concurrency", 0, "open loop: cap on requests in flight (0: none)")
	fs.Int64Var(&c.Requests, "requests", defaultRequests, "stop after this many requests (0: no count limit)")
	fs.DurationVar(&c.Duration, "duration", 0, "stop issuing after this long (0: no time limit)")
	fs.StringVar(&c.Warmup, "warmup", "", "warm-up excluded from statistics: a duration (10s) or a request count (20)")
	fs.DurationVar(&c.Ramp, "ramp", 0, "ramp the load up linearly over this long")
	fs.StringVar(&w.scenarioFile, scenarioFileFlag, "", "YAML scenario file of settings (flag: value); flags on the command line override it")
	registerTrace(fs, c)
	fs.StringVar(&w.saveTo, saveScenarioFlag, "", "write the resolved settings (seed included) to this YAML scenario file, to repeat the run exactly")
	w.fs = fs
}

// registerTargetLoad declares the load flags of the commands that load a
// real target (bench, sweep): how the load generator sends and stops.
func (w *workloadFlags) registerTargetLoad(fs *pflag.FlagSet, stopUsage string) {
	fs.BoolVar(&w.StopOversaturated, "stop-oversaturated", false, stopUsage)
	fs.BoolVar(&w.ContinuousUsage, "continuous-usage", false, "ask the server for usage on every streamed chunk (vLLM's stream_options.continuous_usage_stats), so chunks of several tokens are counted exactly; a server that does not know the field may refuse the requests")
}

// registerTrace declares the flags that replay a production trace instead
// of a synthetic workload (docs/workloads.md).
func registerTrace(fs *pflag.FlagSet, c *loadsetup.Choice) {
	t := &c.Replay
	fs.StringVar(&c.TracePath, "trace", "", "replay a trace file with its arrival times: Mooncake JSONL, Azure LLM CSV, BurstGPT CSV, or generic JSONL/CSV (knee's records.jsonl too)")
	fs.StringVar(&t.Format, "trace-format", "", "trace format: "+strings.Join(workload.TraceFormats, ", ")+" (default: detected)")
	fs.DurationVar(&t.Start, "trace-start", 0, "replay the trace from this far into it")
	fs.DurationVar(&t.End, "trace-end", 0, "replay the trace up to this far into it (0: to the end)")
	fs.Float64Var(&t.Speedup, "trace-speedup", 1, "divide the trace's gaps between arrivals by this factor (2: twice the rate)")
	fs.Float64Var(&t.Rate, "trace-rate", 0, "choose the speed-up that gives this mean arrival rate in req/s (overrides --trace-speedup)")
	fs.IntVar(&t.MaxContext, "trace-max-context", 0, "cut each request to this many prompt + output tokens (0: the simulated engine's max model len when knee simulates, else none)")
	fs.Float64Var(&t.Sample, "trace-sample", 1, "replay this fraction of the trace's requests (chosen by --seed)")
}

// given is the set of flags given on the command line or by a scenario file.
func given(fs *pflag.FlagSet) loadsetup.Given {
	g := loadsetup.Given{}
	fs.Visit(func(f *pflag.Flag) { g[f.Name] = true })
	return g
}

// validate checks the load flags together (loadsetup.Choice.Validate).
func (w *workloadFlags) validate() error {
	w.Given = given(w.fs)
	return w.Validate()
}

// checkOpenFiles bounds the connections a load holds by ulimit -n.
func (w *workloadFlags) checkOpenFiles(concurrency int, embedded bool) error {
	return w.CheckOpenFiles(concurrency, embedded, openFileLimit())
}

// generator builds the prompt/length generator, prompts built as resolved
// for the target.
func (w *workloadFlags) generator() (*workload.Generator, error) { return w.Generator(w.prompts) }

// saveScenario writes --save-scenario once the workload is planned (the
// seed is then resolved: recorded so the scenario repeats exactly). A
// trace replay's settings are not a scenario of lengths, so none is saved.
func (w *workloadFlags) saveScenario() error {
	if w.saveTo == "" || w.TracePath != "" {
		return nil
	}
	if err := w.fs.Set("seed", strconv.FormatUint(w.ResolvedSeed(), 10)); err != nil {
		return err
	}
	return saveScenario(w.fs, w.saveTo, w.ResolvedSettings())
}

// plan resolves the generator, the arrival schedule and the warm-up, and
// saves the scenario.
func (w *workloadFlags) plan() (loadsetup.Plan, error) {
	p, err := w.Plan(w.traceCtx, w.prompts, w.openedTrace)
	if err != nil {
		return p, err
	}
	w.openedTrace = p.Trace
	return p, w.saveScenario()
}

// openTrace opens --trace once per command (a sweep reuses it at every step).
func (w *workloadFlags) openTrace() (*workload.Trace, error) {
	if w.openedTrace != nil {
		return w.openedTrace, nil
	}
	tr, err := w.OpenTrace(w.traceCtx)
	if err != nil {
		return nil, err
	}
	w.openedTrace = tr
	return tr, nil
}

func (w *workloadFlags) loadString() string  { return w.LoadString(w.openedTrace) }
func (w *workloadFlags) config() [][2]string { return w.Config(w.openedTrace, w.prompts) }
func (w *workloadFlags) describe() string    { return w.Describe(w.openedTrace) }

// traceForPrompts is the trace with the prompt builder a real target needs:
// the server's tokenizer when it has /tokenize, and what its chat template
// adds to every prompt.
func (w *workloadFlags) traceForPrompts(tr *workload.Trace) *workload.Trace {
	if w.prompts.Server == nil && w.prompts.Overhead == 0 {
		return tr
	}
	var tk workload.Tokenizer // nil unless the server tokenizes: a nil *ServerTokenizer would not be
	if w.prompts.Server != nil {
		tk = w.prompts.Server
	}
	return tr.WithPrompts(tk, w.prompts.Overhead)
}

// seedValue is the --seed flag: unset means a random seed.
type seedValue loadsetup.Choice

func (v *seedValue) String() string {
	if v == nil || !v.SeedSet {
		return ""
	}
	return strconv.FormatUint(v.Seed, 10)
}

func (v *seedValue) Type() string { return "int" }

func (v *seedValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want a non-negative integer, got %q", s)
	}
	v.Seed, v.SeedSet = n, true
	return nil
}

// arrivals builds the open-loop schedule of --rate, or nil for a closed loop.
func (w *workloadFlags) arrivals() (workload.Arrivals, error) {
	if w.Rate == 0 {
		return nil, nil
	}
	return w.ArrivalsAt(w.Rate)
}
