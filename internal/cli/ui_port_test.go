package cli

import (
	"net"
	"strings"
	"testing"
)

// TestUIBusyPort: a port in use is bad input, said once (exit 2).
func TestUIBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := kneeEnv(t, benchEnv(t), "ui", "--addr", ln.Addr().String())
	if code != ExitUsage || !strings.Contains(stderr, "in use") || strings.Count(stderr, "ui:") > 1 {
		t.Errorf("ui on a busy port: exit %d, want 2 saying it once:\n%s", code, stderr)
	}
}
