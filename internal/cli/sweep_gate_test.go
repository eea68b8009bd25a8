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
