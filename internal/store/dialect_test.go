package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/store/storetest"
)

// The store's suite runs on both dialects: SQLite always, PostgreSQL when
// KNEE_TEST_POSTGRES_URL names a server (.ci/run starts one; without it the
// PostgreSQL half skips, except in CI, where it fails).

// eachDialect runs fn on a fresh SQLite file and on a fresh PostgreSQL schema.
func eachDialect(t *testing.T, fn func(t *testing.T, db string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, tempDB(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, storetest.PostgresURL(t)) })
}

func TestRebind(t *testing.T) {
	got := rebind(true, `SELECT a FROM t WHERE x = ? AND y LIKE ? ESCAPE '\' AND z = '?' AND w = ?`)
	want := `SELECT a FROM t WHERE x = $1 AND y LIKE $2 ESCAPE '\' AND z = '?' AND w = $3`
	if got != want {
		t.Errorf("rebind:\n got %s\nwant %s", got, want)
	}
	if got := rebind(false, "x = ?"); got != "x = ?" {
		t.Errorf("SQLite query changed: %s", got)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://knee:s3cret@db:5432/knee?sslmode=disable": "postgres://knee:xxxxx@db:5432/knee?sslmode=disable",
		"postgresql://db/knee?password=s3cret&user=knee":      "postgresql://db/knee?password=xxxxx&user=knee",
		"/home/u/knee.db": "/home/u/knee.db",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// Both dialects' migration folders hold the same versions with the same names.
func TestMigrationsMatchAcrossDialects(t *testing.T) {
	lite, pg := migrationsIn("migrations"), migrationsIn("migrations_postgres")
	if len(lite) != len(pg) {
		t.Fatalf("%d SQLite migrations, %d PostgreSQL ones", len(lite), len(pg))
	}
	for i := range lite {
		if lite[i].version != pg[i].version || lite[i].name != pg[i].name {
			t.Errorf("migration %d: SQLite %d_%s, PostgreSQL %d_%s", i, lite[i].version, lite[i].name, pg[i].version, pg[i].name)
		}
	}
}

// A server that does not answer is named without its password, and says so.
func TestPostgresUnreachable(t *testing.T) {
	_, err := Open("postgres://knee:s3cret@127.0.0.1:1/knee?connect_timeout=2")
	if err == nil {
		t.Fatal("opened a database on port 1")
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "cannot reach the PostgreSQL server") ||
		!strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error: %v", err)
	}
	if _, err := Open("postgres://knee:s3cret@[bad/knee"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("unparseable URL: %v", err)
	}
}

// Shards start together on an empty database: their migrations must not race.
func TestPostgresConcurrentMigrations(t *testing.T) {
	openConcurrently(t, storetest.PostgresURL(t), 4)
}

// A database knee never wrote to is "no run database" to a reading
// command, and is left untouched.
func TestPostgresReadOnlyEmpty(t *testing.T) {
	url := storetest.PostgresURL(t)
	if _, err := OpenReadOnly(url); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("OpenReadOnly of an empty database: %v, want ErrNoDatabase", err)
	}
	openT(t, url).Close()
	st, err := OpenReadOnly(url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.ReadOnly() || !st.Postgres() {
		t.Errorf("read-only %t, postgres %t", st.ReadOnly(), st.Postgres())
	}
}

// Sixteen processes (here goroutines with their own connections) opening
// one new SQLite file at once: each migration is applied once, and none
// fails on the switch to WAL that the others contend for (with the switch
// in the DSN, 5 of 300 runs here failed with SQLITE_BUSY).
func TestSQLiteConcurrentMigrations(t *testing.T) {
	openConcurrently(t, tempDB(t), 16)
}

// openConcurrently opens the store at dsn from n goroutines at once (each
// with its own connections, as n processes would) and checks that every
// open succeeded and the schema ends at this knee's version.
func openConcurrently(t *testing.T, dsn string, n int) {
	t.Helper()
	errs := make(chan error, n)
	for range n {
		go func() {
			st, err := Open(dsn)
			if err == nil {
				st.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	st := openT(t, dsn)
	if v, err := st.Version(); err != nil || v != SchemaVersion() {
		t.Errorf("schema %d, %v; want %d", v, err, SchemaVersion())
	}
}
