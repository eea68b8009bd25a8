package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// traceFlags replay a production trace instead of a synthetic workload
// (docs/workloads.md); bench, sweep, sim and sim sweep share them through
// workloadFlags.
type traceFlags struct {
	path string
	workload.Replay
	// ctx, set by the command, stops reading the trace on Ctrl-C.
	ctx context.Context
}

func (t *traceFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.path, "trace", "", "replay a trace file with its arrival times: Mooncake JSONL, Azure LLM CSV, BurstGPT CSV, or generic JSONL/CSV (knee's records.jsonl too)")
	fs.StringVar(&t.Format, "trace-format", "", "trace format: "+strings.Join(workload.TraceFormats, ", ")+" (default: detected)")
	fs.DurationVar(&t.Start, "trace-start", 0, "replay the trace from this far into it")
	fs.DurationVar(&t.End, "trace-end", 0, "replay the trace up to this far into it (0: to the end)")
	fs.Float64Var(&t.Speedup, "trace-speedup", 1, "divide the trace's gaps between arrivals by this factor (2: twice the rate)")
	fs.Float64Var(&t.Rate, "trace-rate", 0, "choose the speed-up that gives this mean arrival rate in req/s (overrides --trace-speedup)")
	fs.IntVar(&t.MaxContext, "trace-max-context", 0, "cut each request to this many prompt + output tokens (0: the simulated engine's max model len when knee simulates, else none)")
	fs.Float64Var(&t.Sample, "trace-sample", 1, "replay this fraction of the trace's requests (chosen by --seed)")
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
	return t.Check()
}

// open reads and checks the trace; maxContext is the simulated engine's
// max model len (0 against a real target).
func (t *traceFlags) open(seed uint64, tok workload.Tokenizer, maxContext int) (*workload.Trace, error) {
	return t.Open(t.ctx, t.path, seed, tok, maxContext)
}

// config lists the trace settings for reports and stored runs.
func (t *traceFlags) config(tr *workload.Trace) [][2]string { return t.ConfigKV(t.path, tr) }

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
