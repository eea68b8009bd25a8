package cli

import (
	"fmt"
	"math"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// probeFlags are --probe-rate and the probes' shape: short requests sent
// beside the main load (vLLM bench's --probe-request-rate idea), reported
// as a class of their own.
type probeFlags struct {
	rateRPS      float64
	inputTokens  int
	outputTokens int
}

// maxProbeTokens bounds a probe's lengths: a probe is a short request by
// definition, and its prompt is built per probe.
const maxProbeTokens = 4096

func (p *probeFlags) register(fs *pflag.FlagSet) {
	fs.Float64Var(&p.rateRPS, "probe-rate", 0, "send short probe requests at this many per second beside the main load and report their latency apart (what the load does to an unrelated user); 0: none")
	fs.IntVar(&p.inputTokens, "probe-input-tokens", 16, "prompt tokens of each probe")
	fs.IntVar(&p.outputTokens, "probe-output-tokens", 1, "output tokens (max_tokens) of each probe")
}

// validate checks the probe flags (exit 2 on bad values).
func (p *probeFlags) validate() error {
	switch {
	case p.rateRPS < 0 || math.IsNaN(p.rateRPS) || math.IsInf(p.rateRPS, 0) || p.rateRPS > 1000:
		return Usagef("--probe-rate %g: want probes per second between 0 and 1000", p.rateRPS)
	case p.inputTokens < 1 || p.inputTokens > maxProbeTokens:
		return Usagef("--probe-input-tokens %d: want 1 to %d", p.inputTokens, maxProbeTokens)
	case p.outputTokens < 1 || p.outputTokens > maxProbeTokens:
		return Usagef("--probe-output-tokens %d: want 1 to %d", p.outputTokens, maxProbeTokens)
	}
	return nil
}

// apply sets cfg's probes, prompts made by the main workload's tokenizer
// (like gen's, when it is a generator) so the server sees the asked length;
// each probe's prompt differs, so no probe is served from another's cache.
func (p *probeFlags) apply(cfg *loadgen.Config, gen any, seed uint64) error {
	if p.rateRPS == 0 {
		return nil
	}
	pg, err := p.generator(gen, seed)
	if err != nil {
		return err
	}
	cfg.ProbeRateRPS = p.rateRPS
	cfg.Probe = func(k int64) loadgen.Request {
		it := pg.Item(k)
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens}
	}
	return nil
}

// generator is the probes' workload (bench's and the simulator's).
func (p *probeFlags) generator(gen any, seed uint64) (*workload.Generator, error) {
	spec := workload.Spec{Seed: seed ^ 0x9e3779b97f4a7c15}
	if g, ok := gen.(*workload.Generator); ok {
		spec.Tokenizer, spec.PromptOverheadTokens = g.Spec().Tokenizer, g.Spec().PromptOverheadTokens
	}
	var err error
	if spec.Input, err = workload.ParseDist(fmt.Sprint(p.inputTokens)); err != nil {
		return nil, Usagef("--probe-input-tokens: %v", err)
	}
	if spec.Output, err = workload.ParseDist(fmt.Sprint(p.outputTokens)); err != nil {
		return nil, Usagef("--probe-output-tokens: %v", err)
	}
	pg, err := workload.NewGenerator(spec)
	if err != nil {
		return nil, Usagef("--probe-rate: %v", err)
	}
	return pg, nil
}

// note says what the probes were, for the report.
func (p *probeFlags) note() string {
	if p.rateRPS == 0 {
		return ""
	}
	return fmt.Sprintf("probes: %g/s of %d input, %d output tokens beside the main load; the overall figures leave them out, the per-class table shows them apart",
		p.rateRPS, p.inputTokens, p.outputTokens)
}

var classSummaries = report.ClassSummaries

// splitProbes leaves the probes out of a step's records (sweep.SplitProbes).
var splitProbes = sweep.SplitProbes
