package runs

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// Loaded is a stored run ready to render or compare.
type Loaded struct {
	Info    *store.RunInfo
	Report  *report.Run
	Records []record.Request // nil when the run stored none (summary-only import)
	Sweep   *sweep.Result    // nil unless the run is a sweep with steps
}

// Load reads run id with its records and sweep. A run that never finished
// gets a partial summary computed from its stored records.
func Load(st *store.Store, id int64) (*Loaded, error) {
	info, err := st.Run(id)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	lr := &Loaded{Info: info}
	if lr.Sweep, err = st.SweepResult(id); err != nil {
		return nil, DBErr(err)
	}
	if lr.Sweep != nil && len(lr.Sweep.Steps) == 0 {
		lr.Sweep = nil
	}
	step, stepName := -1, ""
	if lr.Sweep != nil {
		// A sweep's summary is one step's; its records are that step's too,
		// so the distributions drawn (and compared) match the summary.
		var why string
		step, why = lr.Sweep.SummaryStep()
		stepName = fmt.Sprintf("%s (%s)", lr.Sweep.Steps[step].Load, why)
	}
	if info.Records > 0 {
		err = st.StepRecords(id, func(s int, r *record.Request) error {
			if step < 0 || s == step {
				lr.Records = append(lr.Records, *StepNumbered(s, r))
			}
			return nil
		})
		if err != nil {
			return nil, DBErr(err)
		}
	}
	// In request order, as the live run summarises them: float sums
	// depend on their order.
	slices.SortStableFunc(lr.Records, func(a, b record.Request) int { return cmp.Compare(a.ID, b.ID) })
	var notes []string
	var sum stats.Summary
	switch {
	case info.Summary != nil:
		sum = *info.Summary
		if info.Records == 0 {
			// A summary-only import: JSON has no NaN, so the percentiles
			// its file lacked read back as +Inf; they are missing, not slow.
			for _, d := range []*stats.Dist{&sum.TTFT, &sum.TTFTSched, &sum.ITL, &sum.TPOT, &sum.E2E, &sum.Lag} {
				unInf(d)
			}
		}
		if info.Status == store.StatusInterrupted && !keptNote(info.Config, "interrupted") {
			notes = append(notes, "interrupted: the run was stopped before its end; the figures cover what was measured until then")
		}
	default:
		sum = stats.Summarize(lr.Records, stats.Options{Series: true})
		switch info.Status {
		case store.StatusRunning:
			notes = append(notes, fmt.Sprintf("still running (last write %s): a partial summary of the %d records stored so far",
				info.Heartbeat.Format("15:04:05"), len(lr.Records)))
		default:
			notes = append(notes, fmt.Sprintf("%s: the run never finished (killed or crashed); this partial summary is computed from the %d records stored before it stopped",
				info.Status, len(lr.Records)))
		}
	}
	var (
		cfg         [][2]string
		engine      *report.EngineFigures
		predictions *report.PredictionRanges
		energyFigs  *energy.Figures
		gpuView     *scrape.GPUView
	)
	for _, kv := range ConfigPairs(info.Config) {
		switch kv[0] {
		case "note": // importers keep the file's caveats as notes
			notes = append(notes, kv[1])
			continue
		case EngineKey:
			// An unreadable pair leaves the section out, as a run that
			// kept none; the summary is the run's figures either way.
			if json.Unmarshal([]byte(kv[1]), &engine) != nil {
				engine = nil
			}
			continue
		case PredictionsKey:
			if json.Unmarshal([]byte(kv[1]), &predictions) != nil {
				predictions = nil
			}
			continue
		case SweepKey:
			if lr.Sweep != nil {
				var said SweepSaid
				if json.Unmarshal([]byte(kv[1]), &said) == nil {
					said.Into(lr.Sweep)
				}
			}
			continue
		case EnergyKey:
			if json.Unmarshal([]byte(kv[1]), &energyFigs) != nil {
				energyFigs = nil
			}
			continue
		case GPUKey:
			if json.Unmarshal([]byte(kv[1]), &gpuView) != nil {
				gpuView = nil
			}
			continue
		}
		cfg = append(cfg, kv)
	}
	rep := &report.Run{ID: strconv.FormatInt(id, 10), Kind: info.Kind, Version: info.Version, Target: info.Target, Model: info.Model,
		Label: info.Label, Status: info.Status, Config: cfg, Start: info.Start, Summary: sum, Notes: notes,
		Sweep: lr.Sweep, Step: stepName, ErrorMessages: report.CommonErrors(lr.Records, 5),
		Engine: engine, Predictions: predictions, Energy: energyFigs, GPU: gpuView}
	for _, kv := range cfg {
		switch kv[0] {
		case "load":
			rep.Load = kv[1]
		case "workload":
			rep.Workload = kv[1]
		case "slo", "slos":
			if set, err := slo.ParseAll(splitSLOs(kv[1])); err == nil {
				rep.SLOs = set.Evaluate(sum)
			}
		}
	}
	if len(lr.Records) > 0 {
		// Every run of more than one class (a mix, probes beside a load)
		// shows its classes, summarised as the live run did.
		order, own := report.StoredClasses(cfg)
		var objectives slo.Set
		for _, r := range rep.SLOs {
			objectives = append(objectives, r.Objective)
		}
		_, rep.Classes = report.ClassSummaries(lr.Records, stats.Options{OfferedRateRPS: sum.OfferedRateRPS}, objectives, own, order)
		report.OverRun(rep.Classes, sum.DurationS)
	}
	view, note := serverView(st, id, max(step, store.WholeRun), lr.Records, &sum)
	rep.Server = view
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	lr.Report = rep
	return lr, nil
}

// The configuration pairs in which a simulated run keeps its report's
// engine figures and prediction ranges (JSON), read back into the report.
const (
	EngineKey      = "report_engine"
	PredictionsKey = "report_prediction_ranges"
	// SweepKey keeps what a sweep printed beside its steps (SweepSaid).
	SweepKey = "report_sweep"
	// EnergyKey and GPUKey keep a run's energy figures and GPU view (its
	// per-GPU figures and notes; timelines are in --out's files).
	EnergyKey = "report_energy"
	GPUKey    = "report_gpu"
)

// SweepSaid is what a sweep's report says beside its steps, knee and
// SLO-safe point — its objectives, notes and warnings, which class breaks
// first, the predicted ranges — kept with the run (JSON under SweepKey) so
// that knee report prints the sweep as the live run printed it.
type SweepSaid struct {
	SLOs        []string                `json:"slos,omitempty"`
	ClassSLOs   []string                `json:"class_slos,omitempty"`
	Notes       []string                `json:"notes,omitempty"`
	Warnings    []string                `json:"warnings,omitempty"`
	BreaksFirst *sweep.BreaksFirst      `json:"breaks_first,omitempty"`
	Ranges      []sweep.PredictionRange `json:"prediction_ranges,omitempty"`
}

// SaidBy is what res says beside its steps.
func SaidBy(res *sweep.Result) SweepSaid {
	return SweepSaid{SLOs: res.SLOs, ClassSLOs: res.ClassSLOs, Notes: res.Notes, Warnings: res.Warnings,
		BreaksFirst: res.BreaksFirst, Ranges: res.Ranges}
}

// Into puts what was said back into res, a sweep read from the store.
func (s SweepSaid) Into(res *sweep.Result) {
	res.SLOs, res.ClassSLOs, res.Notes, res.Warnings = s.SLOs, s.ClassSLOs, s.Notes, s.Warnings
	res.BreaksFirst, res.Ranges = s.BreaksFirst, s.Ranges
}

// keptNote says whether the run kept a note (a "note" pair of its
// configuration) that begins with prefix: a run that kept the notes it
// printed already says, in its own words, what Load would add.
func keptNote(config []byte, prefix string) bool {
	for _, kv := range ConfigPairs(config) {
		if kv[0] == "note" && strings.HasPrefix(kv[1], prefix) {
			return true
		}
	}
	return false
}

// serverView rebuilds a stored run's server view (nil when it scraped
// nothing or the series is unreadable, which a note says).
func serverView(st *store.Store, id int64, step int, recs []record.Request, sum *stats.Summary) (*scrape.View, string) {
	all, err := st.ServerSeries(id)
	if err != nil || all[step] == nil {
		return nil, ""
	}
	var s scrape.Series
	if err := json.Unmarshal(all[step], &s); err != nil {
		return nil, fmt.Sprintf("the stored server metrics are unreadable (%v); the server view is left out", err)
	}
	return scrape.BuildView(&s, recs, sum.Window.StartMS, sum.Window.EndMS), ""
}

func unInf(d *stats.Dist) {
	for _, v := range []*float64{&d.Mean, &d.P50, &d.P90, &d.P95, &d.P99, &d.P999, &d.Max} {
		if math.IsInf(*v, 0) {
			*v = math.NaN()
		}
	}
}

func splitSLOs(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '\n' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ConfigPairs flattens a stored JSON configuration object into ordered
// key/value pairs (nested objects as dotted keys, arrays as JSON text),
// keeping the order the object was written in.
func ConfigPairs(raw json.RawMessage) [][2]string {
	var out [][2]string
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(prefix string) error
	walk = func(prefix string) error {
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key := fmt.Sprint(tok)
			if prefix != "" {
				key = prefix + "." + key
			}
			var v json.RawMessage
			// Peek: objects recurse, everything else is one value.
			if err := dec.Decode(&v); err != nil {
				return err
			}
			v = bytes.TrimSpace(v)
			switch {
			case len(v) > 0 && v[0] == '{':
				sub := ConfigPairs(v)
				for _, kv := range sub {
					out = append(out, [2]string{key + "." + kv[0], kv[1]})
				}
			case len(v) > 0 && v[0] == '"':
				var s string
				json.Unmarshal(v, &s)
				out = append(out, [2]string{key, s})
			default:
				out = append(out, [2]string{key, string(v)})
			}
		}
		return nil
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	walk("")
	return out
}

// PairsJSON writes ordered pairs as a JSON object, keeping their order.
func PairsJSON(pairs [][2]string) json.RawMessage {
	b, _ := report.OrderedKV(pairs).MarshalJSON() // strings always marshal
	return b
}

// SweepStep is step (counted from 0 as knee report's steps table counts)
// of sweep run id: its load and its records numbered within it. A run that
// is no sweep, or a step it lacks, is bad input naming the steps it has.
func SweepStep(st *store.Store, id int64, step int) (load string, recs []record.Request, err error) {
	res, err := st.SweepResult(id)
	if err != nil {
		return "", nil, DBErr(err)
	}
	if res == nil || len(res.Steps) == 0 {
		return "", nil, badinput.Errorf("--step %d: run %d is not a sweep with steps; --step picks a stored sweep's step", step, id)
	}
	if step < 0 || step >= len(res.Steps) {
		have := make([]string, len(res.Steps))
		for i, s := range res.Steps {
			have[i] = fmt.Sprintf("%d (%s)", i, s.Load)
		}
		return "", nil, badinput.Errorf("--step %d: run %d has steps 0 to %d: %s", step, id, len(res.Steps)-1, strings.Join(have, ", "))
	}
	err = st.StepRecords(id, func(s int, r *record.Request) error {
		if s == step {
			recs = append(recs, *StepNumbered(s, r))
		}
		return nil
	})
	if err != nil {
		return "", nil, DBErr(err)
	}
	return res.Steps[step].Load.String(), recs, nil
}
