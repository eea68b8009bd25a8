package cli

import (
	"strings"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// mixFlags declare --mix (loadsetup.Mix).
type mixFlags struct{ loadsetup.Mix }

func (m *mixFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&m.Path, "mix", "", "traffic mix YAML: classes with a share of the requests, input/output lengths, a model or LoRA adapter name and their own SLOs, reported per class")
}

// load reads the mix file (loadsetup.Mix.Load) with the flags given.
func (m *mixFlags) load(fs *pflag.FlagSet, wl *workloadFlags) error {
	return m.Load(given(fs), &wl.Choice)
}

// embed makes the embedded server answer for the mix's adapters with the
// --max-loras limits.
func (m *mixFlags) embed(e *embeddedFlags, l *loraFlags) error {
	if m.File == nil {
		return nil
	}
	e.adapters = m.Adapters()
	var ecfg simengine.Config
	if _, err := l.Apply(&ecfg, &m.Mix); err != nil {
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

// loraFlags declare the simulated engine's adapter limits (loadsetup.LoRA).
type loraFlags struct{ loadsetup.LoRA }

func (l *loraFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&l.MaxLoRAs, "max-loras", 1, "with a --mix naming adapters: LoRA adapters the engine holds on the GPU at once, and so the most distinct adapters in one batch (vLLM --max-loras)")
	fs.IntVar(&l.MaxRank, "max-lora-rank", 16, "with a --mix naming adapters: the adapter slots' rank (vLLM --max-lora-rank); sizes the load on a miss")
	fs.Float64Var(&l.LoadMS, "lora-load-ms", 0, "with a --mix naming adapters: time to load an adapter into a slot on a miss (0: its size over a 25 GB/s host-to-GPU copy)")
}

// usersOf counts the classes' own users.
func usersOf(classes []loadgen.UserClass) int {
	n := 0
	for _, c := range classes {
		n += c.Concurrency
	}
	return n
}
