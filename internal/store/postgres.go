package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL: a team's shared store and the rendezvous of shards. The
// schema is the same as SQLite's, written in PostgreSQL's types
// (migrations_postgres); records go in by COPY, one batch per flush.

// connectTimeout bounds how long opening waits for a server that does not
// answer (a URL's connect_timeout, when given, applies to each attempt).
const connectTimeout = 10 * time.Second

// migrationLock is the advisory lock key that serializes schema
// migrations: N shards starting on an empty database at once would
// otherwise race to create the same tables.
const migrationLock = 0x6b6e6565 // "knee"

func openPostgres(url string, upTo int) (*Store, error) {
	st, err := connectPostgres(url)
	if err != nil {
		return nil, err
	}
	if err := st.migrate(upTo); err != nil {
		st.Close()
		return nil, fmt.Errorf("database %s: %w", Redact(url), err)
	}
	return st, nil
}

// openPostgresReadOnly connects and checks the schema without changing
// anything: a database knee never wrote to has no runs to read. An older
// schema is brought up to date (as for SQLite, where the file is writable).
func openPostgresReadOnly(url string) (*Store, error) {
	st, err := connectPostgres(url)
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := st.db.QueryRow(`SELECT to_regclass('schema_version') IS NOT NULL`).Scan(&exists); err != nil {
		st.Close()
		return nil, fmt.Errorf("database %s: %w", Redact(url), err)
	}
	if !exists {
		st.Close()
		return nil, fmt.Errorf("database %s: %w (no knee tables in it; knee bench, sweep, sim and import store runs there)", Redact(url), ErrNoDatabase)
	}
	v, err := st.version(context.Background())
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("database %s: %w", Redact(url), err)
	}
	if v > SchemaVersion() {
		st.Close()
		return nil, fmt.Errorf("database %s: %w (schema %d, this knee knows up to %d)", Redact(url), ErrTooNew, v, SchemaVersion())
	}
	if v < SchemaVersion() {
		st.Close()
		return openPostgres(url, SchemaVersion())
	}
	st.readOnly = true
	return st, nil
}

func connectPostgres(url string) (*Store, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL; name it redacted instead.
		return nil, fmt.Errorf("database %s: %w (want postgres://user:password@host:port/database?sslmode=…)", Redact(url), ErrNotDatabase)
	}
	db := stdlib.OpenDB(*cfg)
	// A handful of connections: one writer flushing, a few readers.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(4)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: cannot reach the PostgreSQL server: %w", Redact(url), err)
	}
	return &Store{db: sqlDB{DB: db, pg: true}, path: url, pg: true, now: time.Now, StaleAfter: 5 * time.Second}, nil
}

// migratePostgres applies PostgreSQL's migrations up to upTo in one
// transaction (PostgreSQL's DDL is transactional) under an advisory lock.
func (st *Store) migratePostgres(ctx context.Context, upTo int) error {
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(migrationLock)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_ns BIGINT  NOT NULL)`); err != nil {
		return err
	}
	var cur sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&cur); err != nil {
		return err
	}
	all := migrationsIn("migrations_postgres")
	if int(cur.Int64) > len(all) {
		return fmt.Errorf("%w (schema %d, this knee knows up to %d)", ErrTooNew, cur.Int64, len(all))
	}
	for _, m := range all[cur.Int64:upTo] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_ns) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UnixNano()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// recordColumns are the records table's columns COPY fills.
var recordColumns = []string{"run_id", "seq", "step", "shard", "record_json"}

// copyBatch writes a batch of records with COPY and refreshes the
// heartbeat, in one transaction. A sharded run's records go through a
// temporary table and ON CONFLICT DO NOTHING, so a restarted shard that
// measures a request again does not store it twice.
func (w *RunWriter) copyBatch(batch []pendingRec) error {
	ctx := context.Background()
	rows := make([][]any, len(batch))
	for i := range batch {
		p := &batch[i]
		b, err := p.json()
		if err != nil {
			return err
		}
		var step, shard any
		if p.step >= 0 {
			step = int32(p.step)
		}
		if w.shard >= 0 {
			shard = int32(w.shard)
		}
		rows[i] = []any{w.id, p.seq, step, shard, string(b)}
	}
	conn, err := w.st.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		sc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return errors.New("store: PostgreSQL connection is not pgx's")
		}
		pc := sc.Conn()
		tx, err := pc.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if len(rows) > 0 {
			table := "records"
			if w.shard >= 0 {
				table = "records_in"
				if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS records_in
					(run_id BIGINT, seq BIGINT, step INTEGER, shard INTEGER, record_json TEXT) ON COMMIT DELETE ROWS`); err != nil {
					return err
				}
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, recordColumns, pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("store: copying %d records: %w", len(rows), err)
			}
			if w.shard >= 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO records (`+strings.Join(recordColumns, ", ")+`)
					SELECT `+strings.Join(recordColumns, ", ")+` FROM records_in ON CONFLICT (run_id, seq) DO NOTHING`); err != nil {
					return err
				}
			}
		}
		if err := w.heartbeatPostgres(ctx, tx); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

// heartbeatPostgres is heartbeat inside a pgx transaction (COPY needs pgx's
// own connection, not database/sql's).
func (w *RunWriter) heartbeatPostgres(ctx context.Context, tx pgx.Tx) error {
	now := w.st.now().UnixNano()
	if _, err := tx.Exec(ctx, `UPDATE runs SET heartbeat_ns = $1 WHERE id = $2`, now, w.id); err != nil {
		return err
	}
	if w.shard >= 0 {
		if _, err := tx.Exec(ctx, `UPDATE shards SET heartbeat_ns = $1 WHERE run_id = $2 AND shard = $3`, now, w.id, w.shard); err != nil {
			return err
		}
	}
	return nil
}
