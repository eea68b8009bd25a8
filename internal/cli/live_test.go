package cli

import (
	"strings"
	"testing"
)

func TestMetricsAddrFlag(t *testing.T) {
	code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--requests", "4", "--concurrency", "2", "--input-tokens", "16",
		"--output-tokens", "4", "--quiet", "--no-store", "--metrics-addr", "not an address")
	if code != ExitUsage || !strings.Contains(stderr, "--metrics-addr") {
		t.Fatalf("exit %d, stderr %q: want exit 2 naming --metrics-addr", code, stderr)
	}
	code, _, stderr = kneeEnv(t, benchEnv(t), "bench", "--requests", "4", "--concurrency", "2", "--input-tokens", "16",
		"--output-tokens", "4", "--quiet", "--no-store", "--metrics-addr", ":0", "--metrics-linger", "10ms")
	if code != ExitOK || !strings.Contains(stderr, "live metrics at http://127.0.0.1:") {
		t.Fatalf("exit %d, stderr %q: want the endpoint on loopback", code, stderr)
	}
	// After the run, the endpoint stays for the stated linger (livemetrics'
	// TestLinger holds it serving then).
	if !strings.Contains(stderr, "for 10ms (--metrics-linger)") {
		t.Errorf("stderr %q: want the linger said", stderr)
	}
	code, _, stderr = kneeEnv(t, benchEnv(t), "bench", "--requests", "4", "--concurrency", "2", "--quiet", "--no-store",
		"--metrics-addr", ":0", "--metrics-linger", "-1s")
	if code != ExitUsage || !strings.Contains(stderr, "--metrics-linger") {
		t.Errorf("--metrics-linger -1s: exit %d, %q; want 2 naming it", code, stderr)
	}
}
