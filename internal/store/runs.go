package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// Run statuses. "interrupted" is also what a run still marked "running" is
// reported as once its writer is gone (see Store.StaleAfter).
const (
	StatusRunning     = "running"
	StatusComplete    = "complete"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// Run kinds knee stores.
const (
	KindBench  = "bench"
	KindSweep  = "sweep"
	KindSim    = "sim"
	KindLab    = "lab"
	KindImport = "import"
)

// RunMeta describes a run when it begins.
type RunMeta struct {
	Kind  string // KindBench, KindSweep, KindSim, KindLab, KindImport
	Label string // free text the user chose (--label)
	// Name is the run's name (--run-name), unique in the database, which
	// every command taking a run accepts as well as its id; "" for none.
	Name   string
	Target string // base URL, "embedded", "simulator", or an imported file's name
	Model  string
	// Config is the resolved configuration: anything that marshals to a JSON
	// object (a struct, a map, or json.RawMessage). Secrets must not be in it.
	Config  any
	Version string    // knee's version
	Start   time.Time // zero: now
}

// RunInfo is a stored run as read back.
type RunInfo struct {
	ID      int64
	Name    string // --run-name; "" for none
	Kind    string
	Label   string
	Target  string
	Model   string
	Config  json.RawMessage // JSON object, "{}" when none was given
	Version string
	Start   time.Time
	End     time.Time // zero while running or when never finished
	// Status is the effective status: a "running" run whose writer is gone is
	// reported as "interrupted" (StoredStatus keeps what the row says).
	Status       string
	StoredStatus string
	Heartbeat    time.Time
	Records      int            // per-request records stored
	Summary      *stats.Summary // nil when the run never finished (see Store.Summary)
}

// Finished reports whether the run ended one way or another.
func (r *RunInfo) Finished() bool { return r.Status != StatusRunning }

// Filter selects runs for ListRuns. Empty fields match everything; strings
// match as case-insensitive substrings, Kind exactly.
type Filter struct {
	Kind   string
	Label  string
	Target string
	Model  string
	Since  time.Time
	Limit  int // 0: no limit
}

func marshalConfig(c any) (string, error) {
	if c == nil {
		return "{}", nil
	}
	if raw, ok := c.(json.RawMessage); ok && len(raw) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("store: marshalling run configuration: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		return "", fmt.Errorf("store: run configuration must be a JSON object, got %.40s", b)
	}
	return string(b), nil
}

func (m *RunMeta) validate() error {
	switch m.Kind {
	case KindBench, KindSweep, KindSim, KindLab, KindImport:
		return nil
	}
	return fmt.Errorf("store: unknown run kind %q (want bench, sweep, sim, lab or import)", m.Kind)
}

// insertRun adds the runs row inside tx.
func (st *Store) insertRun(ctx context.Context, tx *sqlTx, meta RunMeta, status string) (int64, error) {
	if err := meta.validate(); err != nil {
		return 0, err
	}
	cfg, err := marshalConfig(meta.Config)
	if err != nil {
		return 0, err
	}
	start := meta.Start
	if start.IsZero() {
		start = st.now()
	}
	host, _ := os.Hostname()
	if meta.Name != "" {
		// Checked first, so the user reads which run holds the name rather
		// than the unique index's error (the index still decides a race).
		var other int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM runs WHERE run_name = ?`, meta.Name).Scan(&other)
		if err == nil {
			return 0, fmt.Errorf("%w: run %d is already named %q (names are unique in a database)", ErrNameTaken, other, meta.Name)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("store: adding run: %w", err)
		}
	}
	// RETURNING rather than LastInsertId: PostgreSQL has no last insert id.
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO runs
		(kind, label, target, model, config_json, knee_version, started_ns, status, heartbeat_ns, host, pid, run_name)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		meta.Kind, meta.Label, meta.Target, meta.Model, cfg, meta.Version,
		start.UnixNano(), status, st.now().UnixNano(), host, os.Getpid(), meta.Name).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: adding run: %w", err)
	}
	return id, nil
}

const runColumns = `r.id, r.run_name, r.kind, r.label, r.target, r.model, r.config_json, r.knee_version,
	r.started_ns, r.ended_ns, r.status, r.heartbeat_ns, r.host, r.pid,
	(SELECT COUNT(*) FROM records c WHERE c.run_id = r.id), s.summary_json`

const runFrom = ` FROM runs r LEFT JOIN summaries s ON s.run_id = r.id`

type rowScanner interface{ Scan(dest ...any) error }

func (st *Store) scanRun(sc rowScanner) (*RunInfo, error) {
	var (
		ri                   RunInfo
		cfg                  string
		startNS, heartbeatNS int64
		endNS                sql.NullInt64
		host                 string
		pid                  int
		summary              sql.NullString
	)
	if err := sc.Scan(&ri.ID, &ri.Name, &ri.Kind, &ri.Label, &ri.Target, &ri.Model, &cfg, &ri.Version,
		&startNS, &endNS, &ri.StoredStatus, &heartbeatNS, &host, &pid, &ri.Records, &summary); err != nil {
		return nil, err
	}
	ri.Config = json.RawMessage(cfg)
	ri.Start = time.Unix(0, startNS)
	if endNS.Valid {
		ri.End = time.Unix(0, endNS.Int64)
	}
	ri.Heartbeat = time.Unix(0, heartbeatNS)
	ri.Status = ri.StoredStatus
	if ri.StoredStatus == StatusRunning && st.writerGone(ri.Heartbeat, host, pid) {
		ri.Status = StatusInterrupted
	}
	if summary.Valid {
		var s stats.Summary
		if err := json.Unmarshal([]byte(summary.String), &s); err != nil {
			return nil, fmt.Errorf("store: run %d: stored summary unreadable: %w", ri.ID, err)
		}
		ri.Summary = &s
	}
	return &ri, nil
}

// writerGone reports whether the process writing a "running" run has gone:
// its heartbeat is older than StaleAfter, or it ran on this host and its
// process no longer exists.
func (st *Store) writerGone(heartbeat time.Time, host string, pid int) bool {
	if st.now().Sub(heartbeat) > st.StaleAfter {
		return true
	}
	if h, _ := os.Hostname(); h == host && pid > 0 && pid != os.Getpid() {
		return !processAlive(pid)
	}
	return false
}

// ListRuns returns stored runs matching f, newest first.
func (st *Store) ListRuns(f Filter) ([]RunInfo, error) {
	runs, err := st.listRuns(f)
	return runs, st.damaged(err)
}

func (st *Store) listRuns(f Filter) ([]RunInfo, error) {
	q := `SELECT ` + runColumns + runFrom + ` WHERE 1=1`
	var args []any
	like := func(col, v string) {
		if v != "" {
			q += ` AND lower(` + col + `) LIKE ? ESCAPE '\'`
			args = append(args, "%"+escapeLike(strings.ToLower(v))+"%")
		}
	}
	if f.Kind != "" {
		q += ` AND r.kind = ?`
		args = append(args, f.Kind)
	}
	like("r.label", f.Label)
	like("r.target", f.Target)
	like("r.model", f.Model)
	if !f.Since.IsZero() {
		q += ` AND r.started_ns >= ?`
		args = append(args, f.Since.UnixNano())
	}
	q += ` ORDER BY r.id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(f.Limit)
	}
	rows, err := st.db.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: listing runs: %w", err)
	}
	defer rows.Close()
	var out []RunInfo
	for rows.Next() {
		ri, err := st.scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *ri)
	}
	return out, rows.Err()
}

func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// Run returns one run; the error wraps ErrNotFound when there is none.
func (st *Store) Run(id int64) (*RunInfo, error) {
	ri, err := st.run(id)
	return ri, st.damaged(err)
}

func (st *Store) run(id int64) (*RunInfo, error) {
	ri, err := st.scanRun(st.db.QueryRow(`SELECT `+runColumns+runFrom+` WHERE r.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading run %d: %w", id, err)
	}
	return ri, nil
}

// ResolveID turns what a user typed into a run id: a number ("12"), "last"
// (the newest run), or "last~N" (N runs before the newest). The error wraps
// ErrNotFound when no such run exists, and says what was expected when the
// text is not a run reference at all.
func (st *Store) ResolveID(ref string) (int64, error) {
	id, err := st.resolveID(ref)
	return id, st.damaged(err)
}

func (st *Store) resolveID(ref string) (int64, error) {
	ref = strings.TrimSpace(ref)
	back := -1
	switch {
	case ref == "last" || ref == "latest":
		back = 0
	case strings.HasPrefix(ref, "last~"):
		n, err := strconv.Atoi(ref[len("last~"):])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("run %q: want a run id (a number), \"last\" or \"last~N\"", ref)
		}
		back = n
	}
	if back >= 0 {
		var id int64
		err := st.db.QueryRow(`SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?`, back).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("run %q: %w (the database has fewer runs)", ref, ErrNotFound)
		}
		return id, err
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(ref, "#"), 10, 64)
	if err == nil && id <= 0 || ref == "" || strings.HasPrefix(ref, "last~") {
		return 0, fmt.Errorf("run %q: want a run id (a number, as `knee runs` lists), a run's name (--run-name), \"last\" or \"last~N\"", ref)
	}
	if err != nil {
		// A run's name (--run-name).
		err := st.db.QueryRow(`SELECT id FROM runs WHERE run_name = ?`, ref).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("run %q: %w: want a run id (a number, as `knee runs` lists), a run's name (--run-name), \"last\" or \"last~N\"", ref, ErrNotFound)
		}
		return id, err
	}
	var one int
	err = st.db.QueryRow(`SELECT 1 FROM runs WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("run %d: %w (see `knee runs`)", id, ErrNotFound)
	}
	return id, err
}

// Records calls fn for each stored record of run id, in the order the run
// produced them. A non-nil error from fn stops the scan and is returned.
func (st *Store) Records(id int64, fn func(*record.Request) error) error {
	return st.records(id, func(_ sql.NullInt64, r *record.Request) error { return fn(r) })
}

// StepRecords is Records with the sweep step of each record (-1 outside sweeps).
func (st *Store) StepRecords(id int64, fn func(step int, r *record.Request) error) error {
	return st.records(id, func(step sql.NullInt64, r *record.Request) error {
		s := -1
		if step.Valid {
			s = int(step.Int64)
		}
		return fn(s, r)
	})
}

func (st *Store) records(id int64, fn func(sql.NullInt64, *record.Request) error) error {
	return st.damaged(st.scanRecords(id, "step", fn))
}

// scanRecords calls fn for each record of run id, in order, with the value of
// column (step or shard: a constant of this package, never input) beside it.
func (st *Store) scanRecords(id int64, column string, fn func(sql.NullInt64, *record.Request) error) error {
	rows, err := st.db.Query(`SELECT seq, `+column+`, record_json FROM records WHERE run_id = ? ORDER BY seq`, id)
	if err != nil {
		return fmt.Errorf("store: reading records of run %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq   int64
			group sql.NullInt64
			raw   []byte
		)
		if err := rows.Scan(&seq, &group, &raw); err != nil {
			return err
		}
		var r record.Request
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("store: run %d record %d unreadable: %w", id, seq, err)
		}
		if err := fn(group, &r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// AllRecords returns every record of run id.
func (st *Store) AllRecords(id int64) ([]record.Request, error) {
	var out []record.Request
	err := st.Records(id, func(r *record.Request) error { out = append(out, *r); return nil })
	return out, err
}

// ImportRun stores a finished run with its records and summary in one
// transaction: either all of it is stored or none of it.
func (st *Store) ImportRun(meta RunMeta, recs []record.Request, summary *stats.Summary, status string) (int64, error) {
	if status == "" {
		status = StatusComplete
	}
	if !validFinal(status) {
		return 0, fmt.Errorf("store: final status %q (want complete, interrupted or failed)", status)
	}
	ctx := context.Background()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	id, err := st.insertRun(ctx, tx, meta, status)
	if err != nil {
		return 0, err
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO records (run_id, seq, step, record_json) VALUES (?, ?, NULL, ?)`)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	for i := range recs {
		b, err := json.Marshal(&recs[i])
		if err != nil {
			return 0, fmt.Errorf("store: record %d: %w", i, err)
		}
		if _, err := ins.ExecContext(ctx, id, i, b); err != nil {
			return 0, fmt.Errorf("store: record %d: %w", i, err)
		}
	}
	if err := finishTx(ctx, tx, id, summary, status, st.now()); err != nil {
		return 0, err
	}
	return id, tx.Commit()
}

func validFinal(status string) bool {
	return status == StatusComplete || status == StatusInterrupted || status == StatusFailed
}

// finishTx writes the summary, end time and final status of run id.
func finishTx(ctx context.Context, tx *sqlTx, id int64, summary *stats.Summary, status string, end time.Time) error {
	if summary != nil {
		b, err := json.Marshal(summary)
		if err != nil {
			return fmt.Errorf("store: marshalling summary: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO summaries (run_id, summary_json) VALUES (?, ?)
			ON CONFLICT (run_id) DO UPDATE SET summary_json = excluded.summary_json`, id, string(b)); err != nil {
			return fmt.Errorf("store: saving summary: %w", err)
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, ended_ns = ?, heartbeat_ns = ? WHERE id = ?`,
		status, end.UnixNano(), end.UnixNano(), id)
	return err
}

// SetSummary replaces the stored summary of run id (for example a partial
// summary computed for an interrupted run, or one recomputed with SLOs).
func (st *Store) SetSummary(id int64, s stats.Summary) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = st.db.Exec(`INSERT INTO summaries (run_id, summary_json) VALUES (?, ?)
		ON CONFLICT (run_id) DO UPDATE SET summary_json = excluded.summary_json`, id, string(b))
	return err
}

// DeleteRun removes a run with everything stored for it.
func (st *Store) DeleteRun(id int64) error {
	res, err := st.db.Exec(`DELETE FROM runs WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	return nil
}

// SetConfig replaces the stored configuration of run id (a sweep knows its
// steps only when it ends). config marshals to a JSON object as in RunMeta.
func (st *Store) SetConfig(id int64, config any) error {
	cfg, err := marshalConfig(config)
	if err != nil {
		return err
	}
	res, err := st.db.Exec(`UPDATE runs SET config_json = ? WHERE id = ?`, cfg, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	return nil
}

// SetStart sets when run id started: the run's row is written before its
// load begins, and its report shows when the load began.
func (st *Store) SetStart(id int64, t time.Time) error {
	res, err := st.db.Exec(`UPDATE runs SET started_ns = ? WHERE id = ?`, t.UnixNano(), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	return nil
}

// RenumberRecordSteps changes the sweep step of run id's records from each
// key of to to its value, in one transaction (steps not named keep theirs).
func (st *Store) RenumberRecordSteps(id int64, to map[int]int) error {
	ctx := context.Background()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Through negative numbers, so 0→1 and 1→0 do not collide.
	for from, dst := range to {
		if _, err := tx.ExecContext(ctx, `UPDATE records SET step = ? WHERE run_id = ? AND step = ?`, -1-dst, id, from); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE records SET step = -1 - step WHERE run_id = ? AND step < 0`, id); err != nil {
		return err
	}
	return tx.Commit()
}
