package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/calibrate"
	"github.com/knee-dev/knee/internal/ingest"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// Bounds on what calibrate --from reads, whatever the directory holds.
const (
	maxFromFiles     = 2000
	maxFromFileBytes = 512 << 20
	maxFromDepth     = 6
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

// fromSource is one observation read, with the model its file names.
type fromSource struct {
	obs   calibrate.Observation
	model string
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
	if !eng.modelSet && eng.profile == "" && eng.source.modelConfig == "" {
		// The files usually name the model: use it when it is a preset.
		for _, s := range srcs {
			if m, err := cat.LookupModel(s.model); s.model != "" && err == nil {
				eng.model = m.Name
				notes = append(notes, fmt.Sprintf("model %s, as the measurements name it (%s); --model overrides", m.Name, s.model))
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
		obs[i] = s.obs
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
		var buf bytes.Buffer
		if err := prof.Write(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Profile calibrate.Profile `json:"profile"`
			*calibrate.FromResult
		}{prof, jsonSafe(res)})
	}
	printCalibrationFrom(env.Stdout, ec, res, prof, out)
	return nil
}

// jsonSafe replaces the NaN errors (a figure the file lacks) by 0, which
// JSON can carry; the text report says "-".
func jsonSafe(r *calibrate.FromResult) *calibrate.FromResult {
	c := *r
	fix := func(v *float64) {
		if math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = 0
		}
	}
	for _, m := range []*calibrate.MetricErrors{&c.FitErrors, &c.HoldOutErrors, &c.Range} {
		for _, v := range []*float64{&m.TTFTMedian, &m.TTFTMax, &m.TPOTMedian, &m.TPOTMax, &m.TPSMedian, &m.TPSMax} {
			fix(v)
		}
	}
	for _, list := range [][]calibrate.Comparison{c.Fitted, c.HeldOut} {
		for i := range list {
			fix(&list[i].TTFTError)
			fix(&list[i].TPOTError)
			fix(&list[i].TPSError)
		}
	}
	return &c
}

// readFromSources reads every --from item.
func readFromSources(env *Env, f calibrateFromFlags) ([]fromSource, []string, error) {
	var srcs []fromSource
	var notes []string
	for _, item := range splitList(f.from) {
		var got []fromSource
		var err error
		switch {
		case strings.HasPrefix(item, "run:"):
			got, err = readStoredRun(env, f.db, strings.TrimPrefix(item, "run:"))
		default:
			var skipped []string
			got, skipped, err = readResultPath(item)
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

// readResultPath reads a result file, or every result file under a
// directory (files of no known format are skipped and named).
func readResultPath(path string) ([]fromSource, []string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, Usagef("--from %s: %v", path, err)
	}
	if !st.IsDir() {
		srcs, err := readResultFile(path)
		return srcs, nil, err
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(path, p); strings.Count(rel, string(filepath.Separator)) >= maxFromDepth {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := strings.ToLower(filepath.Ext(p)); d.Type().IsRegular() && (ext == ".json" || ext == ".jsonl") {
			if len(files) == maxFromFiles {
				return fmt.Errorf("more than %d result files under %s: point --from at fewer", maxFromFiles, path)
			}
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, Usagef("--from %s: %v", path, err)
	}
	sort.Strings(files)
	var srcs []fromSource
	var skipped []string
	for _, p := range files {
		got, err := readResultFile(p)
		if errors.Is(err, ingest.ErrUnknownFormat) {
			skipped = append(skipped, p+": not a result file knee reads")
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		srcs = append(srcs, got...)
	}
	if len(srcs) == 0 {
		return nil, skipped, Usagef("--from %s: no result file knee reads in the directory (%d .json/.jsonl files looked at)", path, len(files))
	}
	return srcs, skipped, nil
}

func readResultFile(path string) ([]fromSource, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, Usagef("--from %s: %v", path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFromFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--from %s: %w", path, err)
	}
	if len(data) > maxFromFileBytes {
		return nil, Usagef("--from %s: over %d MiB, not a result file", path, maxFromFileBytes>>20)
	}
	runs, err := ingest.Read(data)
	if err != nil {
		return nil, Usagef("--from %s: %w", path, err) // ErrUnknownFormat stays visible to the directory walk
	}
	var srcs []fromSource
	for i, r := range runs {
		name := path
		if r.Source != "" {
			name += ": " + r.Source
		} else if len(runs) > 1 {
			name += ": run " + strconv.Itoa(i+1)
		}
		o, err := calibrate.ObservationOf(name, r.Summary, r.Concurrency, r.RateRPS)
		if err != nil {
			continue // a run with nothing to fit (all failed, no tokens): not an error of the file
		}
		srcs = append(srcs, fromSource{obs: o, model: r.Model})
	}
	return srcs, nil
}

// readStoredRun reads a stored run: each step of a sweep, else the run.
func readStoredRun(env *Env, db, ref string) ([]fromSource, error) {
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
	name := fmt.Sprintf("run %d", id)
	var srcs []fromSource
	if lr.Sweep != nil {
		for _, s := range lr.Sweep.Steps {
			conc, rate := 0.0, 0.0
			if s.Load.Kind == sweep.Rate {
				rate = s.Load.Value
			} else {
				conc = s.Load.Value
			}
			if o, err := calibrate.ObservationOf(name+" step "+s.Load.String(), s.Summary, conc, rate); err == nil {
				srcs = append(srcs, fromSource{obs: o, model: lr.Info.Model})
			}
		}
	} else {
		conc, rate := loadOfConfig(lr.Report.Config, lr.Report.Summary)
		if o, err := calibrate.ObservationOf(name, lr.Report.Summary, conc, rate); err == nil {
			srcs = append(srcs, fromSource{obs: o, model: lr.Info.Model})
		}
	}
	if len(srcs) == 0 {
		return nil, Usagef("--from run:%s: the run has no completed request with a TTFT or TPOT to fit", ref)
	}
	return srcs, nil
}

// loadOfConfig reads a stored run's load: its concurrency or rate as the
// run's configuration records them, else the offered rate of an open loop
// (0, 0: Little's law decides).
func loadOfConfig(cfg [][2]string, s stats.Summary) (conc, rate float64) {
	for _, kv := range cfg {
		v, err := strconv.ParseFloat(kv[1], 64)
		if err != nil || v <= 0 {
			continue
		}
		switch kv[0] {
		case "concurrency":
			conc = v
		case "rate", "rate_rps":
			rate = v
		}
	}
	if conc == 0 && rate == 0 && s.OfferedRateRPS > 0 {
		rate = s.OfferedRateRPS
	}
	return conc, rate
}

func printCalibrationFrom(w io.Writer, ec simengine.Config, res *calibrate.FromResult, prof calibrate.Profile, out string) {
	fmt.Fprintf(w, "knee calibrate --from: %d load steps measured elsewhere, fitted against %s × %d running %s\n",
		len(res.Fitted)+len(res.HeldOut), ec.GPU.Name, ec.TP, ec.Model.Name)
	for _, n := range res.Notes {
		fmt.Fprintln(w, "  note: "+n)
	}
	fmt.Fprintln(w, "\nconstants:")
	for _, c := range res.Constants {
		state := "pinned "
		if !c.Pinned {
			state = "default"
		}
		val := ""
		if c.Unit != "" || c.Value != 0 {
			val = strconv.FormatFloat(c.Value, 'g', 4, 64) + " " + c.Unit
		}
		fmt.Fprintf(w, "  %-8s %-22s %-12s %s\n", state, c.Name, val, c.Why)
	}
	pct := func(v float64) string {
		if math.IsNaN(v) {
			return "      -"
		}
		return fmt.Sprintf("%+6.1f%%", 100*v)
	}
	abs := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	table := func(title string, cs []calibrate.Comparison) {
		if len(cs) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n  %-58s %17s %17s %19s\n", title, "load step", "TTFT p50 ms", "TPOT p50 ms", "output tok/s")
		for _, c := range cs {
			o := c.Observation
			src := o.Source
			if len(src) > 58 {
				src = "…" + src[len(src)-57:]
			}
			fmt.Fprintf(w, "  %-58s %8.1f %s %8.2f %s %10.0f %s\n", src, o.TTFTP50MS, pct(c.TTFTError), o.TPOTP50MS, pct(c.TPOTError), o.OutputTPS, pct(c.TPSError))
		}
	}
	table("how the fitted profile reproduces the steps it was fitted to (measured, then the simulation's error):", res.Fitted)
	table("held-out steps (never fitted, only predicted):", res.HeldOut)
	e, r := res.FitErrors, res.Range
	fmt.Fprintf(w, "\nfit: median |error| TTFT %s, TPOT %s, throughput %s\n", abs(e.TTFTMedian), abs(e.TPOTMedian), abs(e.TPSMedian))
	if len(res.HeldOut) > 0 {
		h := res.HoldOutErrors
		fmt.Fprintf(w, "held out: median |error| TTFT %s, TPOT %s, throughput %s; worst %s, %s, %s\n",
			abs(h.TTFTMedian), abs(h.TPOTMedian), abs(h.TPSMedian), abs(h.TTFTMax), abs(h.TPOTMax), abs(h.TPSMax))
	}
	fmt.Fprintf(w, "expect on loads it was not fitted to: TTFT within ±%s, TPOT ±%s, throughput ±%s (twice the worst fitted error, at least %.0f%%)\n",
		abs(r.TTFTMax), abs(r.TPOTMax), abs(r.TPSMax), 100*calibrate.MinStatedRange)
	if out != "" {
		fmt.Fprintf(w, "\nprofile written to %s: knee sim --profile %s, knee serve --profile %s\n", out, out, out)
	} else {
		fmt.Fprintln(w, "\nprofile (--out FILE to save it):")
		prof.Write(w)
	}
}
