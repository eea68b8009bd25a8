package loadgen

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestTrackWallClock steps the wall clock under a run and checks that the
// kernel-stamp origin follows it and the step is counted; jitter far below
// a millisecond is not a step.
func TestTrackWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var step atomic.Int64
		r := &Run{start: time.Now(), done: make(chan struct{})}
		r.wallNow = func() int64 { return time.Now().UnixNano() + step.Load() }
		origin := wallAt(r.start, r.wallNow)
		r.wall0.Store(origin)
		go r.trackWallClock()

		step.Store(200 * int64(time.Microsecond)) // jitter-sized: followed, not counted
		time.Sleep(120 * time.Millisecond)
		synctest.Wait()
		if got := r.wall0.Load() - origin; got != step.Load() || r.clockSteps.Load() != 0 {
			t.Fatalf("after a 200 µs shift: origin moved %v, %d steps; want 200µs, 0", time.Duration(got), r.clockSteps.Load())
		}
		step.Store(-3 * int64(time.Second)) // the clock set back
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		if got := r.wall0.Load() - origin; got != step.Load() || r.clockSteps.Load() != 1 {
			t.Fatalf("after a -3 s step: origin moved %v, %d steps; want -3s, 1", time.Duration(got), r.clockSteps.Load())
		}
		close(r.done)
	})
}
