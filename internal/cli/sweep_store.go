package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// sweepStore keeps a sweep in the run database: one run of kind "sweep"
// begun before the first step, so every step's per-request records are
// stored as they come (tagged with their step), and finished with every
// step, the knee and the SLO-safe point (store.SaveSweepResult). Its summary
// is the step sweep.Result.SummaryStep picks. A nil sweepStore (--no-store) ignores
// everything.
type sweepStore struct {
	sr *storedRun

	mu     sync.Mutex
	loads  []float64              // measured loads, in the order measured
	tags   []int                  // the step number each measured step's records carry now
	series map[int]*scrape.Series // server metrics by measured step
}

// server keeps the current step's scraped series (stored at finish, when
// the steps' final order is known).
func (ss *sweepStore) server(s *scrape.Series) {
	if ss == nil || s == nil {
		return
	}
	ss.mu.Lock()
	if ss.series == nil {
		ss.series = map[int]*scrape.Series{}
	}
	ss.series[len(ss.loads)-1] = s
	ss.mu.Unlock()
}

// beginSweepStore starts the stored run; meta's load and configuration are
// replaced when the sweep finishes (the steps are known only then).
func beginSweepStore(env *Env, s *storeFlags, meta runMeta) (*sweepStore, error) {
	sr, err := s.begin(env, meta)
	if err != nil || sr == nil {
		return nil, err
	}
	return &sweepStore{sr: sr}, nil
}

// step tags the records added from now on with the next step.
func (ss *sweepStore) step(load sweep.Load) {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	// The new step's tag is one past every stored step, so it collides with
	// none until the next checkpoint places it.
	ss.sr.w.SetStep(len(ss.loads))
	ss.tags = append(ss.tags, len(ss.loads))
	ss.loads = append(ss.loads, load.Value)
	ss.mu.Unlock()
}

// place renumbers the stored records' steps to res's order (records are
// tagged in measurement order; res lists steps by load, and an automatic
// sweep refines between earlier steps) and returns, for each measured
// step, its index in res.
func (ss *sweepStore) place(res *sweep.Result) (map[int]int, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	at := map[int]int{}
	for measured, load := range ss.loads {
		for i := range res.Steps {
			if res.Steps[i].Load.Value == load {
				at[measured] = i
			}
		}
	}
	if err := ss.sr.w.Flush(); err != nil {
		return nil, fmt.Errorf("storing the sweep's records: %w", err)
	}
	renumber := map[int]int{}
	for measured, i := range at {
		if ss.tags[measured] != i {
			renumber[ss.tags[measured]] = i
		}
	}
	if err := ss.sr.st.RenumberRecordSteps(ss.sr.w.ID(), renumber); err != nil {
		return nil, fmt.Errorf("storing the sweep: %w", err)
	}
	for measured, i := range at {
		ss.tags[measured] = i
	}
	return at, nil
}

// checkpoint stores the steps measured so far with their analysis and the
// summary a finished sweep would carry, so a sweep killed between steps
// keeps them (Ctrl-C reaches finish; kill -9 does not).
func (ss *sweepStore) checkpoint(steps []sweep.Step, opts sweep.Options) {
	if ss == nil || len(steps) == 0 || ss.sr.shard != nil { // a sharded sweep is stored once, at its end
		return
	}
	res, err := sweep.Analyze(append([]sweep.Step(nil), steps...), opts)
	if err != nil {
		return
	}
	if _, err := ss.place(res); err != nil {
		return
	}
	if ss.sr.st.SaveSweepResult(ss.sr.w.ID(), res) == nil {
		pick, _ := res.SummaryStep()
		_ = ss.sr.st.SetSummary(ss.sr.w.ID(), res.Steps[pick].Summary)
	}
}

func (ss *sweepStore) add(r *record.Request) {
	if ss != nil {
		ss.sr.add(ss.storeID(r))
	}
}

// finish stores the analysed sweep (res may be nil when no step finished)
// and closes the run. It returns the run id ("" when not stored).
func (ss *sweepStore) finish(meta runMeta, res *sweep.Result, status string) (string, error) {
	if ss == nil {
		return "", nil
	}
	if ss.sr.shard != nil {
		return ss.finishSharded(meta, res, status)
	}
	st, id := ss.sr.st, ss.sr.w.ID()
	if res == nil || len(res.Steps) == 0 {
		return ss.sr.id(), ss.sr.finish(nil, status) // failed, or interrupted before a step measured anything
	}
	cfg, err := sweepStoredConfig(meta, res, ss.sr.id())
	if err != nil {
		return "", errors.Join(fmt.Errorf("storing the sweep: %w", err), ss.sr.finish(nil, store.StatusFailed))
	}
	// On a full disk the finish's own error says where the records the
	// database did not take are kept (an *UnstoredError): never dropped.
	if err := st.SetConfig(id, pairsJSON(cfg)); err != nil {
		return "", errors.Join(fmt.Errorf("storing the sweep: %w", err), ss.sr.finish(nil, store.StatusFailed))
	}
	if err := st.SaveSweepResult(id, res); err != nil {
		return "", errors.Join(fmt.Errorf("storing the sweep: %w", err), ss.sr.finish(nil, store.StatusFailed))
	}
	at, err := ss.place(res)
	if err != nil {
		return "", errors.Join(err, ss.sr.finish(nil, store.StatusFailed))
	}
	for measured, s := range ss.series {
		if i, ok := at[measured]; ok {
			if err := saveServerSeries(ss.sr, "", i, s); err != nil {
				return "", err
			}
		}
	}
	pick, _ := res.SummaryStep()
	if err := ss.sr.finish(&report.Run{Summary: res.Steps[pick].Summary}, status); err != nil {
		return "", err
	}
	return ss.sr.id(), nil
}

// storeSweep stores a finished sweep without per-request records (knee sim
// sweep, whose records the simulator reproduces exactly from the stored
// configuration and seed).
func storeSweep(env *Env, s *storeFlags, meta runMeta, res *sweep.Result, status string) (string, error) {
	ss, err := beginSweepStore(env, s, meta)
	if err != nil {
		return "", err
	}
	return ss.finish(meta, res, status)
}

// sweepStoredConfig is the configuration a finished sweep is stored with:
// its load and settings, and what its report said beside the steps
// (runs.SweepKey), so that knee report prints the sweep as the run did.
func sweepStoredConfig(meta runMeta, res *sweep.Result, id string) ([][2]string, error) {
	said := runs.SaidBy(res)
	// Notes and warnings quote endpoints of a --url that may carry a
	// password: kept as printed, without it (the live notes are redacted
	// when printed). The note the sweep adds once stored is kept too: the
	// run is read back only when it was stored.
	said.Notes = redactAll(append(slices.Clone(said.Notes), storedNote(id)))
	said.Warnings = redactAll(slices.Clone(said.Warnings))
	b, err := json.Marshal(said)
	if err != nil {
		return nil, err
	}
	return append(append([][2]string{{"load", meta.load}}, meta.config...), [2]string{runs.SweepKey, string(b)}), nil
}

// storedReport renders stored run id as knee report's text does (with a
// sharded run's shard notes): a sweep prints itself this way once stored,
// so the live and the stored report are one.
func storedReport(env *Env, s *storeFlags, id string) func(io.Writer) error {
	return func(w io.Writer) error {
		st, runID, err := runs.OpenRun(s.db, env.Getenv, id)
		if err != nil {
			return err
		}
		defer st.Close()
		lr, err := runs.Load(st, runID)
		if err != nil {
			return err
		}
		notes, err := runlife.ShardNotes(st, runID)
		if err != nil {
			return err
		}
		lr.Report.Notes = append(lr.Report.Notes, notes...)
		var buf bytes.Buffer // whole, or nothing printed
		if err := report.Text(&buf, lr.Report); err != nil {
			return err
		}
		_, err = w.Write(buf.Bytes())
		return err
	}
}

// storedNote is the note a sweep adds once stored as run id.
func storedNote(id string) string { return "stored as run " + id }
