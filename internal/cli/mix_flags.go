package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// mixFlags is --mix: a traffic mix file of classes (tenants, LoRA
// adapters) with their own shapes, model names and objectives.
type mixFlags struct {
	path string
	mix  *workload.Mix
	slos map[string]slo.Set // each class's own objectives
}

func (m *mixFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&m.path, "mix", "", "traffic mix YAML: classes with a share of the requests, input/output lengths, a model or LoRA adapter name and their own SLOs, reported per class")
}

// load reads the mix file and parses every class's objectives; errors
// name the file and line (exit 2).
func (m *mixFlags) load(fs *pflag.FlagSet) error {
	if m.path == "" {
		return nil
	}
	for _, other := range []string{"dataset", "trace", "sessions", "input-tokens", "output-tokens"} {
		if flagGiven(fs, other) {
			return Usagef("--mix gives each class its own lengths: give no --%s with it", other)
		}
	}
	mix, err := workload.LoadMix(m.path)
	if err != nil {
		return Usagef("--mix %v", err)
	}
	m.mix, m.slos = mix, map[string]slo.Set{}
	for _, c := range mix.Classes {
		for j, expr := range c.SLOs {
			o, err := slo.Parse(expr)
			if err != nil {
				return Usagef("--mix %s:%d: class %s: %v", m.path, c.SLOLines[j], c.Name, err)
			}
			m.slos[c.Name] = append(m.slos[c.Name], o)
		}
	}
	return nil
}

// adapters lists the model names the classes send (for the embedded
// server to answer for).
func (m *mixFlags) adapters() []string {
	if m.mix == nil {
		return nil
	}
	var out []string
	for _, c := range m.mix.Classes {
		if c.Model != "" && !slices.Contains(out, c.Model) {
			out = append(out, c.Model)
		}
	}
	return out
}

// names are the classes in file order (nil without a mix).
func (m *mixFlags) names() []string {
	if m.mix == nil {
		return nil
	}
	return m.mix.Names()
}

// seed is the mix's seed unless --seed was given.
func (m *mixFlags) seed(fs *pflag.FlagSet, wl *workloadFlags) uint64 {
	if m.mix.HasSeed && !flagGiven(fs, "seed") {
		return m.mix.Seed
	}
	return wl.resolvedSeed()
}

// source builds the request source: each request's class drawn by share,
// its prompt from that class's lengths (base's tokenizer and prefixes),
// its model the class's.
func (m *mixFlags) source(base any, seed uint64) (loadgen.Source, error) {
	var spec workload.Spec
	if g, ok := base.(*workload.Generator); ok {
		spec = g.Spec()
	}
	mg, err := workload.NewMixGenerator(m.mix, spec, seed)
	if err != nil {
		return nil, Usagef("--mix %v", err)
	}
	return func(i int64) loadgen.Request {
		it, k := mg.Item(i)
		c := &m.mix.Classes[k]
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens,
			Class: c.Name, Model: c.Model}
	}, nil
}

// note describes the mix for the report.
func (m *mixFlags) note(seed uint64) string {
	parts := make([]string, len(m.mix.Classes))
	for i, c := range m.mix.Classes {
		model := "base model"
		if c.Model != "" {
			model = c.Model
		}
		parts[i] = fmt.Sprintf("%s %.0f%% (%s in, %s out, %s)", c.Name, c.Share*100, c.Input, c.Output, model)
	}
	return fmt.Sprintf("traffic mix %s, seed %d: %s", m.path, seed, strings.Join(parts, "; "))
}

// failedClasses lists each class's failed objectives as "class: objective".
func failedClasses(classes []report.Class) []string {
	var out []string
	for _, c := range classes {
		for _, f := range c.Failed() {
			out = append(out, c.Name+": "+f)
		}
	}
	return out
}
