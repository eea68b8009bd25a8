package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// A sharded sweep (sweep --shards N) is a sharded run whose shards meet once
// per step: each registers the load it chose for the step (MeetStep), the
// first fixes it and any other choice is refused; once all N have met, one
// start is fixed and every shard measures its part from it; each ends its
// part (EndStep) and waits for the others' (WaitStepEnd), then judges the
// step over all shards' records (SweepStepRecords). Since every shard judges the
// same records by the same rules, all choose the same next load: no shard
// leads.

// Statuses of a shard's part of a step.
const (
	PartMet      = "met"
	PartRunning  = "running"
	PartComplete = "complete"
	PartPartial  = "partial"
)

// sweepStepShift places a sharded sweep's step above its request index in
// the record's stored key: a shard's records are keyed by ID (so a restart
// stores none twice), and every step numbers its requests from 0.
const sweepStepShift = 44

// SweepRecordID is the ID a sharded sweep stores request id of step under.
func SweepRecordID(step int, id int64) int64 { return int64(step)<<sweepStepShift | id }

// SweepRequestID is the request's index within its step.
func SweepRequestID(id int64) int64 { return id & (1<<sweepStepShift - 1) }

// StepStart is where a shard stands at a step's meeting.
type StepStart struct {
	// Start is the step's common start on the database's clock.
	Start time.Time
	// Done: this shard's part was completed by an earlier attempt (a
	// restarted shard replays it from the database instead of measuring).
	Done bool
	// Late: the step began before this shard met there (a restarted shard
	// whose part was cut short): it runs its part at once.
	Late bool
}

// StepStopped says which shards left a step partial (stopped or gone mid-
// step): the others finish the step and the sweep ends there.
type StepStopped struct {
	Step   int
	Load   string
	Shards []int
}

func (e *StepStopped) Error() string {
	var ss []string
	for _, s := range e.Shards {
		ss = append(ss, fmt.Sprint(s))
	}
	return fmt.Sprintf("shard %s stopped during step %d (%s): the step is partial and the sweep ends there", strings.Join(ss, ", "), e.Step+1, e.Load)
}

// lockRun serializes the shards' meeting transactions on PostgreSQL
// (SQLite's write transactions are serialized already).
func (j *ShardJoin) lockRun(ctx context.Context, tx *sqlTx) error {
	if !j.st.pg {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT id FROM runs WHERE id = ? FOR UPDATE`, j.RunID)
	return err
}

// MeetStep registers this shard at step with the load it chose and waits
// until every shard has met there; it keeps this shard's heartbeat fresh,
// polls every poll and gives up at timeout naming the shards that never
// came. A load other than the one the step was fixed at is refused
// (ErrShard), naming both. A shard that is gone before meeting ends the
// wait with a *StepStopped.
func (j *ShardJoin) MeetStep(ctx context.Context, step int, load string, timeout, lead, poll time.Duration) (StepStart, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		s, present, err := j.tryMeet(ctx, step, load, lead)
		if err != nil || !s.Start.IsZero() {
			return s, err
		}
		select {
		case <-ctx.Done():
			return StepStart{}, ctx.Err()
		case <-deadline.C:
			// A last look: the others may have met while this shard
			// waited on the database.
			if s, present, err = j.tryMeet(ctx, step, load, lead); err != nil || !s.Start.IsZero() {
				return s, err
			}
			var missing []string
			for i := range j.Spec.Count {
				if !slices.Contains(present, i) {
					missing = append(missing, fmt.Sprint(i))
				}
			}
			return StepStart{}, fmt.Errorf("run %q, step %d (%s): after %v, shard(s) %s of %d never met there",
				j.Spec.RunName, step+1, load, timeout, strings.Join(missing, ", "), j.Spec.Count)
		case <-tick.C:
		}
	}
}

func (j *ShardJoin) tryMeet(ctx context.Context, step int, load string, lead time.Duration) (StepStart, []int, error) {
	st := j.st
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return StepStart{}, nil, err
	}
	defer tx.Rollback()
	if err := j.lockRun(ctx, tx); err != nil {
		return StepStart{}, nil, err
	}
	now := st.now().UnixNano()
	if _, err := tx.ExecContext(ctx, `UPDATE shards SET heartbeat_ns = ? WHERE run_id = ? AND shard = ?`, now, j.RunID, j.Spec.Index); err != nil {
		return StepStart{}, nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO shard_steps (run_id, step, load, chosen_by) VALUES (?, ?, ?, ?) ON CONFLICT (run_id, step) DO NOTHING`,
		j.RunID, step, load, j.Spec.Index); err != nil {
		return StepStart{}, nil, err
	}
	var (
		fixed   string
		by      int
		startNS sql.NullInt64
	)
	if err := tx.QueryRowContext(ctx, `SELECT load, chosen_by, start_at_ns FROM shard_steps WHERE run_id = ? AND step = ?`, j.RunID, step).
		Scan(&fixed, &by, &startNS); err != nil {
		return StepStart{}, nil, err
	}
	if fixed != load {
		return StepStart{}, nil, fmt.Errorf("%w: run %q, step %d: this shard (%d) chose %s, shard %d chose %s: the shards judged the steps before differently",
			ErrShard, j.Spec.RunName, step+1, j.Spec.Index, load, by, fixed)
	}
	var status string
	err = tx.QueryRowContext(ctx, `SELECT status FROM shard_step_parts WHERE run_id = ? AND step = ? AND shard = ?`, j.RunID, step, j.Spec.Index).Scan(&status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO shard_step_parts (run_id, step, shard, status) VALUES (?, ?, ?, ?)`,
			j.RunID, step, j.Spec.Index, PartMet); err != nil {
			return StepStart{}, nil, err
		}
	case err != nil:
		return StepStart{}, nil, err
	case status == PartComplete:
		return StepStart{Start: time.Unix(0, startNS.Int64), Done: true}, nil, tx.Commit()
	}
	if startNS.Valid { // met after the step began (a restart) or waited for it
		return StepStart{Start: time.Unix(0, startNS.Int64), Late: j.met != step}, nil, tx.Commit()
	}
	j.met = step
	present, gone, err := j.parts(ctx, tx, step)
	if err != nil {
		return StepStart{}, nil, err
	}
	if len(gone) > 0 {
		return StepStart{}, nil, &StepStopped{Step: step, Load: load, Shards: gone}
	}
	if len(present) < j.Spec.Count {
		return StepStart{}, present, tx.Commit()
	}
	srvNow, err := st.ServerNow(ctx)
	if err != nil {
		return StepStart{}, nil, err
	}
	start := srvNow.Add(lead)
	if _, err := tx.ExecContext(ctx, `UPDATE shard_steps SET start_at_ns = ? WHERE run_id = ? AND step = ? AND start_at_ns IS NULL`,
		start.UnixNano(), j.RunID, step); err != nil {
		return StepStart{}, nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT start_at_ns FROM shard_steps WHERE run_id = ? AND step = ?`, j.RunID, step).Scan(&startNS); err != nil {
		return StepStart{}, nil, err
	}
	return StepStart{Start: time.Unix(0, startNS.Int64)}, present, tx.Commit()
}

// parts returns the shards that have met at step and those that have not
// and never will: their process is gone, or they ended their run.
func (j *ShardJoin) parts(ctx context.Context, tx *sqlTx, step int) (present, gone []int, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT shard FROM shard_step_parts WHERE run_id = ? AND step = ?`, j.RunID, step)
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			rows.Close()
			return nil, nil, err
		}
		present = append(present, i)
	}
	rows.Close()
	live, err := j.liveShards(ctx, tx)
	if err != nil {
		return nil, nil, err
	}
	for i := range j.Spec.Count {
		if !slices.Contains(present, i) && !live[i] {
			gone = append(gone, i)
		}
	}
	return present, gone, nil
}

// liveShards says which shards are still running their part of the run:
// registered or running, with a process that is not gone.
func (j *ShardJoin) liveShards(ctx context.Context, tx *sqlTx) (map[int]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT shard, status, host, pid, heartbeat_ns FROM shards WHERE run_id = ?`, j.RunID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	live := map[int]bool{}
	for rows.Next() {
		var (
			i, pid       int
			status, host string
			hb           int64
		)
		if err := rows.Scan(&i, &status, &host, &pid, &hb); err != nil {
			return nil, err
		}
		live[i] = (status == ShardRegistered || status == StatusRunning) && !j.st.writerGone(time.Unix(0, hb), host, pid)
	}
	return live, rows.Err()
}

// StepBegan records this shard's part of step as running: its schedule's
// zero (a zero time: not on the common start, as a restarted shard's part)
// and when the process actually began, both on the shared timeline.
func (j *ShardJoin) StepBegan(step int, zero, began time.Time) error {
	var z any
	if !zero.IsZero() {
		z = zero.UnixNano()
	}
	_, err := j.st.db.Exec(`UPDATE shard_step_parts SET status = ?, started_ns = ?, began_ns = ? WHERE run_id = ? AND step = ? AND shard = ?`,
		PartRunning, z, began.UnixNano(), j.RunID, step, j.Spec.Index)
	return err
}

// EndStep ends this shard's part of step: complete, or partial when it
// stopped before its part was sent.
func (j *ShardJoin) EndStep(step int, status string) error {
	if status != PartComplete && status != PartPartial {
		return fmt.Errorf("store: step part status %q (want complete or partial)", status)
	}
	now := j.st.now().UnixNano()
	_, err := j.st.db.Exec(`UPDATE shard_step_parts SET status = ?, ended_ns = ? WHERE run_id = ? AND step = ? AND shard = ?`,
		status, now, j.RunID, step, j.Spec.Index)
	return err
}

// WaitStepEnd waits until every shard's part of step has ended, polling
// every poll and keeping this shard's heartbeat fresh. A part that ended
// partial, or whose shard is gone before ending it, makes the step partial:
// the error is then a *StepStopped naming those shards.
func (j *ShardJoin) WaitStepEnd(ctx context.Context, step int, poll time.Duration) error {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		ended, err := j.tryStepEnd(ctx, step)
		if ended || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (j *ShardJoin) tryStepEnd(ctx context.Context, step int) (bool, error) {
	tx, err := j.st.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE shards SET heartbeat_ns = ? WHERE run_id = ? AND shard = ?`, j.st.now().UnixNano(), j.RunID, j.Spec.Index); err != nil {
		return false, err
	}
	var load string
	if err := tx.QueryRowContext(ctx, `SELECT load FROM shard_steps WHERE run_id = ? AND step = ?`, j.RunID, step).Scan(&load); err != nil {
		return false, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT shard, status FROM shard_step_parts WHERE run_id = ? AND step = ?`, j.RunID, step)
	if err != nil {
		return false, err
	}
	status := map[int]string{}
	for rows.Next() {
		var (
			i int
			s string
		)
		if err := rows.Scan(&i, &s); err != nil {
			rows.Close()
			return false, err
		}
		status[i] = s
	}
	rows.Close()
	live, err := j.liveShards(ctx, tx)
	if err != nil {
		return false, err
	}
	var partial []int
	for i := range j.Spec.Count {
		switch s := status[i]; {
		case s == PartComplete:
		case s == PartPartial, !live[i]:
			partial = append(partial, i)
		default:
			return false, tx.Commit() // still measuring
		}
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	if len(partial) > 0 {
		return true, &StepStopped{Step: step, Load: load, Shards: partial}
	}
	return true, nil
}

// SweepStepRecords calls fn with every record of step (in the order measured)
// of sharded sweep id, whichever shard measured it, its ID that of the
// request within the step.
func (st *Store) SweepStepRecords(id int64, step int, fn func(shard int, r *record.Request) error) error {
	rows, err := st.db.Query(`SELECT seq, shard, record_json FROM records WHERE run_id = ? AND step = ? ORDER BY seq`, id, step)
	if err != nil {
		return fmt.Errorf("store: reading step %d of run %d: %w", step, id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq   int64
			shard sql.NullInt64
			raw   []byte
		)
		if err := rows.Scan(&seq, &shard, &raw); err != nil {
			return err
		}
		var r record.Request
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("store: run %d record %d unreadable: %w", id, seq, err)
		}
		r.ID = SweepRequestID(r.ID)
		s := -1
		if shard.Valid {
			s = int(shard.Int64)
		}
		if err := fn(s, &r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// StepPart is one shard's part of one step of a sharded sweep, as stored.
type StepPart struct {
	Step, Shard int
	Load        string
	Status      string
	// Start is the step's common start; Zero this shard's schedule zero
	// and Began when its process actually began, all on the shared
	// timeline (zero when not yet known).
	Start, Zero, Began, Ended time.Time
}

// StepParts returns every shard's part of every step of sharded sweep id,
// by step then shard.
func (st *Store) StepParts(id int64) ([]StepPart, error) {
	rows, err := st.db.Query(`SELECT p.step, p.shard, s.load, p.status, s.start_at_ns, p.started_ns, p.began_ns, p.ended_ns
		FROM shard_step_parts p JOIN shard_steps s ON s.run_id = p.run_id AND s.step = p.step
		WHERE p.run_id = ? ORDER BY p.step, p.shard`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StepPart
	at := func(ns sql.NullInt64) time.Time {
		if !ns.Valid {
			return time.Time{}
		}
		return time.Unix(0, ns.Int64)
	}
	for rows.Next() {
		var (
			p                         StepPart
			start, zero, began, ended sql.NullInt64
		)
		if err := rows.Scan(&p.Step, &p.Shard, &p.Load, &p.Status, &start, &zero, &began, &ended); err != nil {
			return nil, err
		}
		p.Start, p.Zero, p.Began, p.Ended = at(start), at(zero), at(began), at(ended)
		out = append(out, p)
	}
	return out, rows.Err()
}

// SetBegan records when this shard's process actually began its load, on
// the shared timeline (its schedule's zero is started_ns).
func (j *ShardJoin) SetBegan(t time.Time) error {
	_, err := j.st.db.Exec(`UPDATE shards SET began_ns = ? WHERE run_id = ? AND shard = ?`, t.UnixNano(), j.RunID, j.Spec.Index)
	return err
}
