package store

import "context"

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
