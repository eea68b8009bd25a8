package cli

import (
	"bytes"
	"context"
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

// runKnee is kneeCmd under its older name.
func runKnee(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return kneeEnv(t, nil, args...)
}
