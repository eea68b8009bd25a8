package runlife

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// Meta describes a run for storage and reports.
type Meta struct {
	Kind, Target, Model, Label, Load string
	Config                           [][2]string
}

// StoredConfig is the configuration the run database keeps, and the one
// the live report prints so that knee report prints the same.
func (m Meta) StoredConfig() [][2]string {
	return append([][2]string{{"load", m.Load}}, m.Config...)
}

// Stored streams one run's records into the database; a nil Stored
// (--no-store) ignores everything.
type Stored struct {
	St *store.Store
	W  RunWriter
	// ShardW is W when this is one shard of a run (nil otherwise): the
	// shard's own end is store.RunWriter's FinishShard.
	ShardW *store.RunWriter
	Shard  *Shard // nil unless this is one shard of a run
	// KeepsReport: the run's report reads its configuration from
	// rep.Config (bench), so Finish stores that with the report's notes
	// and start.
	KeepsReport bool
	// PartialRun: this shard ended a run that some shard did not complete
	// (FinishShard); bench exits 1 saying so.
	PartialRun string
}

// RunWriter is what a run needs of store.RunWriter.
type RunWriter interface {
	ID() int64
	Add(*record.Request)
	SetStep(int)
	Flush() error
	Finish(stats.Summary, string) error
}

// Begin opens the database at path (with opts) and starts a run of meta
// (version: knee's). A database that cannot be opened is bad input: the
// user named it (or its default is broken). With an active shard it joins
// that sharded run instead (say tells what the shard waits for); begin
// starts the run's writer (a test's fails as a full disk does).
func Begin(path string, opts store.Options, meta Meta, version string, shard *Shard, say func(string),
	begin func(*store.Store, store.RunMeta) (RunWriter, error)) (*Stored, error) {
	st, err := store.OpenWith(path, opts)
	if err != nil {
		return nil, badinput.Errorf("--db %s: %v (use --no-store to run without storing)", store.Redact(path), err)
	}
	cfg := meta.StoredConfig()
	rm := store.RunMeta{Kind: meta.Kind, Label: meta.Label, Target: meta.Target,
		Model: meta.Model, Config: runs.PairsJSON(cfg), Version: version}
	if shard != nil && shard.Active() {
		w, err := shard.JoinRun(st, rm, cfg, say)
		if err != nil {
			st.Close()
			return nil, err
		}
		// A shard measures on through a database outage: say so when it
		// starts and ends, not only at the run's end.
		w.OnTrouble(func(msg string) {
			say(fmt.Sprintf("shard %d of run %q: %s", shard.Index, shard.RunName, msg))
		})
		return &Stored{St: st, W: w, ShardW: w, Shard: shard}, nil
	}
	if shard != nil {
		rm.Name = shard.RunName // --run-name alone names the run
	}
	w, err := begin(st, rm)
	if err != nil {
		st.Close()
		if errors.Is(err, store.ErrNameTaken) {
			return nil, badinput.Errorf("--run-name: %v", err)
		}
		return nil, fmt.Errorf("storing the run in %s: %w", store.Redact(path), err)
	}
	if rw, ok := w.(*store.RunWriter); ok {
		rw.OnTrouble(say)
	}
	return &Stored{St: st, W: w}, nil
}

// Add streams rec to the database.
func (r *Stored) Add(rec *record.Request) {
	if r != nil {
		r.W.Add(rec)
	}
}

// ID is the run's id ("" when not stored).
func (r *Stored) ID() string {
	if r == nil {
		return ""
	}
	return strconv.FormatInt(r.W.ID(), 10)
}

// Finish closes the run with rep's summary (nil: none) and status.
func (r *Stored) Finish(rep *report.Run, status string) error {
	if r == nil {
		return nil
	}
	defer r.St.Close()
	if r.Shard != nil {
		return r.finishShard(status)
	}
	if rep == nil {
		return r.W.Finish(stats.Summary{}, status)
	}
	if !r.KeepsReport {
		return r.W.Finish(rep.Summary, status)
	}
	// The notes the run printed are kept with its configuration (as
	// "note" pairs, which knee report reads back), so the stored report
	// says what the live one said.
	kept, err := withReportExtras(withNotes(rep.Config, rep.Notes), rep)
	if err == nil {
		err = r.St.SetConfig(r.W.ID(), runs.PairsJSON(kept))
	}
	if err == nil && !rep.Start.IsZero() {
		err = r.St.SetStart(r.W.ID(), rep.Start)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("keeping the run's notes and start: %w", err), r.W.Finish(rep.Summary, status))
	}
	return r.W.Finish(rep.Summary, status)
}

// withNotes is cfg followed by one "note" pair per note.
func withNotes(cfg [][2]string, notes []string) [][2]string {
	out := append([][2]string{}, cfg...)
	for _, n := range notes {
		out = append(out, [2]string{"note", n})
	}
	return out
}

// storedGPUView is what the run database keeps of a GPU view: the per-GPU
// figures and notes, and the exporters' timelines thinned to 240 points in
// all (at least 16 an exporter), so the UI's GPU panel draws a stored run's
// power and activity over time; --out's gpu_metrics.json has every scrape.
func storedGPUView(v *scrape.GPUView) *scrape.GPUView {
	return v.Thinned(240, 16)
}

// withReportExtras is cfg followed by what a simulated run's report shows
// beside its summary (its engine figures and prediction ranges), as JSON
// pairs that runs.Load reads back into the report rather than its
// configuration.
func withReportExtras(cfg [][2]string, rep *report.Run) ([][2]string, error) {
	for _, x := range []struct {
		key string
		v   any
		ok  bool
	}{
		{runs.EngineKey, rep.Engine, rep.Engine != nil},
		{runs.PredictionsKey, rep.Predictions, rep.Predictions != nil},
		{runs.EnergyKey, rep.Energy, rep.Energy != nil},
		{runs.GPUKey, storedGPUView(rep.GPU), rep.GPU != nil},
	} {
		if !x.ok {
			continue
		}
		b, err := json.Marshal(x.v)
		if err != nil {
			return nil, err
		}
		cfg = append(cfg, [2]string{x.key, string(b)})
	}
	return cfg, nil
}

// finishShard ends this shard's part (FinishShard), noting a run some
// shard did not complete.
func (r *Stored) finishShard(status string) error {
	partial, err := FinishShard(r.St, r.ShardW, status, r.Shard.Merged)
	r.PartialRun = partial
	return err
}

// SaveServerSeries stores a run's (or a sweep step's) series and writes it
// to --out as server_metrics.json (whole run only).
func SaveServerSeries(st *Stored, out string, step int, s *scrape.Series) error {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if out != "" && step == store.WholeRun {
		if err := os.WriteFile(filepath.Join(out, "server_metrics.json"), b, 0o644); err != nil {
			return err
		}
	}
	if st == nil {
		return nil
	}
	if err := st.St.SaveServerSeries(st.W.ID(), step, b); err != nil {
		return fmt.Errorf("storing the server metrics: %w", err)
	}
	return nil
}
