package runcheck

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/cpuclock"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/stats"
)

// A run that measured nothing, or mostly failures, says which and why;
// a run with errors at or under half its requests is a measurement.
func TestMeasurementFailure(t *testing.T) {
	cases := []struct {
		name   string
		sum    stats.Summary
		issued int
		warmup string
		want   []string // all in the message; none: ""
	}{
		{"warm-up took all", stats.Summary{}, 7, "30s", []string{"all 7 requests fell in the warm-up", "--warmup 30s"}},
		{"nothing sent", stats.Summary{}, 0, "", []string{"no request was sent in the run's window"}},
		{"all failed", stats.Summary{Requests: 4, ErrorRate: 1, ErrorKinds: map[string]int{"connect": 3, "http_5xx": 1}}, 4, "",
			[]string{"all 4 requests failed (connect: 3, http_5xx: 1)"}},
		{"mostly failed", stats.Summary{Requests: 10, Completed: 4, ErrorRate: 0.6, ErrorKinds: map[string]int{"http_5xx": 6}}, 10, "",
			[]string{"60% of the 10 measured requests failed (http_5xx: 6)", "mostly failures"}},
		{"half failed is a measurement", stats.Summary{Requests: 10, Completed: 5, ErrorRate: 0.5, ErrorKinds: map[string]int{"http_5xx": 5}}, 10, "", nil},
		{"fine", stats.Summary{Requests: 10, Completed: 10}, 10, "2s", nil},
	}
	for _, c := range cases {
		got := MeasurementFailure(c.sum, c.issued, c.warmup)
		if len(c.want) == 0 && got != "" {
			t.Errorf("%s: %q, want no failure", c.name, got)
		}
		if len(c.want) > 0 && got == "" {
			t.Errorf("%s: no failure, want %q", c.name, c.want)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
	}
}

func TestTimestampNote(t *testing.T) {
	for _, c := range []struct {
		res  loadgen.Result
		want string
	}{
		{loadgen.Result{KernelTimestamps: true, WallClockSteps: 2}, "stepped 2 time(s)"},
		{loadgen.Result{KernelTimestamps: true}, "knee's own scheduling delay is not in them"},
		{loadgen.Result{UserStampedStreams: 3}, "on 3 streams"},
		{loadgen.Result{}, "right after each socket read"},
	} {
		if got := TimestampNote(&c.res); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q lacks %q", c.res, got, c.want)
		}
	}
}

// The host's steal is named when it passes 2% of the machine's CPU time
// over the run, with the share; below that, or with no readings to
// compare (a counter that went back), nothing is said.
func TestStealWarning(t *testing.T) {
	at := func(steal, total uint64) cpuclock.MachineTimes {
		return cpuclock.MachineTimes{Steal: steal, Total: total, Busy: total / 2}
	}
	if w := StealWarning(at(100, 10_000), at(115, 11_000)); w != "" {
		t.Errorf("1.5%% steal: warned %q", w)
	}
	w := StealWarning(at(100, 10_000), at(145, 11_000))
	if !strings.Contains(w, "4.5% of this machine's CPU time") || !strings.Contains(w, "host") {
		t.Errorf("4.5%% steal: warned %q, want the share and the host named", w)
	}
	if w := StealWarning(at(100, 10_000), at(90, 10_000)); w != "" {
		t.Errorf("counters that did not advance: warned %q", w)
	}
}

// A client that sent late (lag p99 over 10 ms) or used every CPU is
// warned about; one that kept time is not.
func TestClientFloorWarnings(t *testing.T) {
	res := &loadgen.Result{Elapsed: time.Second}
	calm := &Meter{cpu: time.Millisecond, machErr: errNoReading}
	if w := ClientFloorWarnings(stats.Summary{Lag: stats.Dist{Count: 5, P99: 2}}, res, calm); len(w) != 0 {
		t.Errorf("a client on time: warned %q", w)
	}
	w := ClientFloorWarnings(stats.Summary{Lag: stats.Dist{Count: 5, P99: 25}}, res, calm)
	if len(w) != 1 || !strings.Contains(w[0], "client lag p99 is 25.0 ms") || strings.Contains(w[0], "open-loop") {
		t.Errorf("lag p99 25 ms, closed loop: warned %q, want it said without open-loop terms", w)
	} else if !strings.Contains(w[0], "after a slot freed") {
		t.Errorf("lag p99 25 ms, closed loop: warned %q, want what lag is in a closed loop", w)
	}
	open := &loadgen.Result{Elapsed: time.Second, OfferedRateRPS: 10}
	w = ClientFloorWarnings(stats.Summary{Lag: stats.Dist{Count: 5, P99: 25}}, open, calm)
	if len(w) != 1 || !strings.Contains(w[0], "behind its schedule") {
		t.Errorf("lag p99 25 ms, open loop: warned %q", w)
	}
	busy := &Meter{cpu: time.Duration(cpuclock.CPUs()) * time.Second, machErr: errNoReading}
	w = ClientFloorWarnings(stats.Summary{}, res, busy)
	if len(w) != 1 || !strings.Contains(w[0], "100% of all CPUs") {
		t.Errorf("every CPU busy: warned %q", w)
	}
}

var errNoReading = errors.New("no machine reading")
