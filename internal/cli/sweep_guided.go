package cli

import (
	"errors"
	"fmt"

	"github.com/knee-dev/knee/internal/refit"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// guidedFlags declare knee sweep --guided's flags (sweep.GuidedChoice).
type guidedFlags struct{ sweep.GuidedChoice }

func (g *guidedFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&g.On, "guided", false, "let the simulator choose the loads: predict the curve, measure a light step, refit, then measure only where the SLO-safe point and the knee are least certain, from --min to --max (with --url, --gpu/--tp/--profile/--server-profile/--model-config say what the server runs)")
	fs.BoolVar(&g.Bisect, "bisect", false, "--guided without the model: a plain bisection on measured points (doubling from --min until an SLO fails, then halving the bracket), the baseline the guided sweep is compared with")
	fs.StringVar(&g.Resolution, "resolution", "10%", "--guided: the SLO-safe point is bracketed by measured steps this far apart (1% to 100%)")
	fs.StringVar(&g.SaveProfile, "save-profile", "", "--guided: write the host profile the last refit fitted to the measured steps to this file, for knee sim/serve/plan --profile")
	fs.StringVar(&g.ServerProfile, "server-profile", "", "--guided with --url: the serving engine the server runs (knee sim --server-profile's names), for the model's prior")
	fs.StringVar(&g.ModelConfig, "model-config", "", "--guided with --url: a Hugging Face config.json of the model the server runs, for the model's prior (--model stays the name sent)")
	fs.StringVar(&g.Budget, "budget", "", "--guided: most requests (2000) or wall time (10m) to spend; when it runs out the sweep stores what it measured and exits 1 naming what is unknown")
}

// guidedModel is the simulator the guided sweep starts from: the embedded
// server's engine, or with --url what --gpu/--tp/--profile and --model say
// the server runs (a model name that is no preset: the default preset,
// said in a note), its steps the sweep's workload.
func (sr *sweepRun) guidedModel() (*refit.Model, error) {
	t, f, g := sr.t, sr.f, sr.g
	if t.url == "" && (g.ServerProfile != "" || g.ModelConfig != "") {
		return nil, Usagef("--server-profile and --model-config say what a --url server runs, for the guided sweep's model; the embedded server runs its own engine: give --url or drop them")
	}
	preset := t.model
	flags := t.embedded.engineFlags(preset)
	if t.url != "" {
		flags.StepTimeScale = 1 // refused with --url: the prior is the preset's speed
		flags.ServerProfileName = g.ServerProfile
		if g.ModelConfig != "" {
			// --model is the name the server answers to; the config says
			// what it is.
			flags.Source.ModelConfig, flags.Model, flags.ModelSet = g.ModelConfig, "", false
		}
	}
	cat, err := flags.catalog()
	if err != nil {
		return nil, Usagef("--guided: %v", err)
	}
	ecfg, err := flags.config(cat)
	generic := false
	if err != nil && t.url != "" && g.ModelConfig == "" {
		def := t.embedded.engineFlags("")
		def.StepTimeScale, def.ServerProfileName = 1, g.ServerProfile
		// Nothing says what the server runs: a generic prior (the
		// default preset with the widest ranges), which the light
		// step's refit scales to the server (its front end and its
		// batch-1 step time).
		generic = g.ServerProfile == "" && !flagGiven(sr.fs, "gpu") && !flagGiven(sr.fs, "profile")
		if generic {
			sr.promptNotes = append(sr.promptNotes, fmt.Sprintf("guided sweep: --model %q is no simulator preset and nothing says what the server runs (--model-config, --server-profile, --gpu, --profile): a generic prior, %s with ranges of ±%.0f%%, scaled to the server by the light step's refit", t.model, def.Model, 100*refit.MaxRange))
		} else {
			sr.promptNotes = append(sr.promptNotes, fmt.Sprintf("guided sweep: --model %q is no simulator preset (--model-config names the model the server runs); the model starts from %s and is refitted to this server's steps", t.model, def.Model))
		}
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
	engine := ""
	if g.ServerProfile != "" && t.url != "" {
		engine = " as " + g.ServerProfile
	}
	sr.promptNotes = append(sr.promptNotes, fmt.Sprintf("guided sweep: the model starts from the simulator's %s on %s×%d%s and is refitted after every step",
		ecfg.Model.Name, ecfg.GPU.Name, max(ecfg.TP, 1), engine))
	prior := refit.PriorRanges(ecfg.GPU.Name, ecfg.Model.Name)
	if generic {
		prior = sweep.Ranges{TTFT: refit.MaxRange, TPOT: refit.MaxRange, Throughput: refit.MaxRange}
	}
	return refit.New(runner, prior, f.wl.ResolvedSeed()), nil
}

// saveProfile writes the last refit's host profile to --save-profile, and
// says so in a note; with no refit (no step fitted) it says that instead.
func (sr *sweepRun) saveProfile() error {
	if sr.g.SaveProfile == "" || sr.model == nil {
		return nil
	}
	prof, ok := sr.model.Profile(fmt.Sprintf("knee sweep --guided against %s, model %s", sr.meta.Target, sr.meta.Model))
	if !ok {
		sr.res.Notes = append(sr.res.Notes, fmt.Sprintf("--save-profile %s: not written, no measured step could be fitted", sr.g.SaveProfile))
		return fmt.Errorf("--save-profile %s: no measured step could be fitted, nothing written", sr.g.SaveProfile)
	}
	if err := prof.Save(sr.g.SaveProfile); err != nil {
		return fmt.Errorf("--save-profile: %w", errors.Unwrap(err))
	}
	sr.res.Notes = append(sr.res.Notes, fmt.Sprintf("the refitted host profile is saved in %s (knee sim --profile %s reproduces the measured steps within the fit's stated range)", sr.g.SaveProfile, sr.g.SaveProfile))
	return nil
}
