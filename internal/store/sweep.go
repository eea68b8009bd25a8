package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/knee-dev/knee/internal/sweep"
)

// SweepStep is one load step of a sweep. Data is the step as the sweep
// package marshals it (offered load, throughput, percentiles, ...); the
// store keeps it verbatim and indexes it by Load.
type SweepStep struct {
	Load float64
	Data json.RawMessage
}

// Sweep is what a sweep stores beside its run: its steps, the axis they
// step over, and the knee and SLO-safe point as JSON objects such as
// {"load":..., "reason":...} (nil when not found).
type Sweep struct {
	Axis    string // "concurrency" or "rate"
	Steps   []SweepStep
	Knee    json.RawMessage
	SLOSafe json.RawMessage
}

// SaveSweep stores (or replaces) the sweep of run id in one transaction.
func (st *Store) SaveSweep(id int64, sw Sweep) error {
	ctx := context.Background()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, id).Scan(&exists); errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	} else if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sweep_steps WHERE run_id = ?`, id); err != nil {
		return err
	}
	for i, s := range sw.Steps {
		data := s.Data
		if len(data) == 0 {
			data = json.RawMessage("{}")
		}
		if !json.Valid(data) {
			return fmt.Errorf("store: sweep step %d: data is not JSON", i)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sweep_steps (run_id, idx, load, step_json) VALUES (?, ?, ?, ?)`,
			id, i, s.Load, string(data)); err != nil {
			return fmt.Errorf("store: sweep step %d: %w", i, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO sweeps (run_id, axis, knee_json, slo_safe_json) VALUES (?, ?, ?, ?)
		ON CONFLICT (run_id) DO UPDATE SET axis = excluded.axis, knee_json = excluded.knee_json, slo_safe_json = excluded.slo_safe_json`,
		id, sw.Axis, nullJSON(sw.Knee), nullJSON(sw.SLOSafe)); err != nil {
		return err
	}
	return tx.Commit()
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return string(b)
}

// Sweep returns the sweep stored with run id, or nil when the run has none.
func (st *Store) Sweep(id int64) (*Sweep, error) {
	sw, err := st.sweep(id)
	return sw, st.damaged(err)
}

func (st *Store) sweep(id int64) (*Sweep, error) {
	var (
		sw            Sweep
		knee, sloSafe sql.NullString
	)
	err := st.db.QueryRow(`SELECT axis, knee_json, slo_safe_json FROM sweeps WHERE run_id = ?`, id).Scan(&sw.Axis, &knee, &sloSafe)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if knee.Valid {
		sw.Knee = json.RawMessage(knee.String)
	}
	if sloSafe.Valid {
		sw.SLOSafe = json.RawMessage(sloSafe.String)
	}
	rows, err := st.db.Query(`SELECT load, step_json FROM sweep_steps WHERE run_id = ? ORDER BY idx`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			s    SweepStep
			data string
		)
		if err := rows.Scan(&s.Load, &data); err != nil {
			return nil, err
		}
		s.Data = json.RawMessage(data)
		sw.Steps = append(sw.Steps, s)
	}
	return &sw, rows.Err()
}

// SaveSweepResult stores a sweep as the sweep package analysed it.
func (st *Store) SaveSweepResult(id int64, r *sweep.Result) error {
	sw := Sweep{Axis: r.LoadKind}
	for i := range r.Steps {
		b, err := json.Marshal(r.Steps[i])
		if err != nil {
			return fmt.Errorf("store: sweep step %d: %w", i, err)
		}
		sw.Steps = append(sw.Steps, SweepStep{Load: r.Steps[i].Load.Value, Data: b})
	}
	var err error
	if sw.Knee, err = json.Marshal(r.Knee); err != nil {
		return err
	}
	if sw.SLOSafe, err = json.Marshal(r.SLOSafe); err != nil {
		return err
	}
	return st.SaveSweep(id, sw)
}

// SweepResult reads back a sweep stored by SaveSweepResult (nil when the
// run has none). The knee and SLO-safe point are placed on their steps
// again; the knee metric is output tokens/s when every step has it, as
// sweep.Analyze picks it by default.
func (st *Store) SweepResult(id int64) (*sweep.Result, error) {
	sw, err := st.Sweep(id)
	if err != nil || sw == nil {
		return nil, err
	}
	r := &sweep.Result{LoadKind: sw.Axis, KneeMetric: sweep.MetricOutputTPS}
	for i, s := range sw.Steps {
		var step sweep.Step
		if err := json.Unmarshal(s.Data, &step); err != nil {
			return nil, fmt.Errorf("store: run %d sweep step %d unreadable: %w", id, i, err)
		}
		if step.Summary.OutputTokenThroughputTPS <= 0 {
			r.KneeMetric = sweep.MetricThroughputRPS
		}
		r.Steps = append(r.Steps, step)
	}
	point := func(raw json.RawMessage) (sweep.Point, error) {
		p := sweep.Point{Index: -1}
		if len(raw) == 0 {
			return p, nil
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return p, fmt.Errorf("store: run %d sweep point unreadable: %w", id, err)
		}
		if p.Found() {
			p.Index = -1
			for i := range r.Steps {
				if r.Steps[i].Load.Value == p.Load {
					p.Index = i
				}
			}
			if p.Index < 0 { // the load is between steps: keep it, pinned to the nearest below
				p.Index = 0
			}
		}
		return p, nil
	}
	if r.Knee, err = point(sw.Knee); err != nil {
		return nil, err
	}
	if r.SLOSafe, err = point(sw.SLOSafe); err != nil {
		return nil, err
	}
	r.ClassVerdicts() // a mix's breaking class follows from the steps
	return r, nil
}
