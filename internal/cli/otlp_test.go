package cli

import (
	"net"
	"strings"
	"testing"
)

func TestOTLPFlags(t *testing.T) {
	bench := []string{"bench", "--requests", "6", "--concurrency", "2", "--input-tokens", "16", "--output-tokens", "4", "--quiet", "--no-store"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-protocol", "thrift"}, "--otlp-protocol"},
		{[]string{"--otlp-endpoint", "localhost:4318"}, "--otlp-endpoint"},
		{[]string{"--otlp-traces"}, "need a collector"},
	} {
		code, _, stderr := kneeEnv(t, benchEnv(t), append(bench, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q: want exit 2 naming %s", tc.args, code, stderr, tc.want)
		}
	}
	code, _, stderr := kneeEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, bench...)
	if code != ExitUsage || !strings.Contains(stderr, "$OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Errorf("a bad protocol in the environment: exit %d, stderr %q: want exit 2 naming the variable", code, stderr)
	}
}

// A collector that is down is reported once; the run finishes as without it.
func TestOTLPDownCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--requests", "6", "--concurrency", "2", "--input-tokens", "16",
		"--output-tokens", "4", "--quiet", "--no-store", "--json", "--otlp-endpoint", down, "--otlp-traces")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "OpenTelemetry export"); n != 1 {
		t.Errorf("the down collector was reported %d times, want once:\n%s", n, stderr)
	}
	if !strings.Contains(stdout, `"completed": 6`) {
		t.Errorf("the run must complete its 6 requests:\n%s", stdout)
	}
}
