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
		"--output-tokens", "4", "--quiet", "--no-store", "--metrics-addr", ":0")
	if code != ExitOK || !strings.Contains(stderr, "live metrics at http://127.0.0.1:") {
		t.Fatalf("exit %d, stderr %q: want the endpoint on loopback", code, stderr)
	}
}
