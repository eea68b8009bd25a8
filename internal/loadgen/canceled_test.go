package loadgen

import (
	"context"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// TestCanceledAfterOversaturationStop: a request the hard stop cuts off
// after an over-saturation stop leaves the statistics (knee cut it off for
// a load it judged beyond the server) and is counted apart, as one cut off
// by Ctrl-C is; one cut off at the end of an ordinary run stays an error.
func TestCanceledAfterOversaturationStop(t *testing.T) {
	for _, c := range []struct {
		name        string
		stop        string
		interrupt   bool
		excluded    bool
		atStop, int int64
	}{
		{"over-saturation stop", StopOversaturated, false, true, 1, 0},
		{"interrupt", StopInterrupted, true, true, 0, 1},
		{"duration ran out", StopDuration, false, false, 0, 0},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		if c.interrupt {
			cancel()
		}
		r := &Run{parent: ctx, stopIssue: func() {}}
		r.stopFor(c.stop)
		rec := &record.Request{}
		r.canceled(rec)
		if rec.Error != record.ErrCanceled || rec.Warmup != c.excluded || r.canceledAtStop.Load() != c.atStop || r.interrupted.Load() != c.int {
			t.Errorf("%s: error %q, excluded %v, at stop %d, interrupted %d; want canceled, %v, %d, %d",
				c.name, rec.Error, rec.Warmup, r.canceledAtStop.Load(), r.interrupted.Load(), c.excluded, c.atStop, c.int)
		}
		cancel()
	}
}
