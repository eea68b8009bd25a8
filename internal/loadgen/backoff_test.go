package loadgen

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/hostile"
	"github.com/knee-dev/knee/internal/record"
)

func TestFailureBackoff(t *testing.T) {
	for _, c := range []struct {
		streak     int
		retryAfter time.Duration
		want       time.Duration
	}{
		{0, 0, 0}, {1, 0, 0}, // a lone failure costs nothing
		{2, 0, minBackoff}, {3, 0, 2 * minBackoff}, {4, 0, 4 * minBackoff},
		{8, 0, 640 * time.Millisecond}, {9, 0, maxBackoff}, {1000, 0, maxBackoff},
		{1, 2 * time.Second, 2 * time.Second}, {3, 5 * time.Millisecond, 2 * minBackoff},
	} {
		if got := failureBackoff(c.streak, c.retryAfter); got != c.want {
			t.Errorf("failureBackoff(%d, %v) = %v, want %v", c.streak, c.retryAfter, got, c.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"2", 2 * time.Second}, {" 0.5 ", 500 * time.Millisecond}, {"0", 0}, {"-3", 0}, {"soon", 0},
		{"86400", maxRetryAfter}, {"NaN", 0},
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Add(time.Hour).Format(http.TimeFormat), maxRetryAfter},
	} {
		if got := parseRetryAfter(c.v, now); got != c.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestClosedLoopBacksOff: a closed loop against a server that fails every
// request at once sends a bounded number of them (each user waits,
// doubling, from its second failure in a row), and one that answers 429
// with Retry-After gets no request from a user before that wait is over.
// The bounds are upper bounds on counts: a slow machine sends fewer.
func TestClosedLoopBacksOff(t *testing.T) {
	t.Run("500 at once", func(t *testing.T) {
		var served atomic.Int64
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			http.Error(w, "down", http.StatusInternalServerError)
		}))
		defer ts.Close()
		res := run(t, Config{BaseURL: ts.URL, Concurrency: 2, Duration: 2 * time.Second}, promptSource(2))
		// Per user in 2 s: no wait after the first failure, then 10, 20,
		// ..., 640 ms (1.27 s in all), then 1 s: at most 9 requests
		// (without the waits, thousands).
		if n := len(res.Records); n > 2*10 || n < 2 {
			t.Errorf("%d requests in 2 s at concurrency 2, want 2 to 20", n)
		}
		if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "waited") {
			t.Errorf("notes %q, want one on the waits", res.Notes)
		}
		t.Logf("%d requests, %d served; notes %q", len(res.Records), served.Load(), res.Notes)
	})
	t.Run("429 Retry-After", func(t *testing.T) {
		hs := hostile.New(func(int64) hostile.Fault { return hostile.Status429 }) // Retry-After: 1
		ts := httptest.NewServer(hs)
		defer ts.Close()
		res := run(t, Config{BaseURL: ts.URL, Concurrency: 2, Duration: 2500 * time.Millisecond}, promptSource(2))
		// Each user waits 1 s after each 429: at most 3 requests in 2.5 s.
		if n := len(res.Records); n > 2*3 || n < 2 {
			t.Errorf("%d requests in 2.5 s at concurrency 2 with Retry-After 1, want 2 to 6", n)
		}
		for _, r := range res.Records {
			if r.Error != record.ErrRejected {
				t.Errorf("request %d: %s, want rejected", r.ID, r.Error)
			}
		}
		if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "Retry-After") {
			t.Errorf("notes %q, want one on the Retry-After waits", res.Notes)
		}
	})
}

// TestTargetGoneMidRun: a target that answers, then goes away (its
// listener closed, nothing listening), stops the run once every request
// has failed to connect for Config.StopIfUnreachable, long before the
// run's duration, with few records past the death (backoff).
func TestTargetGoneMidRun(t *testing.T) {
	var answered atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: " + string(contentChunk) + "\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
	}))
	addr := ts.Listener.Addr().String()
	src := promptSource(2)
	killed := make(chan struct{})
	var once atomic.Bool
	kill := func(i int64) Request {
		if i == 20 && once.CompareAndSwap(false, true) {
			ts.Close() // every connection closed, refused from now on
			close(killed)
		}
		return src(i)
	}
	res := run(t, Config{BaseURL: "http://" + addr, Concurrency: 4, Duration: 20 * time.Second, StopIfUnreachable: time.Second,
		RequestTimeout: 10 * time.Second}, kill)
	<-killed
	if res.StoppedBy != StopTargetGone {
		kinds := map[string]int{}
		for _, r := range res.Records {
			kinds[string(r.Error)+": "+r.ErrorMessage]++
		}
		t.Fatalf("stopped by %q, want %q; notes %q; records %v", res.StoppedBy, StopTargetGone, res.Notes, kinds)
	}
	connect := 0
	for _, r := range res.Records {
		if r.Error == record.ErrConnect {
			connect++
		}
	}
	// Per user, the failures of a stretch a little over 1 s: 0, 10, 20,
	// ..., 640 ms of waits, then 1 s: at most 10.
	if connect == 0 || connect > 4*10 {
		t.Errorf("%d connect failures after the target went away, want 1 to 40", connect)
	}
	found := false
	for _, n := range res.Notes {
		found = found || strings.Contains(n, "the target went away")
	}
	if !found {
		t.Errorf("notes %q, want one saying the target went away", res.Notes)
	}
	t.Logf("%d records (%d connect failures), elapsed %v; notes %q", len(res.Records), connect, res.Elapsed, res.Notes)
}
