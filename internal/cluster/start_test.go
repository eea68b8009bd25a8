package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/store"
)

// The report says how far apart the shards started, and warns only past
// 5 ms plus the clocks' uncertainty.
func TestStartNotes(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(ms ...float64) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, base.Add(time.Duration(m*1e6)))
		}
		return append(out, time.Time{}) // not known: left out
	}
	if got := Spread(at(0, 3.5, 1)); got != 3500*time.Microsecond {
		t.Errorf("spread %v, want 3.5 ms", got)
	}
	for _, c := range []struct {
		zero, began, unc time.Duration
		warn             string
	}{
		{0, 3 * time.Millisecond, 100 * time.Microsecond, ""},
		{0, 7 * time.Millisecond, 100 * time.Microsecond, "processes began 7.000 ms apart"},
		{0, 7 * time.Millisecond, 3 * time.Millisecond, ""}, // within 5 ms plus the uncertainty
		{6 * time.Millisecond, 0, 0, "schedules start 6.000 ms apart"},
	} {
		notes := StartNotes(c.zero, c.began, c.unc)
		text := strings.Join(notes, "\n")
		if !strings.Contains(notes[0], "within") {
			t.Errorf("%+v: first note %q", c, notes[0])
		}
		if c.warn == "" && strings.Contains(text, "warning") || c.warn != "" && !strings.Contains(text, "warning: the shards' "+strings.SplitN(c.warn, " ", 2)[0]) ||
			!strings.Contains(text, c.warn) {
			t.Errorf("%+v: notes %q; want warning %q", c, notes, c.warn)
		}
	}
}

// A sweep's start agreement is its worst step's; a part rerun off the
// common start is left out.
func TestStepSpreads(t *testing.T) {
	at := func(ms float64) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms * 1e6)) }
	parts := []store.StepPart{
		{Step: 0, Shard: 0, Zero: at(0), Began: at(0.5)},
		{Step: 0, Shard: 1, Zero: at(0), Began: at(2)},
		{Step: 1, Shard: 0, Zero: at(10), Began: at(10.1)},
		{Step: 1, Shard: 1, Zero: at(10), Began: at(10.2)},
		{Step: 1, Shard: 2, Began: at(900)}, // a restarted shard's rerun
	}
	if z, b := StepSpreads(parts); z != 0 || b != 1500*time.Microsecond {
		t.Errorf("spreads %v %v, want 0 and 1.5 ms (step 1's)", z, b)
	}
}

// WaitUntil returns the time given, with a monotonic reading, not before it.
func TestWaitUntil(t *testing.T) {
	at := time.Unix(0, time.Now().Add(20*time.Millisecond).UnixNano()) // as read from a database: no monotonic reading
	origin, err := WaitUntil(context.Background(), at)
	if err != nil || !origin.Equal(at) || time.Now().Before(at) {
		t.Fatalf("origin %v (%v), want %v and now past it", origin, err, at)
	}
	if origin.String() == at.String() {
		t.Error("the origin has no monotonic reading")
	}
}
