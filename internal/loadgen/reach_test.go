package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// deadURL is a loopback address where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestCheckReachable(t *testing.T) {
	dead := deadURL(t)
	if err := CheckReachable(context.Background(), dead); err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("dead target: err = %v, want one saying it cannot connect", err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if err := CheckReachable(context.Background(), srv.URL); err != nil {
		t.Errorf("live target: %v", err)
	}
}

// TestStopIfUnreachable: a 60 s open-loop run at a dead target stops
// issuing at its StopIfUnreachable mark, every record a connect failure,
// while a live target whose every answer is an error runs its course.
func TestStopIfUnreachable(t *testing.T) {
	cfg := Config{BaseURL: deadURL(t), RateRPS: 50, Duration: 60 * time.Second, StopIfUnreachable: 200 * time.Millisecond}
	res := run(t, cfg, promptSource(3))
	if res.StoppedBy != StopUnreachable {
		t.Fatalf("stopped by %q after %v, want %q", res.StoppedBy, res.Elapsed, StopUnreachable)
	}
	if res.Elapsed > 20*time.Second {
		t.Errorf("the run took %v, want it stopped near 200ms", res.Elapsed)
	}
	for _, r := range res.Records {
		if r.Error != record.ErrConnect {
			t.Fatalf("request %d: %q, want connect", r.ID, r.Error)
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	cfg = Config{BaseURL: srv.URL, RateRPS: 50, Duration: 600 * time.Millisecond, StopIfUnreachable: 100 * time.Millisecond}
	if res := run(t, cfg, promptSource(3)); res.StoppedBy != StopDuration {
		t.Errorf("a live target failing every request: stopped by %q, want %q", res.StoppedBy, StopDuration)
	}
}

// TestCheckReachableSilentListener: a listener that never accepts (the
// kernel completes the handshake, nobody reads) fails the check within its
// wait; one that answers anything, even by closing, passes.
func TestCheckReachableSilentListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = checkReachable(context.Background(), "http://"+ln.Addr().String(), 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "answered nothing") {
		t.Errorf("silent listener: %v, want one saying it answered nothing", err)
	}
	closer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	go func() {
		for {
			c, err := closer.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if err := checkReachable(context.Background(), "http://"+closer.Addr().String(), 5*time.Second); err != nil {
		t.Errorf("a server that accepts and closes: %v, want it passed (the run judges its answers)", err)
	}
}

type dialTimeoutErr struct{}

func (dialTimeoutErr) Error() string   { return "i/o timeout" }
func (dialTimeoutErr) Timeout() bool   { return true }
func (dialTimeoutErr) Temporary() bool { return true }

// TestDialTimeoutIsConnect: a dial that ran out of time (the transport's
// own dial timeout) is a connect failure naming that timeout, not a
// timeout of the request, whose hint is to raise --request-timeout.
func TestDialTimeoutIsConnect(t *testing.T) {
	r := &Run{hardCtx: context.Background(), parent: context.Background()}
	rec := &record.Request{}
	err := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/v1/chat/completions", Err: &net.OpError{Op: "dial", Net: "tcp", Err: dialTimeoutErr{}}}
	r.classifyTransportError(rec, err, false)
	if rec.Error != record.ErrConnect || !strings.Contains(rec.ErrorMessage, "dial timeout") {
		t.Errorf("%s: %s, want connect naming the dial timeout", rec.Error, rec.ErrorMessage)
	}
}
