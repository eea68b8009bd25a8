package cluster

import (
	"context"
	"fmt"
	"time"
)

// ClockOffset is a shard's clock against the database server's, measured
// as NTP does: ask the server's time between two local readings, take the
// server's reading to be at the midpoint, and keep the round trip that was
// shortest (the one least delayed by queues, so the midpoint guess errs
// least). The true offset lies within ±Uncertainty (half that round trip)
// of Offset, whatever the asymmetry of the two legs.
type ClockOffset struct {
	Offset      time.Duration // server clock − local clock
	Uncertainty time.Duration
	RoundTrip   time.Duration // the shortest
	Samples     int
}

// ToServer converts a local time to the server's timeline.
func (c ClockOffset) ToServer(local time.Time) time.Time { return local.Add(c.Offset) }

// ToLocal converts a server time to the local clock.
func (c ClockOffset) ToLocal(server time.Time) time.Time { return server.Add(-c.Offset) }

// MeasureOffset asks serverNow samples times. now is the local clock
// (time.Now, or a test's).
func MeasureOffset(ctx context.Context, samples int, now func() time.Time, serverNow func(context.Context) (time.Time, error)) (ClockOffset, error) {
	if samples < 1 {
		samples = 1
	}
	best := ClockOffset{RoundTrip: -1}
	for range samples {
		t0 := now()
		s, err := serverNow(ctx)
		if err != nil {
			return ClockOffset{}, fmt.Errorf("measuring the clock offset to the database: %w", err)
		}
		t1 := now()
		rtt := t1.Sub(t0)
		if best.RoundTrip < 0 || rtt < best.RoundTrip {
			best.RoundTrip = rtt
			best.Offset = s.Sub(t0.Add(rtt / 2))
			best.Uncertainty = rtt / 2
		}
		best.Samples++
	}
	return best, nil
}
