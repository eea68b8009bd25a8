// Package storetest gives tests a PostgreSQL to store runs in: a schema of
// the test's own on the server KNEE_TEST_POSTGRES_URL names, dropped when
// the test ends. Without that variable the test skips saying how to start
// a server, except in CI (CI set), where it fails: .ci/run starts one.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" for sql.Open
)

// Env names the test server's URL.
const Env = "KNEE_TEST_POSTGRES_URL"

// Start says how to start a server for the tests.
const Start = "start one with: d=$(mktemp -d); scripts/postgres.sh start $d; set -a; . $d/env; set +a"

// PostgresURL returns the test server's URL with a search_path set to a
// fresh schema of this test's own, dropped when the test ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but " + Env + " is not: .ci/run starts PostgreSQL with scripts/postgres.sh; " + Start)
		}
		t.Skip(Env + " is not set; " + Start)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "knee_test_" + hex.EncodeToString(b)
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("creating a test schema on %s: %v", Env, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		db.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}
