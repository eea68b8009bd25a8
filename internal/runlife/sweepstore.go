package runlife

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// SweepStore keeps a sweep in the run database: one run of kind "sweep"
// begun before the first step, so every step's per-request records are
// stored as they come (tagged with their step), and finished with every
// step, the knee and the SLO-safe point (store.SaveSweepResult). Its summary
// is the step sweep.Result.SummaryStep picks. A nil SweepStore (--no-store) ignores
// everything.
type SweepStore struct {
	sr *Stored

	mu     sync.Mutex
	loads  []float64              // measured loads, in the order measured
	tags   []int                  // the step number each measured step's records carry now
	series map[int]*scrape.Series // server metrics by measured step
}

// Server keeps the current step's scraped series (stored at finish, when
// the steps' final order is known).
func (ss *SweepStore) Server(s *scrape.Series) {
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

// Step tags the records added from now on with the next step.
func (ss *SweepStore) Step(load sweep.Load) {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	// The new step's tag is one past every stored step, so it collides with
	// none until the next checkpoint places it.
	ss.sr.W.SetStep(len(ss.loads))
	ss.tags = append(ss.tags, len(ss.loads))
	ss.loads = append(ss.loads, load.Value)
	ss.mu.Unlock()
}

// place renumbers the stored records' steps to res's order (records are
// tagged in measurement order; res lists steps by load, and an automatic
// sweep refines between earlier steps) and returns, for each measured
// step, its index in res.
func (ss *SweepStore) place(res *sweep.Result) (map[int]int, error) {
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
	if err := ss.sr.W.Flush(); err != nil {
		return nil, fmt.Errorf("storing the sweep's records: %w", err)
	}
	renumber := map[int]int{}
	for measured, i := range at {
		if ss.tags[measured] != i {
			renumber[ss.tags[measured]] = i
		}
	}
	if err := ss.sr.St.RenumberRecordSteps(ss.sr.W.ID(), renumber); err != nil {
		return nil, fmt.Errorf("storing the sweep: %w", err)
	}
	for measured, i := range at {
		ss.tags[measured] = i
	}
	return at, nil
}

// Checkpoint stores the steps measured so far with their analysis and the
// summary a finished sweep would carry, so a sweep killed between steps
// keeps them (Ctrl-C reaches finish; kill -9 does not).
func (ss *SweepStore) Checkpoint(steps []sweep.Step, opts sweep.Options) {
	if ss == nil || len(steps) == 0 || ss.sr.Shard != nil { // a sharded sweep is stored once, at its end
		return
	}
	res, err := sweep.Analyze(append([]sweep.Step(nil), steps...), opts)
	if err != nil {
		return
	}
	if _, err := ss.place(res); err != nil {
		return
	}
	if ss.sr.St.SaveSweepResult(ss.sr.W.ID(), res) == nil {
		pick, _ := res.SummaryStep()
		_ = ss.sr.St.SetSummary(ss.sr.W.ID(), res.Steps[pick].Summary)
	}
}

// Add stores one record of the current step.
func (ss *SweepStore) Add(r *record.Request) {
	if ss != nil {
		ss.sr.Add(ss.storeID(r))
	}
}

// Finish stores the analysed sweep (res may be nil when no step finished)
// and closes the run. It returns the run id ("" when not stored).
func (ss *SweepStore) Finish(meta Meta, res *sweep.Result, status string) (string, error) {
	if ss == nil {
		return "", nil
	}
	if ss.sr.Shard != nil {
		return ss.finishSharded(meta, res, status)
	}
	st, id := ss.sr.St, ss.sr.W.ID()
	if res == nil || len(res.Steps) == 0 {
		return ss.sr.ID(), ss.sr.Finish(nil, status) // failed, or interrupted before a step measured anything
	}
	cfg, err := SweepStoredConfig(meta, res, ss.sr.ID())
	if err != nil {
		return "", errors.Join(fmt.Errorf("storing the sweep: %w", err), ss.sr.Finish(nil, store.StatusFailed))
	}
	// On a full disk the finish's own error says where the records the
	// database did not take are kept (an *UnstoredError): never dropped.
	if err := st.SetConfig(id, runs.PairsJSON(cfg)); err != nil {
		return "", errors.Join(fmt.Errorf("storing the sweep: %w", err), ss.sr.Finish(nil, store.StatusFailed))
	}
	if err := st.SaveSweepResult(id, res); err != nil {
		return "", errors.Join(fmt.Errorf("storing the sweep: %w", err), ss.sr.Finish(nil, store.StatusFailed))
	}
	at, err := ss.place(res)
	if err != nil {
		return "", errors.Join(err, ss.sr.Finish(nil, store.StatusFailed))
	}
	for measured, s := range ss.series {
		if i, ok := at[measured]; ok {
			if err := SaveServerSeries(ss.sr, "", i, s); err != nil {
				return "", err
			}
		}
	}
	pick, _ := res.SummaryStep()
	if err := ss.sr.Finish(&report.Run{Summary: res.Steps[pick].Summary}, status); err != nil {
		return "", err
	}
	return ss.sr.ID(), nil
}

// SweepStoredConfig is the configuration a finished sweep is stored with:
// its load and settings, and what its report said beside the steps
// (runs.SweepKey), so that knee report prints the sweep as the run did.
func SweepStoredConfig(meta Meta, res *sweep.Result, id string) ([][2]string, error) {
	said := runs.SaidBy(res)
	// Notes and warnings quote endpoints of a --url that may carry a
	// password: kept as printed, without it (the live notes are redacted
	// when printed). The note the sweep adds once stored is kept too: the
	// run is read back only when it was stored.
	said.Notes = redact.Texts(append(slices.Clone(said.Notes), StoredNote(id)))
	said.Warnings = redact.Texts(slices.Clone(said.Warnings))
	b, err := json.Marshal(said)
	if err != nil {
		return nil, err
	}
	return append(append([][2]string{{"load", meta.Load}}, meta.Config...), [2]string{runs.SweepKey, string(b)}), nil
}

// StoredReport renders stored run id as knee report's text does (with a
// sharded run's shard notes): a sweep prints itself this way once stored,
// so the live and the stored report are one.
func StoredReport(db string, getenv func(string) string, id string) func(io.Writer) error {
	return func(w io.Writer) error {
		st, runID, err := runs.OpenRun(db, getenv, id)
		if err != nil {
			return err
		}
		defer st.Close()
		lr, err := LoadReport(st, runID)
		if err != nil {
			return err
		}
		var buf bytes.Buffer // whole, or nothing printed
		if err := report.Text(&buf, lr.Report); err != nil {
			return err
		}
		_, err = w.Write(buf.Bytes())
		return err
	}
}

// StoredNote is the note a sweep adds once stored as run id.
func StoredNote(id string) string { return "stored as run " + id }

// storeID is the ID a record of a sharded sweep's step is stored under:
// each step numbers its requests from 0, and a shard's records are keyed
// by it.
func (ss *SweepStore) storeID(r *record.Request) *record.Request {
	if ss.sr.Shard == nil {
		return r
	}
	ss.mu.Lock()
	step := len(ss.loads) - 1
	ss.mu.Unlock()
	c := *r
	c.ID = store.SweepRecordID(step, r.ID)
	return &c
}

// finishSharded ends this shard's part of a sharded sweep; the shard that
// ends the run stores the sweep: its steps were judged over every shard's
// records, so its result is the run's.
func (ss *SweepStore) finishSharded(meta Meta, res *sweep.Result, status string) (string, error) {
	sr := ss.sr
	defer sr.St.Close()
	if status == store.StatusInterrupted && sr.Shard.OthersStopped {
		status = store.StatusComplete // this shard measured all it was asked to
	}
	_, ended, err := sr.ShardW.FinishShard(status)
	id := sr.ID()
	if err != nil || !ended || res == nil || len(res.Steps) == 0 {
		return id, err
	}
	st, runID := sr.St, sr.W.ID()
	cfg, err := SweepStoredConfig(meta, res, id)
	if err != nil {
		return id, fmt.Errorf("storing the sweep: %w", err)
	}
	if err := st.SetConfig(runID, runs.PairsJSON(cfg)); err != nil {
		return id, fmt.Errorf("storing the sweep: %w", err)
	}
	if err := st.SaveSweepResult(runID, res); err != nil {
		return id, fmt.Errorf("storing the sweep: %w", err)
	}
	// Records carry the step's index in measured order, the same on every
	// shard; the stored sweep lists its steps by load.
	renumber := map[int]int{}
	for measured, load := range ss.loads {
		for i := range res.Steps {
			if res.Steps[i].Load.Value == load && measured != i {
				renumber[measured] = i
			}
		}
	}
	if err := st.RenumberRecordSteps(runID, renumber); err != nil {
		return id, fmt.Errorf("storing the sweep: %w", err)
	}
	pick, _ := res.SummaryStep()
	if err := st.SetSummary(runID, res.Steps[pick].Summary); err != nil {
		return id, fmt.Errorf("storing the sweep: %w", err)
	}
	return id, nil
}

// NewSweepStore keeps a sweep in the run stored as sr (nil: not stored);
// its load and configuration are replaced when the sweep finishes (the
// steps are known only then).
func NewSweepStore(sr *Stored) *SweepStore {
	if sr == nil {
		return nil
	}
	return &SweepStore{sr: sr}
}

// Run is the stored run the sweep streams into.
func (ss *SweepStore) Run() *Stored { return ss.sr }
