package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/spf13/pflag"
)

// storeFlags choose the run database for commands that store runs.
type storeFlags struct {
	db      string
	noStore bool
	// sharding, when set and active, makes begin join a sharded run
	// (bench --shards) instead of starting a run of its own.
	sharding *shardFlags
}

func (s *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.db, "db", "", "run database: an SQLite file or a postgres:// URL (default $KNEE_DB, else $XDG_DATA_HOME/knee/knee.db)")
	fs.BoolVar(&s.noStore, "no-store", false, "do not store this run in the database")
}

// runMeta describes a run for storage and reports.
type runMeta struct {
	kind, target, model, label, load string
	config                           [][2]string
}

// storedConfig is the configuration the run database keeps, and the one
// the live report prints so that knee report prints the same.
func (m runMeta) storedConfig() [][2]string {
	return append([][2]string{{"load", m.load}}, m.config...)
}

// storedRun streams one run's records into the database; a nil storedRun
// (--no-store) ignores everything.
type storedRun struct {
	st *store.Store
	w  runWriter
	// shardW is w when this is one shard of a run (nil otherwise): the
	// shard's own end is store.RunWriter's FinishShard.
	shardW *store.RunWriter
	shard  *shardFlags // nil unless this is one shard of a run
	// keepsReport: the run's report reads its configuration from
	// rep.Config (bench), so finish stores that with the report's notes
	// and start.
	keepsReport bool
	// partialRun: this shard ended a run that some shard did not complete
	// (finishShard); bench exits 1 saying so.
	partialRun string
}

// runWriter is what a run needs of store.RunWriter.
type runWriter interface {
	ID() int64
	Add(*record.Request)
	SetStep(int)
	Flush() error
	Finish(stats.Summary, string) error
}

// beginRunWriter starts a stored run; tests replace it to fail as a full
// disk does.
var beginRunWriter = func(st *store.Store, meta store.RunMeta) (runWriter, error) {
	return st.BeginRun(meta)
}

// begin opens the database and starts a run. A database that cannot be
// opened is a usage error: the user named it (or its default is broken).
func (s *storeFlags) begin(env *Env, meta runMeta) (*storedRun, error) {
	if s.noStore {
		return nil, nil
	}
	path := s.db
	if path == "" {
		path = store.DefaultPath(env.Getenv)
	}
	st, err := store.OpenWith(path, env.storeOptions)
	if err != nil {
		return nil, Usagef("--db %s: %v (use --no-store to run without storing)", store.Redact(path), err)
	}
	cfg := meta.storedConfig()
	rm := store.RunMeta{Kind: meta.kind, Label: meta.label, Target: meta.target,
		Model: meta.model, Config: pairsJSON(cfg), Version: Version}
	if s.sharding != nil && s.sharding.Active() {
		w, err := s.sharding.JoinRun(st, rm, cfg, func(msg string) { fmt.Fprintln(env.Stderr, "knee: "+msg) })
		if err != nil {
			st.Close()
			return nil, err
		}
		// A shard measures on through a database outage: say so when it
		// starts and ends, not only at the run's end.
		w.OnTrouble(func(msg string) {
			fmt.Fprintf(env.Stderr, "knee: shard %d of run %q: %s\n", s.sharding.Index, s.sharding.RunName, msg)
		})
		return &storedRun{st: st, w: w, shardW: w, shard: s.sharding}, nil
	}
	if s.sharding != nil {
		rm.Name = s.sharding.RunName // --run-name alone names the run
	}
	w, err := beginRunWriter(st, rm)
	if err != nil {
		st.Close()
		if errors.Is(err, store.ErrNameTaken) {
			return nil, Usagef("--run-name: %v", err)
		}
		return nil, fmt.Errorf("storing the run in %s: %w", store.Redact(path), err)
	}
	if rw, ok := w.(*store.RunWriter); ok {
		rw.OnTrouble(func(msg string) { fmt.Fprintln(env.Stderr, "knee: "+msg) })
	}
	return &storedRun{st: st, w: w}, nil
}

func (r *storedRun) add(rec *record.Request) {
	if r != nil {
		r.w.Add(rec)
	}
}

func (r *storedRun) id() string {
	if r == nil {
		return ""
	}
	return strconv.FormatInt(r.w.ID(), 10)
}

func (r *storedRun) finish(rep *report.Run, status string) error {
	if r == nil {
		return nil
	}
	defer r.st.Close()
	if r.shard != nil {
		return r.finishShard(status)
	}
	if rep == nil {
		return r.w.Finish(statsZero, status)
	}
	if !r.keepsReport {
		return r.w.Finish(rep.Summary, status)
	}
	// The notes the run printed are kept with its configuration (as
	// "note" pairs, which knee report reads back), so the stored report
	// says what the live one said.
	kept, err := withReportExtras(withNotes(rep.Config, rep.Notes), rep)
	if err == nil {
		err = r.st.SetConfig(r.w.ID(), pairsJSON(kept))
	}
	if err == nil && !rep.Start.IsZero() {
		err = r.st.SetStart(r.w.ID(), rep.Start)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("keeping the run's notes and start: %w", err), r.w.Finish(rep.Summary, status))
	}
	return r.w.Finish(rep.Summary, status)
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
// figures and notes, not the exporters' timelines (bounded by the
// scraper, but up to 64 exporters' worth; --out's gpu_metrics.json has
// every scrape).
func storedGPUView(v *scrape.GPUView) *scrape.GPUView {
	if v == nil {
		return nil
	}
	c := *v
	c.Exporters = append([]scrape.GPUExporter(nil), v.Exporters...)
	for i := range c.Exporters {
		c.Exporters[i].Timeline = nil
	}
	return &c
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
