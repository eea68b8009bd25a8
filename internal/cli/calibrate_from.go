package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/knee-dev/knee/internal/calibrate"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/spf13/pflag"
)

// calibrateFromFlags are knee calibrate's flags for fitting without a live
// server.
type calibrateFromFlags struct {
	from    string
	holdOut int
	db      string
}

func (f *calibrateFromFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.from, "from", "", "fit from measurements already made, no live server: result files of vLLM bench serve, GuideLLM, AIPerf or inference-perf, knee records.jsonl, directories of them, or stored runs as run:ID (comma-separated)")
	fs.IntVar(&f.holdOut, "holdout", 0, "with --from: load steps to keep out of the fit and only predict, spread between the lowest and highest load")
	fs.StringVar(&f.db, "db", "", "with --from run:ID: run database (default $KNEE_DB, else $XDG_DATA_HOME/knee/knee.db)")
}

// runCalibrateFrom fits a profile to measurements users already have.
func runCalibrateFrom(ctx context.Context, env *Env, fs *pflag.FlagSet, eng *simEngineFlags, f calibrateFromFlags, out string, asJSON bool) error {
	if f.holdOut < 0 {
		return Usagef("--holdout %d: want 0 or more load steps", f.holdOut)
	}
	srcs, notes, err := readFromSources(env, f)
	if err != nil {
		return err
	}
	if len(srcs) == 0 {
		return Usagef("--from %s: no load step with a TTFT or TPOT to fit (want %s)", f.from, "vLLM bench serve, GuideLLM, AIPerf or inference-perf results, knee records or stored runs")
	}
	eng.noteSet(fs)
	cat, err := eng.catalog()
	if err != nil {
		return err
	}
	if !eng.ModelSet && eng.Profile == "" && eng.Source.ModelConfig == "" {
		// The files usually name the model: use it when it is a preset.
		for _, s := range srcs {
			if m, err := cat.LookupModel(s.Model); s.Model != "" && err == nil {
				eng.Model = m.Name
				notes = append(notes, fmt.Sprintf("model %s, as the measurements name it (%s); --model overrides", m.Name, s.Model))
				break
			}
		}
	}
	ec, err := eng.config(cat)
	if err != nil {
		return err
	}
	if _, err := simengine.NewEngine(ec); err != nil {
		return Usagef("%v", err)
	}
	obs := make([]calibrate.Observation, len(srcs))
	for i, s := range srcs {
		obs[i] = s.Obs
	}
	res, err := calibrate.FitFrom(ctx, calibrate.FromConfig{Engine: ec, Observations: obs, HoldOut: f.holdOut, Seed: 1})
	if err != nil {
		if errors.Is(err, calibrate.ErrTooFewObservations) {
			return Usagef("--from %s: %v", f.from, err)
		}
		return err
	}
	res.Notes = append(notes, res.Notes...)
	prof := calibrate.NewProfileFrom(ec, "measurements: "+f.from, res)
	if out != "" {
		if err := prof.Save(out); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Profile calibrate.Profile `json:"profile"`
			*calibrate.FromResult
		}{prof, res.JSONSafe()})
	}
	calibrate.WriteFromText(env.Stdout, ec, res, prof, out)
	return nil
}

// readFromSources reads every --from item.
func readFromSources(env *Env, f calibrateFromFlags) ([]calibrate.Source, []string, error) {
	var srcs []calibrate.Source
	var notes []string
	for _, item := range splitList(f.from) {
		var got []calibrate.Source
		var err error
		switch {
		case strings.HasPrefix(item, "run:"):
			got, err = readStoredRun(env, f.db, strings.TrimPrefix(item, "run:"))
		default:
			var skipped []string
			got, skipped, err = calibrate.ReadResults(item)
			for _, s := range skipped {
				notes = append(notes, "skipped "+s)
			}
		}
		if err != nil {
			return nil, nil, err
		}
		srcs = append(srcs, got...)
	}
	return srcs, notes, nil
}

// readStoredRun reads a stored run: each step of a sweep, else the run.
func readStoredRun(env *Env, db, ref string) ([]calibrate.Source, error) {
	st, err := openDBRead(env, db)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	id, err := resolveRun(st, ref)
	if err != nil {
		return nil, err
	}
	lr, err := runs.Load(st, id)
	if err != nil {
		return nil, err
	}
	return calibrate.SourcesOfRun(lr, id, ref)
}
