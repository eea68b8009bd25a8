package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// traceFlags replay a production trace instead of a synthetic workload
// (docs/workloads.md); bench, sweep, sim and sim sweep share them through
// workloadFlags.
type traceFlags struct {
	path, format string
	start, end   time.Duration
	speedup      float64
	rate         float64
	maxContext   int
	sample       float64
	// ctx, set by the command, stops reading the trace on Ctrl-C.
	ctx context.Context
}

func (t *traceFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.path, "trace", "", "replay a trace file with its arrival times: Mooncake JSONL, Azure LLM CSV, BurstGPT CSV, or generic JSONL/CSV (knee's records.jsonl too)")
	fs.StringVar(&t.format, "trace-format", "", "trace format: "+strings.Join(workload.TraceFormats, ", ")+" (default: detected)")
	fs.DurationVar(&t.start, "trace-start", 0, "replay the trace from this far into it")
	fs.DurationVar(&t.end, "trace-end", 0, "replay the trace up to this far into it (0: to the end)")
	fs.Float64Var(&t.speedup, "trace-speedup", 1, "divide the trace's gaps between arrivals by this factor (2: twice the rate)")
	fs.Float64Var(&t.rate, "trace-rate", 0, "choose the speed-up that gives this mean arrival rate in req/s (overrides --trace-speedup)")
	fs.IntVar(&t.maxContext, "trace-max-context", 0, "cut each request to this many prompt + output tokens (0: the simulated engine's max model len when knee simulates, else none)")
	fs.Float64Var(&t.sample, "trace-sample", 1, "replay this fraction of the trace's requests (chosen by --seed)")
}

// given reports whether any trace option was set without --trace.
func (t *traceFlags) validate(fs *pflag.FlagSet, sweeping bool) error {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	if t.path == "" {
		for _, n := range []string{"trace-format", "trace-start", "trace-end", "trace-speedup", "trace-rate", "trace-max-context", "trace-sample"} {
			if set[n] {
				return Usagef("--%s needs --trace FILE", n)
			}
		}
		return nil
	}
	if sweeping && set["concurrency"] {
		return Usagef("a sweep over a trace steps its rate: give --rate R1,R2,... (each step replays the trace at the speed-up that gives that mean rate) or --rate auto, not --concurrency")
	}
	for _, n := range []string{"rate", "concurrency", "arrival", "burstiness", "dataset", "input-tokens", "output-tokens", "shared-prefix", "prefix-groups", "prefix-tokens", "ramp"} {
		if set[n] && !(sweeping && n == "rate") {
			return Usagef("--%s does not apply with --trace: the trace gives the arrivals and lengths", n)
		}
	}
	switch {
	case !(t.speedup > 0):
		return Usagef("--trace-speedup %v: want a positive factor", t.speedup)
	case t.rate < 0:
		return Usagef("--trace-rate %v: want a positive rate in req/s", t.rate)
	case !(t.sample > 0 && t.sample <= 1):
		return Usagef("--trace-sample %v: want a fraction in (0, 1]", t.sample)
	case t.maxContext < 0:
		return Usagef("--trace-max-context %d: want 0 or more tokens", t.maxContext)
	case t.start < 0 || t.end < 0 || (t.end > 0 && t.end <= t.start):
		return Usagef("--trace-start %v --trace-end %v: want 0 <= start < end", t.start, t.end)
	}
	return nil
}

// open reads and checks the trace; maxContext is the simulated engine's
// max model len (0 against a real target). Errors are usage errors naming
// the file and line.
func (t *traceFlags) open(seed uint64, tok workload.Tokenizer, maxContext int) (*workload.Trace, error) {
	if t.maxContext > 0 {
		maxContext = t.maxContext
	}
	tr, err := workload.OpenTrace(t.path, workload.TraceOptions{
		Format: t.format, Start: t.start, End: t.end, Speedup: t.speedup, TargetRateRPS: t.rate,
		MaxContext: maxContext, Sample: t.sample, Seed: seed, Tokenizer: tok, Context: t.ctx,
	})
	if err != nil {
		return nil, Usagef("--trace: %v", err)
	}
	return tr, nil
}

// config lists the trace settings for reports and stored runs.
func (t *traceFlags) config(tr *workload.Trace) [][2]string {
	info := tr.Info()
	c := [][2]string{{"trace", t.path}, {"trace_format", info.Format}, {"trace_speedup", strconv.FormatFloat(info.Speedup, 'g', 6, 64)}}
	if t.start > 0 || t.end > 0 {
		c = append(c, [2]string{"trace_window", fmt.Sprintf("%v..%v", t.start, t.end)})
	}
	if t.sample < 1 {
		c = append(c, [2]string{"trace_sample", strconv.FormatFloat(t.sample, 'g', -1, 64)})
	}
	if t.maxContext > 0 {
		c = append(c, [2]string{"trace_max_context", strconv.Itoa(t.maxContext)})
	}
	return c
}

// traceForPrompts is the trace with the prompt builder a real target needs:
// the server's tokenizer when it has /tokenize, and what its chat template
// adds to every prompt.
func (w *workloadFlags) traceForPrompts(tr *workload.Trace) *workload.Trace {
	if w.serverTok == nil && w.promptOverhead == 0 {
		return tr
	}
	var tk workload.Tokenizer // nil unless the server tokenizes: a nil *ServerTokenizer would not be
	if w.serverTok != nil {
		tk = w.serverTok
	}
	return tr.WithPrompts(tk, w.promptOverhead)
}

// describe names the workload for sweep notes.
func (w *workloadFlags) describe() string {
	if w.openedTrace != nil {
		return w.openedTrace.Info().String()
	}
	return fmt.Sprintf("input %s, output %s tokens", w.input, w.output)
}
