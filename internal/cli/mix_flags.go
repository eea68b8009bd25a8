package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
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
func (m *mixFlags) load(fs *pflag.FlagSet, wl *workloadFlags) error {
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
	if mix.HasSeed && !flagGiven(fs, "seed") {
		// The file's seed is the run's: arrivals, jitter and classes.
		wl.Seed, wl.SeedSet = mix.Seed, true
	}
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

// classes are the mix's classes as a sweep judges them (nil without a mix).
func (m *mixFlags) classes() *sweep.Classes {
	if m.mix == nil {
		return nil
	}
	return &sweep.Classes{Names: m.mix.Names(), Own: m.slos}
}

// embed makes the embedded server answer for the mix's adapters with the
// --max-loras limits.
func (m *mixFlags) embed(e *embeddedFlags, l *loraFlags) error {
	if m.mix == nil {
		return nil
	}
	e.adapters = m.adapters()
	var ecfg simengine.Config
	if _, err := l.apply(&ecfg, m); err != nil {
		return err
	}
	e.lora = ecfg.LoRA
	return nil
}

// failingClasses names a step's classes that failed (" (class chat,
// sql)"), for the progress line.
func failingClasses(s sweep.Step) string {
	var out []string
	for _, c := range s.Classes {
		if !c.SLOMet {
			out = append(out, c.Name)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (class " + strings.Join(out, ", ") + ")"
}

// classSLOs lists the classes' own objectives as "class: objective".
func (m *mixFlags) classSLOs() []string {
	if m.mix == nil {
		return nil
	}
	var out []string
	for _, c := range m.mix.Classes {
		for _, o := range m.slos[c.Name] {
			out = append(out, c.Name+": "+o.String())
		}
	}
	return out
}

// mixClasses reads a mix file for knee diagnose: the classes' order and
// each one's adapter (nil, nil without a file).
func mixClasses(path string) ([]string, map[string]string, error) {
	if path == "" {
		return nil, nil, nil
	}
	m, err := workload.LoadMix(path)
	if err != nil {
		return nil, nil, Usagef("--mix %v", err)
	}
	adapters := map[string]string{}
	for _, c := range m.Classes {
		adapters[c.Name] = c.Model
	}
	return m.Names(), adapters, nil
}

const (
	configClasses   = report.ConfigClasses
	configClassSLOs = report.ConfigClassSLOs
)

// configKV is what a stored run keeps of the mix.
func (m *mixFlags) configKV() [][2]string {
	if m.mix == nil {
		return nil
	}
	return [][2]string{{"mix", m.path}, {configClasses, strings.Join(m.mix.Names(), ",")}, {configClassSLOs, strings.Join(m.classSLOs(), "; ")}}
}

// judged reports whether some class has its own objectives.
func (m *mixFlags) judged() bool {
	for _, objs := range m.slos {
		if len(objs) > 0 {
			return true
		}
	}
	return false
}

// simClasses makes a simulated run serve the mix: each request's lengths
// from its class, its class name and LoRA adapter (the engine's adapter
// slots set on ecfg from l).
func (m *mixFlags) simClasses(ecfg *simengine.Config, l *loraFlags, base *workload.Generator, seed uint64) (sim.Lengths, func(int64) (string, int32), error) {
	adapterOf, err := l.apply(ecfg, m)
	if err != nil {
		return nil, nil, err
	}
	mg, err := workload.NewMixGenerator(m.mix, base.Spec(), seed)
	if err != nil {
		return nil, nil, Usagef("--mix %v", err)
	}
	return mg, func(i int64) (string, int32) {
		k := mg.ClassOf(i)
		return m.mix.Classes[k].Name, adapterOf[k]
	}, nil
}

// longestMean is the largest class's mean prompt + output tokens (what
// must fit the context).
func (m *mixFlags) longestMean() float64 {
	most := 0.0
	for _, c := range m.mix.Classes {
		most = max(most, c.Input.Mean()+c.Output.Mean())
	}
	return most
}

// seed is the mix's seed unless --seed was given (load made it the run's).
func (m *mixFlags) seed(_ *pflag.FlagSet, wl *workloadFlags) uint64 {
	return wl.ResolvedSeed()
}

// source builds the request source: each request's class drawn by share,
// its prompt from that class's lengths (base's tokenizer and prefixes),
// its model the class's.
func (m *mixFlags) source(base any, seed uint64) (func(first int64) loadgen.Source, error) {
	var spec workload.Spec
	if g, ok := base.(*workload.Generator); ok {
		spec = g.Spec()
	}
	mg, err := workload.NewMixGenerator(m.mix, spec, seed)
	if err != nil {
		return nil, Usagef("--mix %v", err)
	}
	// Request i's class is the mix's i-th; its prompt is its class's
	// first+i-th, so each sweep step sends prompts of its own.
	return func(first int64) loadgen.Source {
		return func(i int64) loadgen.Request { return m.request(mg, mg.ClassOf(i), first+i) }
	}, nil
}

// note describes the mix for the report.
func (m *mixFlags) note(seed uint64) string {
	parts := make([]string, len(m.mix.Classes))
	for i, c := range m.mix.Classes {
		parts[i] = c.Describe()
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

// loraFlags are the simulated engine's adapter limits (vLLM's flags and
// defaults), in effect when a mix names adapters.
type loraFlags struct {
	maxLoRAs, maxRank int
	loadMS            float64
}

func (l *loraFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&l.maxLoRAs, "max-loras", 1, "with a --mix naming adapters: LoRA adapters the engine holds on the GPU at once, and so the most distinct adapters in one batch (vLLM --max-loras)")
	fs.IntVar(&l.maxRank, "max-lora-rank", 16, "with a --mix naming adapters: the adapter slots' rank (vLLM --max-lora-rank); sizes the load on a miss")
	fs.Float64Var(&l.loadMS, "lora-load-ms", 0, "with a --mix naming adapters: time to load an adapter into a slot on a miss (0: its size over a 25 GB/s host-to-GPU copy)")
}

// apply enables adapters on ecfg when the mix names any; it returns each
// class's adapter number (0: the base model).
func (l *loraFlags) apply(ecfg *simengine.Config, m *mixFlags) ([]int32, error) {
	switch {
	case l.maxLoRAs < 1 || l.maxLoRAs > 1024:
		return nil, Usagef("--max-loras %d: want 1 to 1024", l.maxLoRAs)
	case l.maxRank < 1 || l.maxRank > 512:
		return nil, Usagef("--max-lora-rank %d: want 1 to 512", l.maxRank)
	case l.loadMS < 0 || l.loadMS > 60_000:
		return nil, Usagef("--lora-load-ms %g: want 0 to 60000", l.loadMS)
	}
	names := m.adapters()
	ids := make([]int32, len(m.mix.Classes))
	for k, c := range m.mix.Classes {
		if c.Model != "" {
			ids[k] = int32(slices.Index(names, c.Model) + 1)
		}
	}
	if len(names) > 0 {
		ecfg.LoRA = simengine.LoRAConfig{MaxLoRAs: l.maxLoRAs, MaxLoRARank: l.maxRank, LoadNS: int64(l.loadMS * 1e6)}
	}
	return ids, nil
}

// classAccumulators summarise a streamed run (knee sim) per class, each
// with its objectives; nil without classes.
type classAccumulators struct {
	names []string
	acc   map[string]*stats.Accumulator
	objs  map[string]slo.Set
}

func newClassAccumulators(names []string, opts stats.Options, objectives slo.Set, classSLOs map[string]slo.Set) *classAccumulators {
	if len(names) == 0 {
		return nil
	}
	c := &classAccumulators{names: names, acc: map[string]*stats.Accumulator{}, objs: map[string]slo.Set{}}
	opts.Series = false
	for _, n := range names {
		objs := append(append(slo.Set{}, objectives...), classSLOs[n]...)
		o := opts
		o.Good = nil
		if len(objs) > 0 {
			o.Good = objs.Good
		}
		c.acc[n], c.objs[n] = stats.NewAccumulator(o), objs
	}
	return c
}

func (c *classAccumulators) add(r *record.Request) {
	if c == nil {
		return
	}
	if a := c.acc[cmp.Or(r.Class, report.MainClass)]; a != nil {
		a.Add(r)
	}
}

func (c *classAccumulators) summaries() []report.Class {
	if c == nil {
		return nil
	}
	out := make([]report.Class, 0, len(c.names))
	for _, n := range c.names {
		sum := c.acc[n].Summary()
		out = append(out, report.Class{Name: n, Summary: sum, SLOs: c.objs[n].Evaluate(sum), Probe: n == record.ProbeClass})
	}
	return out
}
