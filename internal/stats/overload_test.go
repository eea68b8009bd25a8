package stats

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Overload needs both signs: completions short of the offered rate, and
// in flight climbing through the run.
func TestOverloadWarning(t *testing.T) {
	climbing := make([]Second, 20)
	for i := range climbing {
		climbing[i] = Second{T: i, InFlight: 2 * i}
	}
	sum := Summary{OfferedRateRPS: 20, RequestThroughputRPS: 10, TimeSeries: climbing}
	if w := OverloadWarning(sum); !strings.Contains(w, "warning: overloaded: the offered 20 req/s is more than the server completes (10 req/s)") ||
		!strings.Contains(w, "to 38)") {
		t.Errorf("climbing queue: %q", w)
	}
	flat := make([]Second, 20)
	for i := range flat {
		flat[i] = Second{T: i, InFlight: 10}
	}
	for name, s := range map[string]Summary{
		"kept up":     {OfferedRateRPS: 20, RequestThroughputRPS: 19, TimeSeries: climbing},
		"flat queue":  {OfferedRateRPS: 20, RequestThroughputRPS: 10, TimeSeries: flat},
		"too short":   {OfferedRateRPS: 20, RequestThroughputRPS: 10, TimeSeries: climbing[:6]},
		"closed loop": {RequestThroughputRPS: 10, TimeSeries: climbing},
	} {
		if w := OverloadWarning(s); w != "" {
			t.Errorf("%s: warned %q", name, w)
		}
	}
}

func TestSessionNotes(t *testing.T) {
	ms := time.Millisecond
	req := func(s string, turn int, sent, ttft time.Duration) record.Request {
		return record.Request{Session: s, Turn: turn, Sent: sent, FirstToken: sent + ttft, Done: sent + ttft + ms, StreamEnd: sent + ttft + 2*ms, OutputTokens: 2}
	}
	recs := []record.Request{req("a", 1, 0, 100*ms), req("a", 2, time.Second, 20*ms), req("b", 1, 0, 120*ms), req("b", 2, 2*time.Second, 30*ms), {ID: 9}}
	notes := SessionNotes(recs)
	if len(notes) != 2 || !strings.Contains(notes[0], "2 conversations of up to 2 turns") ||
		!strings.Contains(notes[1], "first turns p50 110.0 ms (2), later turns p50 25.0 ms (2)") {
		t.Errorf("%q", notes)
	}
	if SessionNotes(recs[4:]) != nil {
		t.Error("notes without sessions")
	}
}
