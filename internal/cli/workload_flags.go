package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// workloadFlags are the workload and load-model flags that bench, sweep and
// sim share, so the three speak the same language.
type workloadFlags struct {
	input, output string
	dataset       string
	tokenizer     string
	sharedPrefix  int
	prefixGroups  int
	prefixTokens  int
	seed          uint64
	seedSet       bool

	concurrency    int
	rate           float64
	arrival        string
	burstiness     float64
	maxConcurrency int

	requests int64
	duration time.Duration
	warmup   string
	ramp     time.Duration

	// Set by resolvePrompts for a real target: the server's tokenizer when
	// it has /tokenize, and the tokens it adds to every prompt.
	serverTok      *workload.ServerTokenizer
	promptOverhead int

	fs           *pflag.FlagSet
	scenarioFile string
	saveTo       string
	// loadLists: --concurrency and --rate are lists of steps (sweeps),
	// checked by the sweep, not here.
	loadLists bool

	trace traceFlags
	// simMaxContext is the simulated engine's max model len, set by the
	// commands that simulate, so a trace is cut to what the engine serves.
	simMaxContext int
	openedTrace   *workload.Trace
}

// maxInFlight bounds --concurrency and --max-concurrency, and maxRateRPS
// --rate: each request in flight is a connection and a goroutine, and
// beyond these the client, not the server, is what a run would measure.
const (
	maxInFlight = 100_000
	maxRateRPS  = 100_000
)

func (w *workloadFlags) register(fs *pflag.FlagSet, defaultConcurrency int, defaultRequests int64) {
	fs.StringVar(&w.input, "input-tokens", "512", "prompt length distribution: 512, 256:1024 (uniform), normal:512,128, lognormal:512,128")
	fs.StringVar(&w.output, "output-tokens", "128", "output length distribution (same forms as --input-tokens)")
	fs.StringVar(&w.dataset, "dataset", "", "JSONL prompts or ShareGPT JSON file instead of synthetic prompts")
	fs.StringVar(&w.tokenizer, "tokenizer", "cl100k_base", "tokenizer: cl100k_base, o200k_base, or a path to a HF tokenizer.json")
	fs.IntVar(&w.sharedPrefix, "shared-prefix", 0, "tokens of prefix shared by every prompt (0: every prompt unique); the same as --prefix-groups 1 --prefix-tokens N")
	fs.IntVar(&w.prefixGroups, "prefix-groups", 0, "split the prompts into this many groups, each starting with its own shared prefix of --prefix-tokens (system prompts)")
	fs.IntVar(&w.prefixTokens, "prefix-tokens", 0, "tokens of each prefix group's shared prefix (counted in --input-tokens)")
	fs.Var((*seedValue)(w), "seed", "seed for a reproducible workload (default: random)")
	fs.IntVar(&w.concurrency, "concurrency", defaultConcurrency, "closed loop: requests kept in flight")
	fs.Float64Var(&w.rate, "rate", 0, "open loop: arrivals per second (overrides --concurrency)")
	fs.StringVar(&w.arrival, "arrival", "poisson", "open-loop arrival process: constant, poisson, gamma")
	fs.Float64Var(&w.burstiness, "burstiness", 1, "gamma shape: 1 = Poisson, <1 burstier, >1 smoother")
	fs.IntVar(&w.maxConcurrency, "max-concurrency", 0, "open loop: cap on requests in flight (0: none)")
	fs.Int64Var(&w.requests, "requests", defaultRequests, "stop after this many requests (0: no count limit)")
	fs.DurationVar(&w.duration, "duration", 0, "stop issuing after this long (0: no time limit)")
	fs.StringVar(&w.warmup, "warmup", "", "warm-up excluded from statistics: a duration (10s) or a request count (20)")
	fs.DurationVar(&w.ramp, "ramp", 0, "ramp the load up linearly over this long")
	fs.StringVar(&w.scenarioFile, scenarioFileFlag, "", "YAML scenario file of settings (flag: value); flags on the command line override it")
	w.trace.register(fs)
	fs.StringVar(&w.saveTo, saveScenarioFlag, "", "write the resolved settings (seed included) to this YAML scenario file, to repeat the run exactly")
	w.fs = fs
}

// validate checks the load flags together; errors name the flag. A
// --duration given without --requests is a time limit: the default request
// count does not cut it short.
func (w *workloadFlags) validate() error {
	if w.duration > 0 && !flagGiven(w.fs, "requests") {
		w.requests = 0
	}
	if err := w.validateLoadLevel(); err != nil {
		return err
	}
	switch {
	case w.rate < 0:
		return Usagef("--rate %v: want a positive number of requests per second", w.rate)
	case w.rate == 0 && w.concurrency <= 0:
		return Usagef("--concurrency %d: want at least 1 (or give --rate for an open loop)", w.concurrency)
	case w.requests < 0:
		return Usagef("--requests %d: want 0 (no limit) or more", w.requests)
	case w.duration < 0:
		return Usagef("--duration %v: want a positive duration", w.duration)
	case w.ramp < 0:
		return Usagef("--ramp %v: want a positive duration (0: no ramp)", w.ramp)
	case w.requests == 0 && w.duration == 0:
		return Usagef("give --requests or --duration: every load must be bounded")
	case w.burstiness <= 0:
		return Usagef("--burstiness %v: want a positive number", w.burstiness)
	case w.sharedPrefix < 0:
		return Usagef("--shared-prefix %d: want 0 or more tokens", w.sharedPrefix)
	case w.prefixTokens < 0 || w.prefixGroups < 0:
		return Usagef("--prefix-groups %d --prefix-tokens %d: want 0 or more", w.prefixGroups, w.prefixTokens)
	case w.sharedPrefix > 0 && (w.prefixTokens > 0 || w.prefixGroups > 1):
		return Usagef("--shared-prefix is --prefix-groups 1 --prefix-tokens N: give one or the other")
	case w.prefixGroups > 0 && w.prefixTokens == 0:
		return Usagef("--prefix-groups %d needs --prefix-tokens (each group's shared prefix length)", w.prefixGroups)
	}
	if _, _, err := w.warmupValue(); err != nil {
		return err
	}
	if w.fs != nil {
		return w.trace.validate(w.fs, w.loadLists)
	}
	return nil
}

// validateLoadLevel checks the single load level of bench and sim: flags
// that would be silently ignored are refused.
func (w *workloadFlags) validateLoadLevel() error {
	if w.loadLists {
		return nil
	}
	rateSet := flagGiven(w.fs, "rate")
	switch {
	case rateSet && !(w.rate > 0):
		return Usagef("--rate %v: want a positive number of requests per second (for a closed loop, give --concurrency instead)", w.rate)
	case w.rate > maxRateRPS:
		return Usagef("--rate %v: at most %d requests per second (beyond that knee measures itself, not the server)", w.rate, maxRateRPS)
	case rateSet && flagGiven(w.fs, "concurrency"):
		return Usagef("give --concurrency (closed loop) or --rate (open loop), not both; --max-concurrency caps an open loop")
	case w.concurrency > maxInFlight:
		return Usagef("--concurrency %d: at most %d requests in flight (each is a connection)", w.concurrency, maxInFlight)
	case w.maxConcurrency > maxInFlight:
		return Usagef("--max-concurrency %d: at most %d requests in flight (each is a connection)", w.maxConcurrency, maxInFlight)
	}
	return w.openLoopOnly(rateSet)
}

// checkOpenFiles refuses a load whose requests in flight need more
// connections than this process may open: past the limit, dials and
// accepts fail with "too many open files" and the run measures that. With
// the embedded server each request holds two descriptors (both ends).
// concurrency is the closed loop's (0 in an open loop, where
// --max-concurrency is what bounds the connections).
func (w *workloadFlags) checkOpenFiles(concurrency int, embedded bool) error {
	flagName, inFlight := "--concurrency", concurrency
	if w.rate > 0 || concurrency == 0 {
		flagName, inFlight = "--max-concurrency", w.maxConcurrency
	}
	if w.requests > 0 && int64(inFlight) > w.requests {
		inFlight = int(w.requests) // no more at once than there are requests
	}
	limit := openFileLimit()
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
		return Usagef("%s %d: this process may open %d files (ulimit -n) and each request in flight holds a connection%s: at most %d here; raise ulimit -n, or lower the load",
			flagName, inFlight, limit, where, most)
	}
	return nil
}

// openLoopOnly refuses open-loop settings given without an open loop.
func (w *workloadFlags) openLoopOnly(open bool) error {
	if open {
		if flagGiven(w.fs, "burstiness") && w.arrival != "gamma" {
			return Usagef("--burstiness applies to --arrival gamma (got --arrival %s)", w.arrival)
		}
		return nil
	}
	for _, name := range []string{"burstiness", "arrival", "max-concurrency"} {
		if flagGiven(w.fs, name) {
			return Usagef("--%s applies to an open loop: give --rate too (it would be ignored otherwise)", name)
		}
	}
	return nil
}

// limitNote says which limit ended the run's issuing: stoppedBy is
// "requests" or "duration" (loadgen.Stop*), issued the requests sent and
// lastSend the last one's send time.
func (w *workloadFlags) limitNote(stoppedBy string, issued int64, lastSend time.Duration) string {
	switch stoppedBy {
	case "requests":
		dflt := ""
		if !flagGiven(w.fs, "requests") {
			dflt = " (the default; give --duration alone for a time limit)"
		}
		return fmt.Sprintf("ended by the request limit: --requests %d%s, the last sent at %.1f s", w.requests, dflt, lastSend.Seconds())
	case "duration":
		return fmt.Sprintf("ended by the time limit: --duration %v, %d requests sent", w.duration, issued)
	}
	return ""
}

// warmupValue parses --warmup as a duration or a request count.
func (w *workloadFlags) warmupValue() (time.Duration, int, error) {
	s := strings.TrimSpace(w.warmup)
	if s == "" {
		return 0, 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return 0, n, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, 0, nil
	}
	return 0, 0, Usagef("--warmup %q: want a duration such as 10s or a request count such as 20", s)
}

// resolvedSeed returns the seed to use, drawing a random one when none was asked.
func (w *workloadFlags) resolvedSeed() uint64 {
	if !w.seedSet {
		w.seed, w.seedSet = workload.RandomSeed(), true
	}
	return w.seed
}

// generator builds the prompt/length generator; bad distributions are usage errors.
func (w *workloadFlags) generator() (*workload.Generator, error) {
	in, err := workload.ParseDist(w.input)
	if err != nil {
		return nil, Usagef("--input-tokens: %v", err)
	}
	out, err := workload.ParseDist(w.output)
	if err != nil {
		return nil, Usagef("--output-tokens: %v", err)
	}
	var tok workload.Tokenizer
	if w.serverTok != nil {
		tok = w.serverTok
	} else if tok, err = workload.LoadTokenizer(w.tokenizer); err != nil {
		return nil, Usagef("--tokenizer: %v", err)
	}
	g, err := workload.NewGenerator(workload.Spec{
		Input: in, Output: out, Dataset: w.dataset, SharedPrefixTokens: w.prefixLen(), PrefixGroups: w.prefixGroups,
		Seed: w.resolvedSeed(), Tokenizer: tok, PromptOverheadTokens: w.promptOverhead,
	})
	if err != nil {
		return nil, Usagef("workload: %v", err)
	}
	if w.saveTo != "" {
		// The seed is now resolved: record it so the scenario repeats exactly.
		if err := w.fs.Set("seed", strconv.FormatUint(w.seed, 10)); err != nil {
			return nil, err
		}
		if err := saveScenario(w.fs, w.saveTo, w.resolvedSettings()); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// resolvedSettings are the workload's flags as they resolved, defaults
// included, for a saved scenario: lengths, tokenizer, the load level and
// its bounds. Flags that do not apply (an open loop's --arrival in a
// closed loop) are left out, so the file repeats without being refused.
func (w *workloadFlags) resolvedSettings() [][2]string {
	kv := [][2]string{{"input-tokens", w.input}, {"output-tokens", w.output}, {"tokenizer", w.tokenizer}}
	if w.requests > 0 {
		kv = append(kv, [2]string{"requests", strconv.FormatInt(w.requests, 10)})
	}
	if !w.loadLists {
		if w.rate > 0 {
			kv = append(kv, [2]string{"arrival", w.arrival})
		} else {
			kv = append(kv, [2]string{"concurrency", strconv.Itoa(w.concurrency)})
		}
	}
	return kv
}

// workloadPlan is what the flags resolve to for one run.
type workloadPlan struct {
	gen            *workload.Generator // nil with a trace
	trace          *workload.Trace     // a trace replay: open a Stream per run
	arrivals       workload.Arrivals   // nil: closed loop (or a trace)
	warmup         time.Duration
	warmupRequests int
}

// plan resolves the generator, the arrival schedule and the warm-up.
func (w *workloadFlags) plan() (workloadPlan, error) {
	if w.trace.path != "" {
		tr, err := w.openTrace()
		if err != nil {
			return workloadPlan{}, err
		}
		warmup, warmupN, err := w.warmupValue()
		if err != nil {
			return workloadPlan{}, err
		}
		return workloadPlan{trace: tr, warmup: warmup, warmupRequests: warmupN}, nil
	}
	gen, err := w.generator()
	if err != nil {
		return workloadPlan{}, err
	}
	arrivals, err := w.arrivals()
	if err != nil {
		return workloadPlan{}, err
	}
	warmup, warmupN, err := w.warmupValue()
	if err != nil {
		return workloadPlan{}, err
	}
	return workloadPlan{gen: gen, arrivals: arrivals, warmup: warmup, warmupRequests: warmupN}, nil
}

// openTrace opens --trace once per command (a sweep reuses it at every
// step) and bounds the run by the trace: its requests, unless --requests
// asks for fewer.
func (w *workloadFlags) openTrace() (*workload.Trace, error) {
	if w.openedTrace != nil {
		return w.openedTrace, nil
	}
	tok, err := workload.LoadTokenizer(w.tokenizer)
	if err != nil {
		return nil, Usagef("--tokenizer: %v", err)
	}
	tr, err := w.trace.open(w.resolvedSeed(), tok, w.simMaxContext)
	if err != nil {
		return nil, err
	}
	explicit := false
	if w.fs != nil {
		w.fs.Visit(func(f *pflag.Flag) { explicit = explicit || f.Name == "requests" })
	}
	if kept := int64(tr.Info().Kept); !explicit || w.requests == 0 || w.requests > kept {
		w.requests = kept
	}
	w.openedTrace = tr
	return tr, nil
}

// arrivals builds the open-loop schedule, or nil for a closed loop.
func (w *workloadFlags) arrivals() (workload.Arrivals, error) {
	if w.rate == 0 {
		return nil, nil
	}
	a, err := workload.NewArrivals(w.arrival, w.rate, w.burstiness, w.resolvedSeed()^0x9e3779b97f4a7c15)
	if err != nil {
		return nil, Usagef("--arrival: %v", err)
	}
	return a, nil
}

// loadString describes the load model in words for reports.
func (w *workloadFlags) loadString() string {
	var b strings.Builder
	if w.openedTrace != nil {
		info := w.openedTrace.Info()
		fmt.Fprintf(&b, "open loop, trace replay at %.4gx (%.3g req/s), %d requests", info.Speedup, info.MeanRateRPS, w.requests)
		if w.duration > 0 {
			fmt.Fprintf(&b, ", %v", w.duration)
		}
		return b.String()
	}
	if w.rate > 0 {
		fmt.Fprintf(&b, "open loop, %g req/s %s", w.rate, w.arrival)
		if w.arrival == "gamma" {
			fmt.Fprintf(&b, " (burstiness %g)", w.burstiness)
		}
		if w.maxConcurrency > 0 {
			fmt.Fprintf(&b, ", max %d in flight", w.maxConcurrency)
		}
	} else {
		fmt.Fprintf(&b, "closed loop, concurrency %d", w.concurrency)
	}
	if w.requests > 0 {
		fmt.Fprintf(&b, ", %d requests", w.requests)
	}
	if w.duration > 0 {
		fmt.Fprintf(&b, ", %v", w.duration)
	}
	if w.warmup != "" {
		fmt.Fprintf(&b, ", warm-up %s", w.warmup)
	}
	return b.String()
}

// config lists the resolved workload settings for reports and stored runs.
func (w *workloadFlags) config() [][2]string {
	if w.openedTrace != nil {
		c := append(w.trace.config(w.openedTrace), [2]string{"tokenizer", w.tokenizer}, [2]string{"seed", strconv.FormatUint(w.resolvedSeed(), 10)},
			[2]string{"requests", strconv.FormatInt(w.requests, 10)})
		if w.duration > 0 {
			c = append(c, [2]string{"duration", w.duration.String()})
		}
		if w.warmup != "" {
			c = append(c, [2]string{"warmup", w.warmup})
		}
		return c
	}
	c := [][2]string{
		{"input_tokens", w.input}, {"output_tokens", w.output}, {"tokenizer", w.tokenizer},
		{"seed", strconv.FormatUint(w.resolvedSeed(), 10)},
	}
	if w.dataset != "" {
		c = append(c, [2]string{"dataset", w.dataset})
	}
	if w.serverTok != nil {
		c = append(c, [2]string{"prompts_built_with", w.serverTok.Name()})
	}
	if w.promptOverhead > 0 {
		c = append(c, [2]string{"prompt_overhead_tokens", strconv.Itoa(w.promptOverhead)})
	}
	if w.prefixTokens > 0 {
		c = append(c, [2]string{"prefix_groups", strconv.Itoa(max(1, w.prefixGroups))}, [2]string{"prefix_tokens", strconv.Itoa(w.prefixTokens)})
	}
	if w.sharedPrefix > 0 {
		c = append(c, [2]string{"shared_prefix_tokens", strconv.Itoa(w.sharedPrefix)})
	}
	if w.rate > 0 {
		c = append(c, [2]string{"rate_rps", strconv.FormatFloat(w.rate, 'g', -1, 64)}, [2]string{"arrival", w.arrival})
		if w.arrival == "gamma" {
			c = append(c, [2]string{"burstiness", strconv.FormatFloat(w.burstiness, 'g', -1, 64)})
		}
		if w.maxConcurrency > 0 {
			c = append(c, [2]string{"max_concurrency", strconv.Itoa(w.maxConcurrency)})
		}
	} else {
		c = append(c, [2]string{"concurrency", strconv.Itoa(w.concurrency)})
	}
	if w.requests > 0 {
		c = append(c, [2]string{"requests", strconv.FormatInt(w.requests, 10)})
	}
	if w.duration > 0 {
		c = append(c, [2]string{"duration", w.duration.String()})
	}
	if w.warmup != "" {
		c = append(c, [2]string{"warmup", w.warmup})
	}
	if w.ramp > 0 {
		c = append(c, [2]string{"ramp", w.ramp.String()})
	}
	return c
}

// seedValue is the --seed flag: unset means a random seed.
type seedValue workloadFlags

func (v *seedValue) String() string {
	if v == nil || !v.seedSet {
		return ""
	}
	return strconv.FormatUint(v.seed, 10)
}

func (v *seedValue) Type() string { return "int" }

func (v *seedValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want a non-negative integer, got %q", s)
	}
	v.seed, v.seedSet = n, true
	return nil
}

// prefixLen is the shared prefix length of every prefix group.
func (w *workloadFlags) prefixLen() int { return max(w.sharedPrefix, w.prefixTokens) }

// reuseNote states the prefix reuse the synthetic workload offers over its
// first n requests: the hit rate an infinite prefix cache would get.
func (w *workloadFlags) reuseNote(gen *workload.Generator, n int64) string {
	if gen == nil || w.prefixLen() == 0 || w.dataset != "" || n <= 0 || n > 10_000_000 {
		return ""
	}
	reused, total := gen.PrefixReuse(n)
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("prefix reuse offered: %.1f%% of prompt tokens (the hit rate of an infinite prefix cache; %d group(s) of a %d-token shared prefix over %d requests)",
		100*float64(reused)/float64(total), max(1, w.prefixGroups), w.prefixLen(), n)
}
