package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSweepEveryStepFailedExits1: a sweep against a server that answers
// every request with an HTML page measured nothing, and exits 1 saying so.
func TestSweepEveryStepFailedExits1(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>login</body></html>"))
	}))
	t.Cleanup(srv.Close)
	code, _, stderr := kneeEnv(t, benchEnv(t), "sweep", "--url", srv.URL, "--model", "m", "--concurrency", "1,2",
		"--requests", "3", "--input-tokens", "8", "--output-tokens", "2", "--quiet", "--ignore-eos", "false")
	if code != ExitFailure {
		t.Fatalf("sweep whose every step failed: exit %d, want %d; stderr:\n%s", code, ExitFailure, stderr)
	}
	if !strings.Contains(stderr, "every step of the sweep failed") {
		t.Errorf("stderr does not say every step failed:\n%s", stderr)
	}
}

// TestSweepStopsAtADeadTarget: a sweep to a target that refuses every
// connection ends its first step as bench does, measures no further step
// (here a 40 s step each), and exits 1 saying why.
func TestSweepStopsAtADeadTarget(t *testing.T) {
	parallelUntimed(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close() // nothing listens there now
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "sweep", "--url", dead, "--model", "m", "--concurrency", "1,2",
		"--duration", "40s", "--input-tokens", "8", "--output-tokens", "2", "--quiet", "--ignore-eos", "false", "--json")
	if code != ExitFailure {
		t.Fatalf("sweep to a dead target: exit %d, want %d; stderr:\n%s", code, ExitFailure, stderr)
	}
	if !strings.Contains(stdout, "the sweep stopped at 1 in flight: every request of the first 5s failed to connect") ||
		!strings.Contains(stdout, "left out: 2 in flight") {
		t.Errorf("want one step and a note naming the step left out:\n%s", stdout)
	}
}
