package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/knee-dev/knee/internal/store"
	"path/filepath"
	"strings"
	"testing"
)

// kneeEnv runs the CLI with buffers and an injected environment and returns
// the exit code and output. Unless envVars names KNEE_DB, runs are stored in
// a temporary database, never the user's.
func kneeEnv(t *testing.T, envVars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "knee.db")
	getenv := func(k string) string {
		if v, ok := envVars[k]; ok {
			return v
		}
		if k == "KNEE_DB" {
			return db
		}
		return ""
	}
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv}
	code = MainEnv(context.Background(), env, args)
	return code, out.String(), errb.String()
}

// kneeCmd runs the CLI with a temporary database.
func kneeCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return kneeEnv(t, nil, args...)
}

// simJSON runs knee sim with args (seeded, quiet, unstored, --json) and
// decodes its summary into summary; a failed run fails the test.
func simJSON(t *testing.T, summary any, args ...string) {
	t.Helper()
	code, out, errs := kneeCmd(t, append(append([]string{"sim"}, args...), "--seed", "1", "--json", "--quiet", "--no-store")...)
	if code != 0 {
		t.Fatalf("knee sim %v: exit %d: %s", args, code, errs)
	}
	if err := json.Unmarshal([]byte(out), summary); err != nil {
		t.Fatalf("knee sim %v --json: %v", args, err)
	}
}

// lastRuns opens db read-only (closed when the test ends) and returns its
// newest n runs, failing the test unless there are n.
func lastRuns(t *testing.T, db string, n int) (*store.Store, []store.RunInfo) {
	t.Helper()
	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	runs, err := st.ListRuns(store.Filter{Limit: n})
	if err != nil || len(runs) != n {
		t.Fatalf("runs: %v %v", runs, err)
	}
	return st, runs
}
