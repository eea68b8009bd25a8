package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSweepInterruptKeepsPartialStep: Ctrl-C in a sweep's first step, and
// in its second, keeps the step in progress with its records, marked
// partial, and the run is stored as interrupted, not failed.
func TestSweepInterruptKeepsPartialStep(t *testing.T) {
	for _, c := range []struct {
		name     string
		cancelAt int64 // the request whose arrival cancels the sweep
		steps    int
	}{{"first step", 6, 1}, {"second step", 16, 2}} {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := tokenServer(t, false)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var served atomic.Int64
			counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/completions") && served.Add(1) == c.cancelAt {
					cancel()
				}
				srv.Config.Handler.ServeHTTP(w, r)
			}))
			defer counting.Close()
			db := filepath.Join(t.TempDir(), "knee.db")
			var out, errb bytes.Buffer
			env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Getenv: func(k string) string { return map[string]string{"KNEE_DB": db}[k] }}
			code := MainEnv(ctx, env, []string{"sweep", "--url", counting.URL, "--model", "m", "--concurrency", "1,2",
				"--requests", "10", "--input-tokens", "8", "--output-tokens", "2", "--quiet", "--ignore-eos", "false", "--grace", "0"})
			if code == ExitOK {
				t.Fatalf("an interrupted sweep exited 0:\n%s", errb.String())
			}
			if !strings.Contains(out.String(), "partial step") {
				t.Errorf("the report does not show a partial step:\n%s\n%s", out.String(), errb.String())
			}
			code, runs, _ := kneeEnv(t, map[string]string{"KNEE_DB": db}, "runs")
			if code != ExitOK || !strings.Contains(runs, "interrupted") {
				t.Errorf("knee runs after an interrupted sweep:\n%s", runs)
			}
			code, recs, stderr := kneeEnv(t, map[string]string{"KNEE_DB": db}, "records", "last")
			if n := strings.Count(recs, "\n"); code != ExitOK || n < 2 {
				t.Errorf("records of the interrupted sweep: exit %d, %d records: %s", code, n, stderr)
			}
			code, rep, _ := kneeEnv(t, map[string]string{"KNEE_DB": db}, "report", "last", "--format", "json")
			if code != ExitOK || strings.Count(rep, `"load":`) < c.steps {
				t.Errorf("the stored sweep lacks its %d steps:\n%.2000s", c.steps, rep)
			}
		})
	}
}
