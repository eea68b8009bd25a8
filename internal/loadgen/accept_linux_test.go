//go:build linux

package loadgen

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"golang.org/x/sys/unix"
)

// fullBacklog is a loopback listener that never accepts, its accept queue
// already full (listen backlog 0 holds one connection; two are dialed), so
// that a further dial's SYN is dropped and the dial hangs to its timeout.
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*unix.SockaddrInet4).Port}).String()
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		cancel()
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	return "http://" + addr
}

// TestNeverAccepts: a target that listens but never accepts is refused by
// the start-up check within its wait, saying so (not a --request-timeout
// matter), and a request that cannot get a connection in time is a
// connect failure whose message names the dial timeout, never a timeout
// whose hint is to raise --request-timeout.
func TestNeverAccepts(t *testing.T) {
	url := fullBacklog(t)
	err := checkReachable(context.Background(), url, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "does not accept connections") || !strings.Contains(err.Error(), "dial (connect) timed out") {
		t.Errorf("start-up check: %v, want one saying it does not accept connections, naming the dial timeout", err)
	}
	res := run(t, Config{BaseURL: url, Model: "m", Concurrency: 1, Requests: 1, RequestTimeout: 300 * time.Millisecond}, promptSource(2))
	r := res.Records[0]
	if r.Error != record.ErrConnect || !strings.Contains(r.ErrorMessage, "dial (connect) did not complete") {
		t.Errorf("request: %s: %s, want connect naming the dial timeout", r.Error, r.ErrorMessage)
	}
	t.Logf("start-up check: %v; request: %s: %s", err, r.Error, r.ErrorMessage)
}
