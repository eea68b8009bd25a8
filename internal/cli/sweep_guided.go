package cli

import (
	"fmt"

	"github.com/knee-dev/knee/internal/refit"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// guidedFlags declare knee sweep --guided's flags (sweep.GuidedChoice).
type guidedFlags struct{ sweep.GuidedChoice }

func (g *guidedFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&g.On, "guided", false, "let the simulator choose the loads: predict the curve, measure a light step, refit, then measure only where the SLO-safe point and the knee are least certain, from --min to --max (with --url, --gpu/--tp/--profile say what the server runs)")
	fs.BoolVar(&g.Bisect, "bisect", false, "--guided without the model: a plain bisection on measured points (doubling from --min until an SLO fails, then halving the bracket), the baseline the guided sweep is compared with")
	fs.StringVar(&g.Resolution, "resolution", "10%", "--guided: the SLO-safe point is bracketed by measured steps this far apart (1% to 100%)")
	fs.StringVar(&g.Budget, "budget", "", "--guided: most requests (2000) or wall time (10m) to spend; when it runs out the sweep stores what it measured and exits 1 naming what is unknown")
}

// guidedModel is the simulator the guided sweep starts from: the embedded
// server's engine, or with --url what --gpu/--tp/--profile and --model say
// the server runs (a model name that is no preset: the default preset,
// said in a note), its steps the sweep's workload.
func (sr *sweepRun) guidedModel() (*refit.Model, error) {
	t, f := sr.t, sr.f
	preset := t.model
	flags := t.embedded.engineFlags(preset)
	if t.url != "" {
		flags.StepTimeScale = 1 // refused with --url: the prior is the preset's speed
	}
	cat, err := flags.catalog()
	if err != nil {
		return nil, Usagef("--guided: %v", err)
	}
	ecfg, err := flags.config(cat)
	if err != nil && t.url != "" {
		def := t.embedded.engineFlags("")
		sr.promptNotes = append(sr.promptNotes, fmt.Sprintf("guided sweep: --model %q is no simulator preset; the model starts from %s and is refitted to this server's steps", t.model, def.Model))
		ecfg, err = def.config(cat)
	}
	if err != nil {
		return nil, Usagef("--guided: %v", err)
	}
	runner, err := f.simRunner(ecfg)
	if err != nil {
		return nil, err
	}
	runner.SLOs = sr.set // the simulator's steps are bounded as the measured ones
	sr.promptNotes = append(sr.promptNotes, fmt.Sprintf("guided sweep: the model starts from the simulator's %s on %s×%d and is refitted after every step",
		ecfg.Model.Name, ecfg.GPU.Name, max(ecfg.TP, 1)))
	return refit.New(runner, refit.PriorRanges(ecfg.GPU.Name, ecfg.Model.Name), f.wl.ResolvedSeed()), nil
}
