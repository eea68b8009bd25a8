package cli

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestBenchDeadTargetStopsAtOnce: knee bench --url with nothing listening
// exits 1 at the start-up check, saying it cannot connect, instead of
// running its whole --duration of connect failures.
func TestBenchDeadTargetStopsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	began := time.Now()
	code, _, stderr := kneeCmd(t, "bench", "--url", url, "--model", "m", "--rate", "5", "--duration", "60s", "--quiet", "--no-store")
	took := time.Since(began)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitFailure, stderr)
	}
	if !strings.Contains(stderr, "cannot connect") {
		t.Errorf("stderr does not say it cannot connect: %s", stderr)
	}
	if took > 20*time.Second {
		t.Errorf("took %v for a dead target, want seconds", took)
	}
}
