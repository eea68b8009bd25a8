package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// lowerSize sets the run-size bounds for one test.
func lowerSize(t *testing.T, requests int64, inFlight int) {
	oldR, oldF := MaxRequests, MaxInFlight
	MaxRequests, MaxInFlight = requests, inFlight
	t.Cleanup(func() { MaxRequests, MaxInFlight = oldR, oldF })
}

// An open loop offered far more than the engine completes stops issuing at
// MaxInFlight, lets every issued request finish, and says why; the queue,
// and the memory it takes, never passes the bound.
func TestOverloadedRunStopsAtTheInFlightBound(t *testing.T) {
	lowerSize(t, 1_000_000, 400)
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	n := 0
	res, err := Run(context.Background(), Config{Engine: ecfg, Gen: fixed{512, 128}, Arrivals: poisson(t, 1000, 4), Duration: 20 * time.Second},
		func(*record.Request) { n++ })
	if err != nil {
		t.Fatal(err)
	}
	if res.Capped != CappedInFlight || res.Issued != 400 || res.PeakInFlight > 400 {
		t.Errorf("capped %q, issued %d, peak in flight %d; want stopped at 400 in flight (20 s at 1000 req/s offers about 20000)", res.Capped, res.Issued, res.PeakInFlight)
	}
	if int64(n) != res.Issued || res.Completed+res.Rejected != res.Issued {
		t.Errorf("%d records, %d completed, %d rejected of %d issued: every issued request should finish", n, res.Completed, res.Rejected, res.Issued)
	}
	if note := cappedNote(res); !strings.Contains(note, "stopped issuing at 400 requests in flight") {
		t.Errorf("note %q", note)
	}
}

// A run given only a duration stops at MaxRequests, closed loop included
// (its request count cannot be known before it runs).
func TestLongRunStopsAtTheRequestBound(t *testing.T) {
	lowerSize(t, 300, 100_000)
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	res, err := Run(context.Background(), Config{Engine: ecfg, Gen: fixed{128, 16}, Concurrency: 8, Duration: 1000 * time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Capped != CappedRequests || res.Issued != 300 || res.Completed != 300 {
		t.Errorf("capped %q, issued %d, completed %d; want 300 and stopped by the request bound", res.Capped, res.Issued, res.Completed)
	}
	if note := cappedNote(res); !strings.Contains(note, "stopped issuing at 300 requests") {
		t.Errorf("note %q", note)
	}
}

// What is known before a run starts is refused before it starts, naming
// the flags.
func TestCheckSize(t *testing.T) {
	lowerSize(t, 5_000_000, 100_000)
	for _, c := range []struct {
		requests int64
		duration time.Duration
		rate     float64
		want     string
	}{
		{10_000_000, 0, 1000, "--requests 10000000: a simulation issues at most 5000000"},
		{0, 1_000_000 * time.Hour, 5, "--rate 5 over --duration 1000000h0m0s is about 1.8e+10 requests"},
		{5_000_000, 0, 0, ""},
		{0, 24 * time.Hour, 50, ""},         // 4.32 M
		{100, 1_000_000 * time.Hour, 5, ""}, // --requests bounds it
		{0, 1_000_000 * time.Hour, 0, ""},   // closed loop: the run's bound stops it
	} {
		err := CheckSize(c.requests, c.duration, c.rate)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckSize(%d, %v, %g) = %v, want %q", c.requests, c.duration, c.rate, err, c.want)
		}
	}
}
