package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/refit"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// guidedFlags are knee sweep --guided's: the simulator chooses where to
// measure, each measured step refits it (docs/sweep.md, "Guided sweep").
type guidedFlags struct {
	on         bool
	bisect     bool
	resolution string
	budget     string
	saveProf   string
	// what a --url server runs, for the model's prior
	serverProfile, modelConfig string

	// resolved by check
	res            float64
	budgetRequests int64
	budgetTime     time.Duration
}

func (g *guidedFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&g.on, "guided", false, "let the simulator choose the loads: predict the curve, measure a light step, refit, then measure only where the SLO-safe point and the knee are least certain, from --min to --max (with --url, --gpu/--tp/--profile/--server-profile/--model-config say what the server runs)")
	fs.BoolVar(&g.bisect, "bisect", false, "--guided without the model: a plain bisection on measured points (doubling from --min until an SLO fails, then halving the bracket), the baseline the guided sweep is compared with")
	fs.StringVar(&g.resolution, "resolution", "10%", "--guided: the SLO-safe point is bracketed by measured steps this far apart (1% to 100%)")
	fs.StringVar(&g.saveProf, "save-profile", "", "--guided: write the host profile the last refit fitted to the measured steps to this file, for knee sim/serve/plan --profile")
	fs.StringVar(&g.serverProfile, "server-profile", "", "--guided with --url: the serving engine the server runs (knee sim --server-profile's names), for the model's prior")
	fs.StringVar(&g.modelConfig, "model-config", "", "--guided with --url: a Hugging Face config.json of the model the server runs, for the model's prior (--model stays the name sent)")
	fs.StringVar(&g.budget, "budget", "", "--guided: most requests (2000) or wall time (10m) to spend; when it runs out the sweep stores what it measured and exits 1 naming what is unknown")
}

// check resolves the flags against the plan; errors are usage errors.
func (g *guidedFlags) check(fs *pflag.FlagSet, plan sweep.Plan) error {
	if !g.on {
		for _, name := range []string{"resolution", "budget", "bisect", "save-profile", "server-profile", "model-config"} {
			if fs.Changed(name) {
				return Usagef("--%s applies to a guided sweep: add --guided", name)
			}
		}
		return nil
	}
	if !plan.Auto() {
		return Usagef("--guided chooses the loads itself: give --concurrency auto or --rate auto (or neither) with --min and --max for the range, not a list")
	}
	for _, name := range []string{"factor", "refine", "auto"} {
		if fs.Changed(name) {
			return Usagef("--%s steers an automatic sweep; --guided chooses its loads itself: drop --%s", name, name)
		}
	}
	if g.bisect {
		for _, name := range []string{"save-profile", "server-profile", "model-config"} {
			if fs.Changed(name) {
				return Usagef("--%s is for the guided sweep's model; --bisect runs without a model: drop one", name)
			}
		}
	}
	// --shards needs no refusal: every shard is handed each step judged
	// over every shard's records, and the model is deterministic, so
	// every shard computes the same next load (the run database refuses
	// a shard that asks for another).
	r := strings.TrimSpace(g.resolution)
	pct := strings.HasSuffix(r, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(r, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || !(v >= 0.01) || v > 1 {
		return Usagef("--resolution %q: want a step from 1%% to 100%% (10%% or 0.1)", g.resolution)
	}
	g.res = v
	if b := strings.TrimSpace(g.budget); b != "" {
		if n, err := strconv.ParseInt(b, 10, 64); err == nil {
			if n <= 0 {
				return Usagef("--budget %q: want a positive number of requests (2000) or a duration (10m)", g.budget)
			}
			g.budgetRequests = n
		} else if d, err := time.ParseDuration(b); err == nil && d > 0 {
			g.budgetTime = d
		} else {
			return Usagef("--budget %q: want a number of requests (2000) or a duration (10m)", g.budget)
		}
	}
	return nil
}

// plan is the guided sweep's plan over the automatic plan's range.
func (g *guidedFlags) plan(p sweep.Plan) sweep.GuidedPlan {
	return sweep.GuidedPlan{Kind: p.Kind, Min: p.Min, Max: p.Max, Resolution: g.res,
		BudgetRequests: g.budgetRequests, BudgetTime: g.budgetTime, Metric: p.Metric}
}

// guidedModel is the simulator the guided sweep starts from: the embedded
// server's engine, or with --url what --gpu/--tp/--profile and --model say
// the server runs (a model name that is no preset: the default preset,
// said in a note), its steps the sweep's workload.
func (sr *sweepRun) guidedModel() (*refit.Model, error) {
	t, f, g := sr.t, sr.f, sr.g
	if t.url == "" && (g.serverProfile != "" || g.modelConfig != "") {
		return nil, Usagef("--server-profile and --model-config say what a --url server runs, for the guided sweep's model; the embedded server runs its own engine: give --url or drop them")
	}
	preset := t.model
	flags := t.embedded.engineFlags(preset)
	if t.url != "" {
		flags.StepTimeScale = 1 // refused with --url: the prior is the preset's speed
		flags.ServerProfileName = g.serverProfile
		if g.modelConfig != "" {
			// --model is the name the server answers to; the config says
			// what it is.
			flags.Source.ModelConfig, flags.Model, flags.ModelSet = g.modelConfig, "", false
		}
	}
	cat, err := flags.catalog()
	if err != nil {
		return nil, Usagef("--guided: %v", err)
	}
	ecfg, err := flags.config(cat)
	generic := false
	if err != nil && t.url != "" && g.modelConfig == "" {
		def := t.embedded.engineFlags("")
		def.StepTimeScale, def.ServerProfileName = 1, g.serverProfile
		// Nothing says what the server runs: a generic prior (the
		// default preset with the widest ranges), which the light
		// step's refit scales to the server (its front end and its
		// batch-1 step time).
		generic = g.serverProfile == "" && !flagGiven(sr.fs, "gpu") && !flagGiven(sr.fs, "profile")
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
	if g.serverProfile != "" && t.url != "" {
		engine = " as " + g.serverProfile
	}
	sr.promptNotes = append(sr.promptNotes, fmt.Sprintf("guided sweep: the model starts from the simulator's %s on %s×%d%s and is refitted after every step",
		ecfg.Model.Name, ecfg.GPU.Name, max(ecfg.TP, 1), engine))
	prior := refit.PriorRanges(ecfg.GPU.Name, ecfg.Model.Name)
	if generic {
		prior = sweep.Ranges{TTFT: refit.MaxRange, TPOT: refit.MaxRange, Throughput: refit.MaxRange}
	}
	return refit.New(runner, prior, f.wl.ResolvedSeed()), nil
}

// guidedConfig is what a stored guided sweep records of its search.
func (g *guidedFlags) config() [][2]string {
	if !g.on {
		return nil
	}
	mode := "true"
	if g.bisect {
		mode = "bisect"
	}
	kv := [][2]string{{"guided", mode}, {"guided_resolution", strconv.FormatFloat(math.Round(g.res*1e4)/1e4, 'g', -1, 64)}}
	if g.budget != "" {
		kv = append(kv, [2]string{"guided_budget", g.budget})
	}
	if g.serverProfile != "" {
		kv = append(kv, [2]string{"guided_server_profile", g.serverProfile})
	}
	if g.modelConfig != "" {
		kv = append(kv, [2]string{"guided_model_config", g.modelConfig})
	}
	return kv
}

// saveProfile writes the last refit's host profile to --save-profile, and
// says so in a note; with no refit (no step fitted) it says that instead.
func (sr *sweepRun) saveProfile() error {
	if sr.g.saveProf == "" || sr.model == nil {
		return nil
	}
	prof, ok := sr.model.Profile(fmt.Sprintf("knee sweep --guided against %s, model %s", sr.meta.target, sr.meta.model))
	if !ok {
		sr.res.Notes = append(sr.res.Notes, fmt.Sprintf("--save-profile %s: not written, no measured step could be fitted", sr.g.saveProf))
		return fmt.Errorf("--save-profile %s: no measured step could be fitted, nothing written", sr.g.saveProf)
	}
	if err := prof.Save(sr.g.saveProf); err != nil {
		return fmt.Errorf("--save-profile: %w", errors.Unwrap(err))
	}
	sr.res.Notes = append(sr.res.Notes, fmt.Sprintf("the refitted host profile is saved in %s (knee sim --profile %s reproduces the measured steps within the fit's stated range)", sr.g.saveProf, sr.g.saveProf))
	return nil
}

// runBefore is a sweep runner that calls before ahead of every step.
type runBefore struct {
	sweep.Runner
	before func()
}

func (r runBefore) Run(ctx context.Context, load sweep.Load) (sweep.Step, error) {
	r.before()
	return r.Runner.Run(ctx, load)
}
