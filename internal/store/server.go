package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// WholeRun is the step of a server series that covers the whole run.
const WholeRun = -1

// SaveServerSeries stores (or replaces) what run id scraped from its
// server: data is the series as the scrape package marshals it; step is a
// sweep step's index or WholeRun.
func (st *Store) SaveServerSeries(id int64, step int, data json.RawMessage) error {
	if !json.Valid(data) {
		return fmt.Errorf("store: server series of run %d: not JSON", id)
	}
	ctx := context.Background()
	var exists int
	if err := st.db.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, id).Scan(&exists); errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	} else if err != nil {
		return err
	}
	_, err := st.db.ExecContext(ctx, `INSERT INTO server_metrics (run_id, step, series_json) VALUES (?, ?, ?)
		ON CONFLICT (run_id, step) DO UPDATE SET series_json = excluded.series_json`, id, step, string(data))
	if err != nil {
		return fmt.Errorf("store: server series of run %d: %w", id, err)
	}
	return nil
}

// ServerSeries returns run id's stored server series by step (WholeRun for
// the run's own); empty when it scraped nothing.
func (st *Store) ServerSeries(id int64) (map[int]json.RawMessage, error) {
	rows, err := st.db.Query(`SELECT step, series_json FROM server_metrics WHERE run_id = ? ORDER BY step`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]json.RawMessage{}
	for rows.Next() {
		var step int
		var data string
		if err := rows.Scan(&step, &data); err != nil {
			return nil, err
		}
		out[step] = json.RawMessage(data)
	}
	return out, rows.Err()
}
