package loadsetup

import (
	"fmt"
	"math"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/workload"
)

// Probes are short requests sent beside the main load (vLLM bench's
// --probe-request-rate idea), reported as a class of their own: what the
// load does to an unrelated user. RateRPS 0: none.
type Probes struct {
	RateRPS                   float64
	InputTokens, OutputTokens int
}

// MaxProbeTokens bounds a probe's lengths: a probe is a short request by
// definition, and its prompt is built per probe.
const MaxProbeTokens = 4096

// Validate checks the probe settings; errors name the flag.
func (p *Probes) Validate() error {
	switch {
	case p.RateRPS < 0 || math.IsNaN(p.RateRPS) || math.IsInf(p.RateRPS, 0) || p.RateRPS > 1000:
		return badinput.Errorf("--probe-rate %g: want probes per second between 0 and 1000", p.RateRPS)
	case p.InputTokens < 1 || p.InputTokens > MaxProbeTokens:
		return badinput.Errorf("--probe-input-tokens %d: want 1 to %d", p.InputTokens, MaxProbeTokens)
	case p.OutputTokens < 1 || p.OutputTokens > MaxProbeTokens:
		return badinput.Errorf("--probe-output-tokens %d: want 1 to %d", p.OutputTokens, MaxProbeTokens)
	}
	return nil
}

// Apply sets cfg's probes, prompts made by the main workload's tokenizer
// (like gen's, when it is a generator) so the server sees the asked length;
// each probe's prompt differs, so no probe is served from another's cache.
func (p *Probes) Apply(cfg *loadgen.Config, gen any, seed uint64) error {
	if p.RateRPS == 0 {
		return nil
	}
	pg, err := p.generator(gen, seed)
	if err != nil {
		return err
	}
	cfg.ProbeRateRPS = p.RateRPS
	cfg.Probe = func(k int64) loadgen.Request {
		it := pg.Item(k)
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens}
	}
	return nil
}

// Sim is the simulator's probes beside a load of gen (nil: a trace's).
func (p *Probes) Sim(gen *workload.Generator, seed uint64) (sim.Probes, error) {
	if p.RateRPS == 0 {
		return sim.Probes{}, nil
	}
	var base any
	if gen != nil { // a trace has none
		base = gen
	}
	pg, err := p.generator(base, seed)
	if err != nil {
		return sim.Probes{}, err
	}
	return sim.Probes{RateRPS: p.RateRPS, Gen: pg}, nil
}

// generator is the probes' workload (bench's and the simulator's).
func (p *Probes) generator(gen any, seed uint64) (*workload.Generator, error) {
	spec := workload.Spec{Seed: seed ^ 0x9e3779b97f4a7c15}
	if g, ok := gen.(*workload.Generator); ok {
		spec.Tokenizer, spec.PromptOverheadTokens = g.Spec().Tokenizer, g.Spec().PromptOverheadTokens
	}
	var err error
	if spec.Input, err = workload.ParseDist(fmt.Sprint(p.InputTokens)); err != nil {
		return nil, badinput.Errorf("--probe-input-tokens: %v", err)
	}
	if spec.Output, err = workload.ParseDist(fmt.Sprint(p.OutputTokens)); err != nil {
		return nil, badinput.Errorf("--probe-output-tokens: %v", err)
	}
	pg, err := workload.NewGenerator(spec)
	if err != nil {
		return nil, badinput.Errorf("--probe-rate: %v", err)
	}
	return pg, nil
}

// Note says what the probes were, for the report ("" without probes).
func (p *Probes) Note() string {
	if p.RateRPS == 0 {
		return ""
	}
	return fmt.Sprintf("probes: %g/s of %d input, %d output tokens beside the main load; the overall figures leave them out, the per-class table shows them apart",
		p.RateRPS, p.InputTokens, p.OutputTokens)
}

// Classes is the run's classes with the probes' last, when there are
// probes: a run of probes alone beside the load has two classes.
func (p *Probes) Classes(names []string) []string {
	if p.RateRPS == 0 {
		return names
	}
	if names == nil {
		names = []string{report.MainClass}
	}
	return append(names, record.ProbeClass)
}
