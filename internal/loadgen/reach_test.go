package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
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
