package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// Writer tuning: a batch is flushed every FlushEvery, or as soon as
// BatchRecords records are pending, whichever comes first.
const (
	FlushEvery   = 250 * time.Millisecond
	BatchRecords = 1000
)

// RunWriter stores the records of one run while it goes. Add is cheap and
// never waits on the database: records are queued in memory and a goroutine
// writes them in one transaction per batch, refreshing the run's heartbeat.
// Finish flushes what is left and closes the run.
type RunWriter struct {
	st *Store
	id int64

	mu      sync.Mutex
	pending []pendingRec
	nextSeq int64
	step    int // -1 outside sweeps
	// shard is this process's shard index in a sharded run, -1 otherwise;
	// a shard's records are keyed by their global request index (the
	// record's ID), so a restarted shard does not store one twice.
	shard  int
	err    error
	closed bool

	kick chan struct{} // a full batch is waiting
	stop chan struct{}
	done chan struct{}

	every time.Duration

	// trouble, when set, hears when the database stops taking records and
	// when it takes them again: a shard keeps measuring through an outage
	// and must say so then, not only at its end.
	trouble func(msg string)
	failing bool
	// flushing serializes flushes (the loop's and Flush's): one that found
	// nothing pending must not read as the database being back.
	flushing sync.Mutex
}

// OnTrouble sets fn to hear, once per outage, that the database stopped
// taking records (they stay pending in memory and are retried each flush)
// and, when it takes them again, how many buffered records it stored.
func (w *RunWriter) OnTrouble(fn func(msg string)) {
	w.mu.Lock()
	w.trouble = fn
	w.mu.Unlock()
}

type pendingRec struct {
	seq  int64
	step int
	rec  record.Request
}

// BeginRun adds a run with status "running" and starts its writer.
func (st *Store) BeginRun(meta RunMeta) (*RunWriter, error) {
	ctx := context.Background()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, classify(st.path, err)
	}
	defer tx.Rollback()
	id, err := st.insertRun(ctx, tx, meta, StatusRunning)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	w := &RunWriter{st: st, id: id, step: -1, shard: -1, every: FlushEvery,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w, nil
}

// ID is the stored run's id.
func (w *RunWriter) ID() int64 { return w.id }

// SetStep tags the records added from now on with a sweep step index.
func (w *RunWriter) SetStep(step int) {
	w.mu.Lock()
	w.step = step
	w.mu.Unlock()
}

// Add queues one finished request. It copies the record (the caller may
// reuse it) and is safe to call from many goroutines, e.g. as loadgen's
// OnRecord callback. Records added after Finish are ignored.
func (w *RunWriter) Add(r *record.Request) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	seq := w.nextSeq
	if w.shard >= 0 {
		seq = r.ID
	}
	w.pending = append(w.pending, pendingRec{seq: seq, step: w.step, rec: *r})
	w.nextSeq++
	full := len(w.pending) >= BatchRecords
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

func (w *RunWriter) loop() {
	defer close(w.done)
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.kick:
		}
		w.flush()
	}
}

// flush writes every pending record and the heartbeat in one transaction.
// On failure the batch stays pending and is retried on the next flush.
func (w *RunWriter) flush() error {
	w.flushing.Lock()
	defer w.flushing.Unlock()
	w.mu.Lock()
	batch := w.pending
	w.pending = nil
	w.mu.Unlock()

	err := w.writeBatch(batch)
	w.mu.Lock()
	var msg string
	switch {
	case err != nil:
		w.pending = append(batch, w.pending...)
		if w.err == nil {
			w.err = err
		}
		if !w.failing {
			msg = fmt.Sprintf("the run database is not taking records (%v): %d records kept in memory, retried every %v; the run goes on", err, len(w.pending), w.every)
		}
		w.failing = true
	case w.failing:
		w.failing = false
		msg = fmt.Sprintf("the run database takes records again: %d buffered records stored", len(batch))
	}
	fn := w.trouble
	w.mu.Unlock()
	if msg != "" && fn != nil {
		fn(msg)
	}
	return err
}

func (w *RunWriter) writeBatch(batch []pendingRec) error {
	if w.st.pg {
		return w.copyBatch(batch)
	}
	ctx := context.Background()
	tx, err := w.st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if len(batch) > 0 {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO records (run_id, seq, step, shard, record_json) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (run_id, seq) DO NOTHING`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for i := range batch {
			p := &batch[i]
			b, err := json.Marshal(&p.rec)
			if err != nil {
				return fmt.Errorf("store: record %d: %w", p.seq, err)
			}
			var step any
			if p.step >= 0 {
				step = p.step
			}
			var shard any
			if w.shard >= 0 {
				shard = w.shard
			}
			if _, err := ins.ExecContext(ctx, w.id, p.seq, step, shard, b); err != nil {
				return fmt.Errorf("store: record %d: %w", p.seq, err)
			}
		}
	}
	if err := w.heartbeat(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// Flush writes pending records now (Finish does this too).
func (w *RunWriter) Flush() error { return w.flush() }

// UnstoredError says that some of a run's records could not be written (a
// full disk, a broken database): the run was not stored as complete, and the
// caller must keep the records elsewhere.
type UnstoredError struct {
	Unstored int   // records that are not in the database
	Added    int64 // records handed to the writer
	Err      error // the first write error
}

func (e *UnstoredError) Error() string {
	return fmt.Sprintf("store: %d of %d records could not be stored: %v", e.Unstored, e.Added, e.Err)
}

func (e *UnstoredError) Unwrap() error { return e.Err }

// Finish stops the writer, stores every pending record, the summary, the end
// time and the final status (StatusComplete, StatusInterrupted after Ctrl-C,
// or StatusFailed) — the last three in one transaction. When records could
// not be stored, a "complete" run is stored as "failed" instead (nothing
// reads as complete that is not stored) and the error is an *UnstoredError.
// It returns the first error met while writing, if any. Calling it twice is
// an error.
func (w *RunWriter) Finish(summary stats.Summary, status string) error {
	if !validFinal(status) {
		return fmt.Errorf("store: final status %q (want complete, interrupted or failed)", status)
	}
	status, errs, err := w.closeAndFlush("run", status)
	if err != nil {
		return err
	}
	ctx := context.Background()
	tx, err := w.st.db.BeginTx(ctx, nil)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer tx.Rollback()
	if err := finishTx(ctx, tx, w.id, &summary, status, w.st.now()); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if err := tx.Commit(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// closeAndFlush stops the background flushing and stores what is still
// pending. It returns the status to store — failed instead of complete when
// records could not be stored — and an *UnstoredError among errs then; what
// names the writer in the error of a second finish.
func (w *RunWriter) closeAndFlush(what, status string) (string, []error, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return status, nil, fmt.Errorf("store: %s already finished", what)
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	var errs []error
	if err := w.flush(); err != nil {
		w.mu.Lock()
		first, left, added := w.err, len(w.pending), w.nextSeq
		w.mu.Unlock()
		errs = append(errs, &UnstoredError{Unstored: left, Added: added, Err: first})
		// Nothing reads as complete that is not stored.
		if status == StatusComplete {
			status = StatusFailed
		}
	}
	return status, errs, nil
}
