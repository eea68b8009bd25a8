package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// A sharded run (bench --shards N) is one runs row shared by N shard
// processes, found by its run name. Each shard registers (JoinShard), waits
// until all N have and one start time is set (WaitStart), writes its
// records through a RunWriter keyed by the request's index in the whole
// run (so a restarted shard never stores one twice), and finishes its own
// row (FinishShard); the run is complete when every shard is.

// Shard statuses beside the run statuses. A registered shard whose
// process is gone before it began its load reads ShardNeverStarted: it
// measured nothing, which "interrupted" would not say.
const (
	ShardRegistered   = "registered"
	ShardNeverStarted = "registered, never started"
)

// ErrShard wraps what makes a shard unable to join its run: another shard
// holds its index, or the run was started with other settings. The CLI
// makes it bad input (exit 2).
var ErrShard = errors.New("shard refused")

// ShardSpec says which shard of which run this process is.
type ShardSpec struct {
	RunName      string
	Index, Count int
	// Fingerprint is what every shard of the run must share (seed,
	// workload, load): name → value. The first shard's is the run's.
	Fingerprint map[string]string
}

// ShardJoin is a registered shard.
type ShardJoin struct {
	st      *Store
	RunID   int64
	Spec    ShardSpec
	Attempt int // 2 and up: the index was registered before (a restart)
	// met is the sweep step this process last met at before its start
	// was fixed (a sharded sweep; see MeetStep).
	met int
}

// ShardInfo is a shard as stored.
type ShardInfo struct {
	Index int
	// Status is effective: a running shard whose process is gone (its
	// heartbeat stale, or its pid dead on this host) reads interrupted, a
	// registered one ShardNeverStarted.
	Status  string
	Attempt int
	Host    string
	// Started (its schedule's zero), Began (when its process actually
	// began the load) and Ended are on the shared timeline (the database's
	// clock).
	Started, Began, Ended time.Time
	// ClockOffset is the database clock minus the shard's; Uncertainty
	// bounds its error (half the smallest round trip).
	ClockOffset, ClockUncertainty time.Duration
	Records                       int
}

// ServerNow is the database server's clock (SQLite's is this machine's).
func (st *Store) ServerNow(ctx context.Context) (time.Time, error) {
	if !st.pg {
		return st.now(), nil
	}
	var t time.Time
	err := st.db.QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t, err
}

// JoinShard registers shard sp.Index of the run named sp.RunName, creating
// the run when it is the first. It refuses (ErrShard) a shard whose count or
// fingerprint differs from the run's, naming the difference, and an index
// another live process holds.
func (st *Store) JoinShard(meta RunMeta, sp ShardSpec) (*ShardJoin, error) {
	if sp.RunName == "" || sp.Count < 1 || sp.Index < 0 || sp.Index >= sp.Count {
		return nil, fmt.Errorf("store: shard %d of %d of run %q: want a run name and an index below the count", sp.Index, sp.Count, sp.RunName)
	}
	fp, err := json.Marshal(sp.Fingerprint)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if st.pg { // SQLite's write transactions are serialized already
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(?))`, "knee run "+sp.RunName); err != nil {
			return nil, err
		}
	}
	var (
		id     int64
		count  int
		runFP  string
		status string
		kind   string
	)
	err = tx.QueryRowContext(ctx, `SELECT id, shards, fingerprint, status, kind FROM runs WHERE run_name = ?`, sp.RunName).Scan(&id, &count, &runFP, &status, &kind)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if id, err = st.insertRun(ctx, tx, meta, StatusRunning); err != nil {
			return nil, err
		}
		// pid 0: the run outlives any one shard's process; its heartbeat
		// (any shard's flush) says whether it is alive.
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET run_name = ?, shards = ?, fingerprint = ?, pid = 0 WHERE id = ?`,
			sp.RunName, sp.Count, string(fp), id); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if count != sp.Count {
			return nil, fmt.Errorf("%w: run %q has %d shards, this one says --shards %d", ErrShard, sp.RunName, count, sp.Count)
		}
		if diff := fingerprintDiff(runFP, sp.Fingerprint); diff != "" {
			return nil, fmt.Errorf("%w: run %q was started with other settings: %s", ErrShard, sp.RunName, diff)
		}
		// The other shards of a sweep stop at a step one of them left
		// partial and close the run: no later step will be met.
		if kind == KindSweep && status != StatusRunning {
			return nil, fmt.Errorf("%w: run %q ended %s: its other shards closed the sweep, so nothing is left to join (a new sweep needs another --run-name)",
				ErrShard, sp.RunName, status)
		}
	}
	host, _ := os.Hostname()
	now := st.now()
	join := &ShardJoin{st: st, RunID: id, Spec: sp, Attempt: 1, met: -1}
	var (
		shStatus, shHost string
		pid              int
		heartbeat        int64
	)
	err = tx.QueryRowContext(ctx, `SELECT status, host, pid, heartbeat_ns, attempt FROM shards WHERE run_id = ? AND shard = ?`, id, sp.Index).
		Scan(&shStatus, &shHost, &pid, &heartbeat, &join.Attempt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO shards (run_id, shard, status, host, pid, registered_ns, heartbeat_ns) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, sp.Index, ShardRegistered, host, os.Getpid(), now.UnixNano(), now.UnixNano()); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case shStatus == StatusComplete:
		return nil, fmt.Errorf("%w: shard %d of run %q has already completed; a new run needs another --run-name", ErrShard, sp.Index, sp.RunName)
	case (shStatus == ShardRegistered || shStatus == StatusRunning) && !st.writerGone(time.Unix(0, heartbeat), shHost, pid):
		return nil, fmt.Errorf("%w: shard %d of run %q is already held by %s (pid %d, heartbeat %v ago): two shards with one index",
			ErrShard, sp.Index, sp.RunName, shHost, pid, now.Sub(time.Unix(0, heartbeat)).Round(time.Millisecond))
	default: // a restart of an interrupted or failed index
		join.Attempt++
		if _, err := tx.ExecContext(ctx, `UPDATE shards SET status = ?, host = ?, pid = ?, heartbeat_ns = ?, attempt = ?, ended_ns = NULL
			WHERE run_id = ? AND shard = ?`, ShardRegistered, host, os.Getpid(), now.UnixNano(), join.Attempt, id, sp.Index); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, ended_ns = NULL WHERE id = ?`, StatusRunning, id); err != nil {
			return nil, err
		}
	}
	return join, tx.Commit()
}

// fingerprintDiff names the settings that differ between the run's
// fingerprint (JSON) and a shard's, "" when none.
func fingerprintDiff(runJSON string, mine map[string]string) string {
	var run map[string]string
	if err := json.Unmarshal([]byte(runJSON), &run); err != nil {
		return "the run's stored settings are unreadable"
	}
	var diffs []string
	for k, v := range mine {
		if rv, ok := run[k]; !ok || rv != v {
			diffs = append(diffs, fmt.Sprintf("%s is %q here, %q in the run", k, v, rv))
		}
	}
	for k, rv := range run {
		if _, ok := mine[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s is unset here, %q in the run", k, rv))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// WaitStart waits until all shards have registered, then returns the run's
// common start on the database's clock: the shard that completes the set
// fixes it lead after its clock's now. It keeps this shard's heartbeat
// fresh meanwhile, polls every poll, and gives up at timeout naming the
// shards that never came. A run already started (a restarted shard)
// returns its start at once.
func (j *ShardJoin) WaitStart(ctx context.Context, timeout, lead, poll time.Duration) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		start, present, err := j.tryStart(ctx, lead)
		if err != nil {
			return time.Time{}, err
		}
		if !start.IsZero() {
			return start, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline.C:
			var missing []string
			for i := range j.Spec.Count {
				if !slices.Contains(present, i) {
					missing = append(missing, fmt.Sprint(i))
				}
			}
			return time.Time{}, fmt.Errorf("%w: run %q: after %v, shard(s) %s of %d never registered (each pod runs with its own JOB_COMPLETION_INDEX or --shard)",
				ErrShard, j.Spec.RunName, timeout, strings.Join(missing, ", "), j.Spec.Count)
		case <-tick.C:
		}
	}
}

func (j *ShardJoin) tryStart(ctx context.Context, lead time.Duration) (time.Time, []int, error) {
	st := j.st
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return time.Time{}, nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE shards SET heartbeat_ns = ? WHERE run_id = ? AND shard = ?`, st.now().UnixNano(), j.RunID, j.Spec.Index); err != nil {
		return time.Time{}, nil, err
	}
	var startNS sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT start_at_ns FROM runs WHERE id = ?`, j.RunID).Scan(&startNS); err != nil {
		return time.Time{}, nil, err
	}
	if startNS.Valid {
		return time.Unix(0, startNS.Int64), nil, tx.Commit()
	}
	rows, err := tx.QueryContext(ctx, `SELECT shard FROM shards WHERE run_id = ?`, j.RunID)
	if err != nil {
		return time.Time{}, nil, err
	}
	var present []int
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			rows.Close()
			return time.Time{}, nil, err
		}
		present = append(present, i)
	}
	rows.Close()
	if len(present) < j.Spec.Count {
		return time.Time{}, present, tx.Commit()
	}
	now, err := st.ServerNow(ctx)
	if err != nil {
		return time.Time{}, nil, err
	}
	start := now.Add(lead)
	// Only the first shard to see the full set fixes the start.
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET start_at_ns = ? WHERE id = ? AND start_at_ns IS NULL`, start.UnixNano(), j.RunID); err != nil {
		return time.Time{}, nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT start_at_ns FROM runs WHERE id = ?`, j.RunID).Scan(&startNS); err != nil {
		return time.Time{}, nil, err
	}
	return time.Unix(0, startNS.Int64), present, tx.Commit()
}

// Begin marks the shard running, records when its load began on the shared
// timeline and its clock's offset and uncertainty, and starts its writer.
func (j *ShardJoin) Begin(started time.Time, offset, uncertainty time.Duration) (*RunWriter, error) {
	if _, err := j.st.db.Exec(`UPDATE shards SET status = ?, started_ns = ?, clock_offset_ns = ?, clock_uncertainty_ns = ?, heartbeat_ns = ?
		WHERE run_id = ? AND shard = ?`, StatusRunning, started.UnixNano(), int64(offset), int64(uncertainty), j.st.now().UnixNano(),
		j.RunID, j.Spec.Index); err != nil {
		return nil, err
	}
	return j.st.startWriter(j.RunID, j.Spec.Index), nil
}

// SetStarted records when the shard's load actually began, on the shared
// timeline.
func (j *ShardJoin) SetStarted(t time.Time) error {
	_, err := j.st.db.Exec(`UPDATE shards SET started_ns = ? WHERE run_id = ? AND shard = ?`, t.UnixNano(), j.RunID, j.Spec.Index)
	return err
}

// FinishShard stops a shard's writer, stores its pending records and its
// final status (failed instead of complete when records could not be
// stored: the error is then an *UnstoredError); when no shard is left running, the run ends: complete when
// every shard completed, interrupted otherwise. It returns how many of the
// run's shards are complete and whether the run has ended.
func (w *RunWriter) FinishShard(status string) (complete int, ended bool, err error) {
	if w.shard < 0 {
		return 0, false, errors.New("store: FinishShard on a run that is not sharded")
	}
	if !validFinal(status) {
		return 0, false, fmt.Errorf("store: final status %q (want complete, interrupted or failed)", status)
	}
	// A shard stored as failed can be stored again by a restart of its index.
	status, errs, err := w.closeAndFlush("shard", status)
	if err != nil {
		return 0, false, err
	}
	ctx := context.Background()
	tx, err := w.st.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, errors.Join(append(errs, err)...)
	}
	defer tx.Rollback()
	if w.st.pg {
		// Shards finishing at once each count the others: the run's row
		// lock makes them count one after another, so the last one ends it.
		if _, err := tx.ExecContext(ctx, `SELECT id FROM runs WHERE id = ? FOR UPDATE`, w.id); err != nil {
			return 0, false, errors.Join(append(errs, err)...)
		}
	}
	now := w.st.now().UnixNano()
	if _, err := tx.ExecContext(ctx, `UPDATE shards SET status = ?, ended_ns = ?, heartbeat_ns = ? WHERE run_id = ? AND shard = ?`,
		status, now, now, w.id, w.shard); err != nil {
		return 0, false, errors.Join(append(errs, err)...)
	}
	var shards int
	if err := tx.QueryRowContext(ctx, `SELECT r.shards,
		(SELECT COUNT(*) FROM shards s WHERE s.run_id = r.id AND s.status = ?)
		FROM runs r WHERE r.id = ?`, StatusComplete, w.id).Scan(&shards, &complete); err != nil {
		return 0, false, errors.Join(append(errs, err)...)
	}
	open, err := w.st.liveShards(ctx, tx, w.id)
	if err != nil {
		return 0, false, errors.Join(append(errs, err)...)
	}
	if open == 0 {
		final := StatusInterrupted
		if complete == shards {
			final = StatusComplete
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, ended_ns = ?, heartbeat_ns = ? WHERE id = ?`, final, now, now, w.id); err != nil {
			return 0, false, errors.Join(append(errs, err)...)
		}
	}
	if err := tx.Commit(); err != nil {
		errs = append(errs, err)
	}
	return complete, open == 0, errors.Join(errs...)
}

// liveShards counts the shards of run id that are registered or running
// and whose process is not gone: a shard killed without finishing must not
// hold the run open, or no shard would ever end it and store its merged
// result.
func (st *Store) liveShards(ctx context.Context, tx *sqlTx, id int64) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT host, pid, heartbeat_ns FROM shards WHERE run_id = ? AND status IN (?, ?)`,
		id, ShardRegistered, StatusRunning)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	live := 0
	for rows.Next() {
		var (
			host string
			pid  int
			hb   int64
		)
		if err := rows.Scan(&host, &pid, &hb); err != nil {
			return 0, err
		}
		if !st.writerGone(time.Unix(0, hb), host, pid) {
			live++
		}
	}
	return live, rows.Err()
}

// RunShards returns the shards of run id by index (none for a run that is
// not sharded) and the run's shard count.
func (st *Store) RunShards(id int64) ([]ShardInfo, int, error) {
	var count int
	if err := st.db.QueryRow(`SELECT shards FROM runs WHERE id = ?`, id).Scan(&count); errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("run %d: %w", id, ErrNotFound)
	} else if err != nil {
		return nil, 0, err
	}
	recs := map[int]int{}
	rows, err := st.db.Query(`SELECT shard, COUNT(*) FROM records WHERE run_id = ? AND shard IS NOT NULL GROUP BY shard`, id)
	if err != nil {
		return nil, 0, err
	}
	for rows.Next() {
		var s, n int
		if err := rows.Scan(&s, &n); err != nil {
			rows.Close()
			return nil, 0, err
		}
		recs[s] = n
	}
	rows.Close()
	rows, err = st.db.Query(`SELECT shard, status, attempt, host, pid, heartbeat_ns, started_ns, began_ns, ended_ns, clock_offset_ns, clock_uncertainty_ns
		FROM shards WHERE run_id = ? ORDER BY shard`, id)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []ShardInfo
	for rows.Next() {
		var (
			si                    ShardInfo
			pid                   int
			hb                    int64
			started, began, ended sql.NullInt64
			off, unc              int64
		)
		if err := rows.Scan(&si.Index, &si.Status, &si.Attempt, &si.Host, &pid, &hb, &started, &began, &ended, &off, &unc); err != nil {
			return nil, 0, err
		}
		if (si.Status == StatusRunning || si.Status == ShardRegistered) && st.writerGone(time.Unix(0, hb), si.Host, pid) {
			si.Status = StatusInterrupted
			if !started.Valid { // a restart keeps its first start
				si.Status = ShardNeverStarted
			}
		}
		if started.Valid {
			si.Started = time.Unix(0, started.Int64)
		}
		if began.Valid {
			si.Began = time.Unix(0, began.Int64)
		}
		if ended.Valid {
			si.Ended = time.Unix(0, ended.Int64)
		}
		si.ClockOffset, si.ClockUncertainty = time.Duration(off), time.Duration(unc)
		si.Records = recs[si.Index]
		out = append(out, si)
	}
	return out, count, rows.Err()
}

// ShardRecords calls fn for each record of run id with the shard that
// measured it (-1 when the run is not sharded).
func (st *Store) ShardRecords(id int64, fn func(shard int, r *record.Request) error) error {
	return st.scanRecords(id, "shard", func(shard sql.NullInt64, r *record.Request) error {
		s := -1
		if shard.Valid {
			s = int(shard.Int64)
		}
		return fn(s, r)
	})
}

// heartbeat refreshes the run's heartbeat (and its shard's, in a sharded
// run) inside tx.
func (w *RunWriter) heartbeat(ctx context.Context, tx *sqlTx) error {
	now := w.st.now().UnixNano()
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET heartbeat_ns = ? WHERE id = ?`, now, w.id); err != nil {
		return err
	}
	if w.shard >= 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE shards SET heartbeat_ns = ? WHERE run_id = ? AND shard = ?`, now, w.id, w.shard); err != nil {
			return err
		}
	}
	return nil
}
