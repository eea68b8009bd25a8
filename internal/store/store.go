// Package store keeps every run in an embedded SQLite database (pure Go,
// modernc.org/sqlite) and is the only package in knee that speaks SQL.
//
// Reading order: store.go (opening, default path, migrations), runs.go (run
// metadata, listing, effective status), writer.go (RunWriter: records written
// in batches while a run goes, so a kill -9 loses at most the last second),
// sweep.go (sweep steps, knee and SLO-safe point).
//
// Crash safety rests on three things: WAL journaling, a transaction per
// batch (every ~250 ms or BatchRecords records), and a heartbeat column the
// writer refreshes on every flush. A run whose status is still "running" but
// whose heartbeat is stale (or whose process on this host is gone) is
// reported as "interrupted".
package store

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Errors callers classify (the CLI maps them to exit code 2).
var (
	// ErrNotDatabase: the file exists but is not a knee database (corrupted,
	// or some other file).
	ErrNotDatabase = errors.New("not a knee database")
	// ErrNotFound: no run with that id.
	ErrNotFound = errors.New("no such run")
	// ErrTooNew: the database was written by a newer knee.
	ErrTooNew = errors.New("database schema is newer than this knee")
	// ErrNameTaken: another run already has the --run-name asked for.
	ErrNameTaken = errors.New("run name taken")
	// ErrNoDatabase: OpenReadOnly found no file (nothing was ever stored there).
	ErrNoDatabase = errors.New("no run database")
)

//go:embed migrations/*.sql migrations_postgres/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns SQLite's embedded migrations in version order.
func migrations() []migration { return migrationsIn("migrations") }

// migrationsIn returns the embedded migrations of one dialect's folder in
// version order. File names are NNNN_name.sql; numbers must be 1, 2, 3...
// without gaps.
func migrationsIn(dir string) []migration {
	entries, err := migrationFS.ReadDir(dir)
	if err != nil {
		panic(err) // embedded at build time
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("store: bad migration file name " + e.Name())
		}
		b, err := migrationFS.ReadFile(dir + "/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("store: migration %d missing", i+1))
		}
	}
	return out
}

// SchemaVersion is the schema this knee writes.
func SchemaVersion() int { return len(migrations()) }

// Store is an open knee database. It is safe for concurrent use.
type Store struct {
	db   sqlDB
	path string
	// pg: the database is PostgreSQL (path is its URL), not an SQLite file.
	pg bool
	// now is the wall clock (injected by tests that judge heartbeats).
	now func() time.Time
	// StaleAfter is how old a running run's heartbeat may be before the run
	// is reported as interrupted.
	StaleAfter time.Duration
	readOnly   bool
}

// DefaultPath is where the database lives when neither --db nor KNEE_DB says
// otherwise: $XDG_DATA_HOME/knee/knee.db, else ~/.local/share/knee/knee.db.
// getenv reads the environment (os.Getenv, or a test's fake).
func DefaultPath(getenv func(string) string) string {
	if p := getenv("KNEE_DB"); p != "" {
		return p
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "knee", "knee.db")
	}
	home := getenv("HOME")
	if home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = h
		}
	}
	return filepath.Join(home, ".local", "share", "knee", "knee.db")
}

var sqliteMagic = []byte("SQLite format 3\x00")

// Open opens (creating when absent) the database at path and brings its
// schema up to date. A file that is not an SQLite database, or is damaged,
// gives an error wrapping ErrNotDatabase.
func Open(path string) (*Store, error) {
	return OpenWith(path, Options{})
}

// DefaultBusyTimeout is how long an SQLite statement waits on another
// connection's lock before it fails with SQLITE_BUSY, unless Options say.
const DefaultBusyTimeout = 10 * time.Second

// Options tune Open; the zero value is the default.
type Options struct {
	// BusyTimeout replaces DefaultBusyTimeout for an SQLite database (0:
	// the default): tests of a database that stays locked need not wait
	// out 10 s per write.
	BusyTimeout time.Duration
}

func (o Options) busyTimeout() time.Duration {
	if o.BusyTimeout > 0 {
		return o.BusyTimeout
	}
	return DefaultBusyTimeout
}

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*Store, error) {
	return open(path, SchemaVersion(), o)
}

func open(path string, upTo int, o Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	if IsPostgresURL(path) {
		return openPostgres(path, upTo)
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating the database directory: %w", err)
		}
	}
	// WAL (set by walMode): readers never block the writer and a killed
	// process loses only its uncommitted transaction. synchronous=NORMAL is
	// durable against process death (not power loss), which is what we
	// promise. _txlock=immediate: write transactions take the write lock up
	// front so two writers wait on busy_timeout instead of deadlocking.
	dsn := fmt.Sprintf("%s?_busy_timeout=%d&_foreign_keys=1&_synchronous=NORMAL&_txlock=immediate", path, o.busyTimeout().Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	if err := walMode(context.Background(), db, o.busyTimeout()); err != nil {
		db.Close()
		return nil, classify(path, err)
	}
	st := &Store{db: sqlDB{DB: db}, path: path, now: time.Now, StaleAfter: 5 * time.Second}
	if err := st.migrate(upTo); err != nil {
		db.Close()
		return nil, classify(path, err)
	}
	return st, nil
}

// walMode switches the database file to WAL journaling; the file keeps the
// mode, so later connections need not ask. It is not in the DSN, where
// every new connection would ask: a switch that meets another connection's
// lock (shards opening one new file at once) fails with SQLITE_BUSY at once,
// without waiting out the busy timeout. Here the switch is retried for as
// long as that timeout.
func walMode(ctx context.Context, db *sql.DB, busyTimeout time.Duration) error {
	deadline := time.Now().Add(busyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var mode string
		err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}

// isBusy reports SQLITE_BUSY, with any extended code.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// OpenReadOnly opens an existing database for reading only: it never creates
// the file or its folder and never writes, so runs can be listed and
// rendered from a read-only folder or someone else's file. A missing file
// gives an error wrapping ErrNoDatabase. A database at an older schema is
// migrated first when its file can be written, and refused when it cannot
// (this knee's queries need the current tables).
func OpenReadOnly(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	if IsPostgresURL(path) {
		return openPostgresReadOnly(path)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("database %s: %w (the file does not exist; knee bench, sweep, sim and import store runs there)", path, ErrNoDatabase)
	}
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("database %s: %w (it is a folder; --db names the database file, e.g. %s)", path, ErrNotDatabase, filepath.Join(path, "knee.db"))
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("database %s: %w (the file is empty: no run was ever stored in it)", path, ErrNoDatabase)
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	st, err := openRO(path, false)
	if err != nil {
		// A WAL database in a folder this user cannot write: SQLite cannot
		// create the shared-memory file. Read it as immutable (no locking:
		// fine for a one-shot report; a writer elsewhere may be ahead of us).
		st, err = openRO(path, true)
	}
	if err != nil {
		return nil, classify(path, err)
	}
	v, err := st.version(context.Background())
	if err != nil {
		st.Close()
		if strings.Contains(err.Error(), "no such table") {
			return nil, fmt.Errorf("database %s: %w (an SQLite file without knee's schema_version table)", path, ErrNotDatabase)
		}
		return nil, classify(path, err)
	}
	if v > SchemaVersion() {
		st.Close()
		return nil, fmt.Errorf("database %s: %w (schema %d, this knee knows up to %d)", path, ErrTooNew, v, SchemaVersion())
	}
	if v < SchemaVersion() {
		st.Close()
		if !writable(path) {
			return nil, fmt.Errorf("database %s: schema %d was written by an older knee and the file cannot be written to upgrade it to %d; "+
				"run any knee command on it once where it is writable, or copy it", path, v, SchemaVersion())
		}
		return Open(path) // bring it up to date, then read
	}
	return st, nil
}

// openRO opens path read-only through an SQLite URI (mode=ro, and
// immutable=1 when even the WAL index cannot be created), and checks that
// it reads.
func openRO(path string, immutable bool) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(abs)}
	q := fmt.Sprintf("mode=ro&_busy_timeout=%d", DefaultBusyTimeout.Milliseconds())
	if immutable {
		q += "&immutable=1"
	}
	db, err := sql.Open("sqlite", u.String()+"?"+q)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master`).Scan(&n); err != nil {
		db.Close()
		return nil, err
	}
	if n == 0 {
		db.Close()
		return nil, fmt.Errorf("%w (an SQLite file without knee's tables)", ErrNotDatabase)
	}
	return &Store{db: sqlDB{DB: db}, path: path, now: time.Now, StaleAfter: 5 * time.Second, readOnly: true}, nil
}

// writable reports whether this process may write the database file and
// its folder (SQLite needs both: the journal lives beside the file).
func writable(path string) bool {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	probe, err := os.CreateTemp(filepath.Dir(path), ".knee-write-probe-*")
	if err != nil {
		return false
	}
	probe.Close()
	os.Remove(probe.Name())
	return true
}

// ReadOnly reports whether the store was opened by OpenReadOnly.
func (st *Store) ReadOnly() bool { return st.readOnly }

// checkHeader rejects a non-empty file that does not start with SQLite's
// magic string, before the driver gets to write anything into it.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening database %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF) {
		return nil // empty file: SQLite treats it as a new database
	}
	if !bytes.Equal(head[:n], sqliteMagic) {
		return fmt.Errorf("database %s: %w (the file does not start with the SQLite header; move it away or pass another --db)", path, ErrNotDatabase)
	}
	return nil
}

// classify wraps SQLite's "file is not a database" / "malformed" errors in
// ErrNotDatabase so the caller can say what is wrong with the file.
func classify(path string, err error) error {
	if errors.Is(err, ErrNotDatabase) || errors.Is(err, ErrTooNew) {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "not a database") || strings.Contains(msg, "malformed") ||
		strings.Contains(msg, "corrupt") || strings.Contains(msg, "SQLITE_NOTADB") || strings.Contains(msg, "SQLITE_CORRUPT") {
		return fmt.Errorf("database %s: %w (damaged: %v)", path, ErrNotDatabase, err)
	}
	return fmt.Errorf("database %s: %w", path, err)
}

// damaged wraps an error from a query in ErrNotDatabase, naming the file,
// when SQLite says the file is damaged (a page can be bad while the header
// and schema read fine, so this shows only when that page is read).
func (st *Store) damaged(err error) error {
	if err == nil || errors.Is(err, ErrNotDatabase) {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "malformed") || strings.Contains(msg, "not a database") || strings.Contains(msg, "SQLITE_CORRUPT") ||
		strings.Contains(msg, "SQLITE_NOTADB") {
		return fmt.Errorf("database %s: %w (damaged: %v; move it away or pass another --db)", st.path, ErrNotDatabase, err)
	}
	return err
}

// Path is the file (or PostgreSQL URL) the store was opened from; print
// Redact(Path()), never the URL itself.
func (st *Store) Path() string { return st.path }

// Postgres reports whether the store is a PostgreSQL database.
func (st *Store) Postgres() bool { return st.pg }

// Close closes the database.
func (st *Store) Close() error { return st.db.Close() }

// migrate applies the embedded migrations up to version upTo, each in its
// own transaction together with its schema_version row.
func (st *Store) migrate(upTo int) error {
	ctx := context.Background()
	if st.pg {
		return st.migratePostgres(ctx, upTo)
	}
	if _, err := st.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_ns INTEGER NOT NULL)`); err != nil {
		return err
	}
	cur, err := st.version(ctx)
	if err != nil {
		return err
	}
	all := migrations()
	if cur > len(all) {
		return fmt.Errorf("database %s: %w (schema %d, this knee knows up to %d)", st.path, ErrTooNew, cur, len(all))
	}
	for _, m := range all[cur:upTo] {
		tx, err := st.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		// Another process (a shard opening the same new file) may have
		// applied it since the version was read: the write lock is ours now.
		var done sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&done); err != nil {
			tx.Rollback()
			return err
		}
		if int(done.Int64) >= m.version {
			tx.Rollback()
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_ns) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UnixNano()); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

func (st *Store) version(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := st.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// Version is the schema version the database is at.
func (st *Store) Version() (int, error) { return st.version(context.Background()) }
