package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// Writer tuning: a batch is flushed every FlushEvery, or as soon as
// BatchRecords records are pending, whichever comes first.
const (
	FlushEvery   = 250 * time.Millisecond
	BatchRecords = 1000
	// MemoryRecords bounds the records a writer holds in memory while its
	// database does not take them; the rest go to a spill file, so an
	// outage of any length costs disk, not the load's memory.
	MemoryRecords = 50_000
	// LineBatchBytes ends a batch of AddLine's records early: SQLite's page
	// cache (2 MB) must hold a batch's pages, or it writes them to the WAL
	// mid-transaction and reads them back (5 MB batches of a real bench's
	// records spent a fifth of knee import's time so).
	LineBatchBytes = 1 << 20
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
	// pendingBytes counts the raw lines in pending (AddLine).
	pendingBytes int
	nextSeq      int64
	step         int // -1 outside sweeps
	// shard is this process's shard index in a sharded run, -1 otherwise;
	// a shard's records are keyed by their global request index (the
	// record's ID), so a restarted shard does not store one twice.
	shard  int
	err    error
	closed bool

	kick chan struct{} // a full batch is waiting
	stop chan struct{}
	done chan struct{}
	// behind is the result of the flush FlushAsync started last, nil when
	// none was started.
	behind chan error
	// checkpoint kicks the goroutine that checkpoints SQLite's WAL after
	// FlushAsync's commits; checkpointed is closed when it has ended.
	checkpoint   chan struct{}
	checkpointed chan struct{}
	// checkpointing is held by whoever checkpoints; batches counts
	// FlushAsync's flushes, every walBoundBatches of which start on a WAL
	// checkpointed whole.
	checkpointing sync.Mutex
	batches       int

	every time.Duration

	// trouble, when set, hears when the database stops taking records and
	// when it takes them again: a shard keeps measuring through an outage
	// and must say so then, not only at its end.
	trouble func(msg string)
	failing bool
	// flushing serializes flushes (the loop's and Flush's): one that found
	// nothing pending must not read as the database being back.
	flushing sync.Mutex

	// memLimit is MemoryRecords (tests lower it); inflight counts the
	// batch a flush is writing, which is memory too.
	memLimit, inflight int
	spillDir           string
	spill              *spillFile
	lost               int // records neither stored nor kept in a file
}

// spillFile holds, as records JSONL (knee import reads it), the records
// added while memLimit were already pending. Once it exists every Add goes
// to it until it is stored, so a run's sequence numbers in it are
// consecutive from firstSeq and need not be written.
type spillFile struct {
	path     string
	f        *os.File
	w        *record.Writer
	firstSeq int64
	lines    int   // records written
	stored   int   // the first stored lines are in the database
	lost     int   // records the file could not take either
	err      error // the first write error
	// broken: a write failed (a full disk), so the file may hold a cut
	// line; what reads back is stored, the rest counts as lost.
	broken bool
	// steps are the sweep steps the records were added in: the step of
	// line i is that of the last mark at or before i.
	steps []stepMark
}

type stepMark struct{ line, step int }

func (s *spillFile) stepOf(line int) int {
	step := -1
	for _, m := range s.steps {
		if m.line > line {
			break
		}
		step = m.step
	}
	return step
}

// SpillDir sets the folder of the spill file (default: the system's temp
// folder, as $TMPDIR says).
func (w *RunWriter) SpillDir(dir string) {
	w.mu.Lock()
	w.spillDir = dir
	w.mu.Unlock()
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
	// raw, when set, is the record's JSON as it was read (AddLine): it is
	// stored as it is, and rec is unset.
	raw []byte
}

// json is the record as stored.
func (p *pendingRec) json() ([]byte, error) {
	if p.raw != nil {
		return p.raw, nil
	}
	b, err := json.Marshal(&p.rec)
	if err != nil {
		return nil, fmt.Errorf("store: record %d: %w", p.seq, err)
	}
	return b, nil
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
	return st.startWriter(id, -1), nil
}

// startWriter starts the writer of run id (shard -1: not sharded).
func (st *Store) startWriter(id int64, shard int) *RunWriter {
	w := &RunWriter{st: st, id: id, step: -1, shard: shard, every: FlushEvery, memLimit: MemoryRecords,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

// ID is the stored run's id.
func (w *RunWriter) ID() int64 { return w.id }

// SetStep tags the records added from now on with a sweep step index.
func (w *RunWriter) SetStep(step int) {
	w.mu.Lock()
	w.step = step
	if w.spill != nil {
		w.spill.steps = append(w.spill.steps, stepMark{line: w.spill.lines, step: step})
	}
	w.mu.Unlock()
}

// Add queues one finished request. It copies the record (the caller may
// reuse it) and is safe to call from many goroutines, e.g. as loadgen's
// OnRecord callback. Records added after Finish are ignored.
func (w *RunWriter) Add(r *record.Request) {
	w.add(r, nil, true)
}

// AddLine queues a record read from a records.jsonl together with line, the
// JSON it was read from, which is stored as it is: encoding a record again
// cost knee import about a quarter of its time. A line that is not valid
// UTF-8 (which PostgreSQL's text refuses) is encoded again from r instead,
// as the decoder read it. AddLine does not start a flush: its caller paces
// itself with FlushAsync (the timed flush still runs): full says that a
// batch is waiting (BatchRecords records or LineBatchBytes of lines).
func (w *RunWriter) AddLine(r *record.Request, line []byte) (full bool) {
	if !utf8.Valid(line) {
		return w.add(r, nil, false)
	}
	return w.add(r, bytes.Clone(line), false)
}

func (w *RunWriter) add(r *record.Request, raw []byte, kick bool) (full bool) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	seq := w.nextSeq
	if w.shard >= 0 {
		seq = r.ID
	}
	var msg string
	if w.spill != nil || len(w.pending)+w.inflight >= w.memLimit {
		msg = w.spillLocked(seq, r, raw)
	} else if raw != nil {
		w.pending = append(w.pending, pendingRec{seq: seq, step: w.step, raw: raw})
		w.pendingBytes += len(raw)
	} else {
		w.pending = append(w.pending, pendingRec{seq: seq, step: w.step, rec: *r})
	}
	w.nextSeq++
	full = len(w.pending) >= BatchRecords || w.pendingBytes >= LineBatchBytes
	fn := w.trouble
	w.mu.Unlock()
	if msg != "" && fn != nil {
		fn(msg)
	}
	if full && kick {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return full
}

// FlushAsync waits for the flush it started last, then starts writing the
// pending records on another goroutine and returns: a reader decodes its
// next batch while the database takes this one, and never runs more than
// one batch ahead of it (memory stays two batches). The error is that of
// the flush waited for; Finish waits for the last one.
func (w *RunWriter) FlushAsync() error {
	var err error
	if w.behind != nil {
		err = <-w.behind
	}
	if err != nil {
		w.behind = nil
		return err
	}
	if w.behind == nil {
		w.behind = make(chan error, 1)
	}
	if w.checkpoint == nil && !w.st.pg && !addressSpaceLimited() {
		w.startCheckpointer()
	}
	w.batches++
	bound := w.checkpoint != nil && w.batches%walBoundBatches == 0
	go func() {
		if bound {
			w.checkpointAll()
		}
		err := w.flush()
		if w.checkpoint != nil {
			select {
			case w.checkpoint <- struct{}{}:
			default: // one is waiting to run: it will see these frames too
			}
		}
		w.behind <- err
	}()
	return nil
}

// startCheckpointer copies the WAL's committed pages into the database file
// on a goroutine of its own while the next batch is inserted. Left to
// SQLite, the committing connection does it (every 1000 pages), so the
// writer did it between batches: a fifth of a 2 GiB import's CPU time, on
// the goroutine that bounds its speed. SQLite still checkpoints what this
// one has not reached (and restarts the WAL), so the WAL stays as small as
// before; a failed checkpoint here is left to SQLite's. It is one more OS
// thread, which a tight address-space limit cannot spare: SQLite's own
// checkpoint does it then (addressSpaceLimited).
func (w *RunWriter) startCheckpointer() {
	w.checkpoint, w.checkpointed = make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(w.checkpointed)
		for range w.checkpoint {
			w.checkpointAll()
		}
	}()
}

// walBoundBatches: every this many batches the writer waits for the
// checkpointer and checkpoints what is left before it writes, so its
// transaction starts on a WAL copied whole and SQLite starts the WAL over
// (a writer that never waits kept it growing: 99 MB for a 214 MB import).
const walBoundBatches = 4

func (w *RunWriter) checkpointAll() {
	w.checkpointing.Lock()
	defer w.checkpointing.Unlock()
	w.st.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
}

// spillLocked writes r to the spill file, opening it first; it returns
// what to say when it opened one. w.mu is held.
func (w *RunWriter) spillLocked(seq int64, r *record.Request, raw []byte) string {
	var msg string
	if w.spill == nil {
		sp := &spillFile{firstSeq: seq, steps: []stepMark{{0, w.step}}}
		dir := w.spillDir
		if dir == "" {
			dir = os.TempDir()
		}
		f, err := os.CreateTemp(dir, fmt.Sprintf("knee-run-%d-unstored-*.jsonl", w.id))
		if err != nil {
			sp.err = fmt.Errorf("store: opening a spill file: %w", err)
		} else {
			sp.f, sp.path, sp.w = f, f.Name(), record.NewWriter(f)
		}
		w.spill = sp
		msg = fmt.Sprintf("%d records wait for the run database: the rest go to %s until it takes them", len(w.pending)+w.inflight, sp.path)
		if sp.err != nil {
			msg = fmt.Sprintf("%d records wait for the run database and no spill file could be opened (%v): records past them are not kept by the store", len(w.pending)+w.inflight, sp.err)
		}
	}
	sp := w.spill
	if sp.w == nil || sp.broken {
		sp.lost++
		return msg
	}
	var err error
	if raw != nil {
		err = sp.w.WriteLine(raw)
	} else {
		err = sp.w.Write(r)
	}
	if err != nil {
		sp.lost++
		sp.broken = true
		if sp.err == nil {
			sp.err = fmt.Errorf("store: writing %s: %w", sp.path, err)
		}
		return msg
	}
	sp.lines++
	return msg
}

// drainSpill stores the spill file's records in batches once the database
// takes records again, and removes the file when every record in it is
// stored. It runs inside flush (one at a time).
func (w *RunWriter) drainSpill() (stored int, err error) {
	for {
		w.mu.Lock()
		sp := w.spill
		if sp == nil {
			w.mu.Unlock()
			return stored, nil
		}
		if sp.w == nil { // no file could be opened: those records are lost
			w.lost += sp.lost
			if w.err == nil {
				w.err = sp.err
			}
			w.spill = nil
			w.mu.Unlock()
			return stored, nil
		}
		if err := sp.w.Flush(); err != nil && !sp.broken {
			sp.broken = true
			if sp.err == nil {
				sp.err = fmt.Errorf("store: writing %s: %w", sp.path, err)
			}
		}
		from, to, broken := sp.stored, sp.lines, sp.broken
		if from == to || broken {
			// Everything in the file is stored (or stored as far as it
			// reads, when broken): later records go to memory again.
			w.mu.Unlock()
			if broken && from < to {
				n, _, err := w.storeSpilled(sp, from, to)
				stored += n
				if err != nil {
					return stored, err // the database: the file is retried
				}
			}
			w.mu.Lock()
			sp.lost += sp.lines - sp.stored
			w.lost += sp.lost
			if sp.lost > 0 && w.err == nil {
				w.err = sp.err
			}
			w.spill = nil
			w.mu.Unlock()
			sp.f.Close()
			os.Remove(sp.path)
			return stored, nil
		}
		w.mu.Unlock()
		n, readErr, err := w.storeSpilled(sp, from, to)
		stored += n
		if err != nil {
			return stored, err
		}
		if readErr != nil {
			w.mu.Lock()
			sp.broken = true
			if sp.err == nil {
				sp.err = readErr
			}
			w.mu.Unlock()
		}
	}
}

// storeSpilled stores lines [from, to) of the spill file, a batch at a
// time, and advances sp.stored past each batch the database took. err is
// the database's; readErr says the file did not read back whole.
func (w *RunWriter) storeSpilled(sp *spillFile, from, to int) (n int, readErr, err error) {
	rd, err := os.Open(sp.path)
	if err != nil {
		return 0, err, nil
	}
	defer rd.Close()
	var (
		batch []pendingRec
		line  int
	)
	write := func() error {
		if err := w.writeBatch(batch); err != nil {
			return err
		}
		w.mu.Lock()
		sp.stored += len(batch)
		w.mu.Unlock()
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	// errDone ends the scan at line to: lines past it may still be
	// written (a cut line there is no damage).
	errDone := errors.New("done")
	var dbErr error
	scanErr := record.Scan(rd, func(r *record.Request) error {
		defer func() { line++ }()
		if line < from {
			return nil
		}
		seq := sp.firstSeq + int64(line)
		if w.shard >= 0 {
			seq = r.ID
		}
		batch = append(batch, pendingRec{seq: seq, step: sp.stepOf(line), rec: *r})
		if len(batch) >= BatchRecords || line == to-1 {
			if dbErr = write(); dbErr != nil {
				return dbErr
			}
		}
		if line == to-1 {
			return errDone
		}
		return nil
	})
	switch {
	case dbErr != nil:
		return n, nil, dbErr
	case errors.Is(scanErr, errDone):
		return n, nil, nil
	case scanErr != nil:
		readErr = fmt.Errorf("store: reading back %s: %w", sp.path, scanErr)
	default:
		readErr = fmt.Errorf("store: %s holds %d records, %d were written to it", sp.path, line, to)
	}
	if len(batch) > 0 { // what read back before the damage
		if err := write(); err != nil {
			return n, readErr, err
		}
	}
	return n, readErr, nil
}

// keepUnstored writes the records the store could not take (those still
// pending in memory and the spill file's unstored lines) to one records
// file and returns it with how many it holds. The writer is closed: no Add
// or flush runs meanwhile.
func (w *RunWriter) keepUnstored() (path string, kept int, err error) {
	w.mu.Lock()
	pending, sp, dir := w.pending, w.spill, w.spillDir
	w.pending, w.spill = nil, nil
	w.mu.Unlock()
	if sp != nil && sp.w != nil {
		if err := sp.w.Flush(); err != nil && sp.err == nil {
			sp.err = err
		}
		sp.f.Close()
	}
	fromFile := sp != nil && sp.w != nil && sp.lines > sp.stored
	if len(pending) == 0 && !fromFile {
		return "", 0, nil
	}
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, fmt.Sprintf("knee-run-%d-unstored-*.jsonl", w.id))
	if err != nil {
		if fromFile { // the spill file holds its share still
			return sp.path, sp.lines - sp.stored, fmt.Errorf("store: keeping %d records: %w", len(pending), err)
		}
		return "", 0, fmt.Errorf("store: keeping %d records: %w", len(pending), err)
	}
	defer f.Close()
	// On a full disk the buffered writer fails part-way: what the file
	// holds is its complete lines, not what was handed to the writer (it
	// said 26 kept where the file held 20 and a cut one).
	defer func() {
		if err != nil && path != "" {
			if n, terr := trimToCompleteLines(path); terr == nil {
				kept = n
			}
		}
	}()
	rw := record.NewWriter(f)
	for i := range pending {
		p := &pending[i]
		var err error
		if p.raw != nil {
			err = rw.WriteLine(p.raw)
		} else {
			err = rw.Write(&p.rec)
		}
		if err != nil {
			return f.Name(), kept, err
		}
		kept++
	}
	if fromFile {
		rd, err := os.Open(sp.path)
		if err != nil {
			return f.Name(), kept, err
		}
		line := 0
		err = record.Scan(rd, func(r *record.Request) error {
			defer func() { line++ }()
			if line < sp.stored || line >= sp.lines {
				return nil
			}
			kept++
			return rw.Write(r)
		})
		rd.Close()
		if err != nil {
			return f.Name(), kept, err
		}
	}
	if err := rw.Flush(); err != nil {
		return f.Name(), kept, err
	}
	if sp != nil && sp.path != "" {
		os.Remove(sp.path)
	}
	return f.Name(), kept, f.Close()
}

// trimToCompleteLines cuts path after its last complete line (a line cut
// by a failed write would not read back) and counts its lines.
func trimToCompleteLines(path string) (int, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var lines int
	var end, off int64
	for {
		b, err := br.ReadSlice('\n')
		off += int64(len(b))
		if err == nil {
			lines++
			end = off
			continue
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != io.EOF {
			return 0, err
		}
		break
	}
	if end < off {
		if err := f.Truncate(end); err != nil {
			return 0, err
		}
	}
	return lines, nil
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
	w.pending, w.pendingBytes = nil, 0
	w.inflight = len(batch)
	w.mu.Unlock()

	err := w.writeBatch(batch)
	batchStored := err == nil
	fromFile := 0
	if batchStored {
		fromFile, err = w.drainSpill()
	}
	w.mu.Lock()
	w.inflight = 0
	if !batchStored {
		w.pending = append(batch, w.pending...)
		for i := range batch {
			w.pendingBytes += len(batch[i].raw)
		}
	}
	var msg string
	switch {
	case err != nil:
		if w.err == nil {
			w.err = err
		}
		if !w.failing {
			msg = fmt.Sprintf("the run database is not taking records (%v): %d records kept in memory (at most %d, the rest in a file), retried every %v; the run goes on", err, len(w.pending), w.memLimit, w.every)
		}
		w.failing = true
	case w.failing:
		w.failing = false
		msg = fmt.Sprintf("the run database takes records again: %d buffered records stored", len(batch)+fromFile)
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
			b, err := p.json()
			if err != nil {
				return err
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
	// Kept is the records file (JSONL) that holds KeptRecords of the
	// unstored records, "" when none could be kept.
	Kept        string
	KeptRecords int
}

func (e *UnstoredError) Error() string {
	msg := fmt.Sprintf("store: %d of %d records could not be stored: %v", e.Unstored, e.Added, e.Err)
	if e.Kept != "" {
		msg += fmt.Sprintf("; %d of them are kept in %s (records JSONL)", e.KeptRecords, e.Kept)
	}
	return msg
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
	if w.behind != nil {
		<-w.behind // its error is w.err
		w.behind = nil
	}
	var errs []error
	err := w.flush()
	if w.checkpoint != nil {
		close(w.checkpoint)
		<-w.checkpointed
		w.checkpoint = nil
	}
	w.mu.Lock()
	first, added, unstored := w.err, w.nextSeq, len(w.pending)+w.lost
	if sp := w.spill; sp != nil {
		unstored += sp.lines - sp.stored + sp.lost
		if first == nil {
			first = sp.err
		}
	}
	w.mu.Unlock()
	if err != nil || unstored > 0 {
		if first == nil {
			first = err
		}
		ue := &UnstoredError{Unstored: unstored, Added: added, Err: first}
		var kerr error
		ue.Kept, ue.KeptRecords, kerr = w.keepUnstored()
		errs = append(errs, ue)
		if kerr != nil {
			errs = append(errs, kerr)
		}
		// Nothing reads as complete that is not stored.
		if status == StatusComplete {
			status = StatusFailed
		}
	}
	return status, errs, nil
}
