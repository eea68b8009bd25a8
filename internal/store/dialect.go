package store

import (
	"context"
	"database/sql"
	"net/url"
	"strconv"
	"strings"
)

// The store speaks two dialects: SQLite (the embedded default) and
// PostgreSQL (a team's shared store, and the rendezvous of shards). Queries
// are written once, with SQLite's "?" placeholders; sqlDB and sqlTx rewrite
// them to PostgreSQL's "$1, $2…" on the way out, so the rest of the package
// does not care which database it talks to. Schemas differ (column types,
// identity columns), so each dialect has its own migrations folder with the
// same versions and names.

// IsPostgresURL reports whether a --db value names a PostgreSQL database
// rather than an SQLite file.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns a database name fit to print: a PostgreSQL URL loses its
// password (in the user part or as a password= parameter); a file path is
// returned as is.
func Redact(s string) string {
	if !IsPostgresURL(s) {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "postgres://… (a URL that does not parse)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// sqlDB is *sql.DB with placeholders rebound for the dialect.
type sqlDB struct {
	*sql.DB
	pg bool
}

// sqlTx is *sql.Tx with placeholders rebound for the dialect.
type sqlTx struct {
	*sql.Tx
	pg bool
}

// rebind turns "?" placeholders outside quoted text into "$1", "$2"…
// for PostgreSQL.
func rebind(pg bool, q string) string {
	if !pg || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	quoted := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (d sqlDB) Exec(q string, args ...any) (sql.Result, error) {
	return d.DB.Exec(rebind(d.pg, q), args...)
}

func (d sqlDB) Query(q string, args ...any) (*sql.Rows, error) {
	return d.DB.Query(rebind(d.pg, q), args...)
}

func (d sqlDB) QueryRow(q string, args ...any) *sql.Row {
	return d.DB.QueryRow(rebind(d.pg, q), args...)
}

func (d sqlDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, rebind(d.pg, q), args...)
}

func (d sqlDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.DB.QueryContext(ctx, rebind(d.pg, q), args...)
}

func (d sqlDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, rebind(d.pg, q), args...)
}

func (d sqlDB) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sqlTx, error) {
	tx, err := d.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &sqlTx{Tx: tx, pg: d.pg}, nil
}

func (t *sqlTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, rebind(t.pg, q), args...)
}

func (t *sqlTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, rebind(t.pg, q), args...)
}

func (t *sqlTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, rebind(t.pg, q), args...)
}

func (t *sqlTx) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return t.Tx.PrepareContext(ctx, rebind(t.pg, q))
}
