package loadgen

import (
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestTrackWallClock runs the wall clock at its own pace and steps it
// under a run: the map from kernel stamps to run offsets follows a clock
// 0.5% fast (5 ms a second, as on a VM seen here) to within a
// microsecond, where one offset would be 5 ms off after a second; a
// shift of 200 µs is followed and not counted; a step of -3 s is counted
// and followed.
func TestTrackWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var step atomic.Int64
		r := &Run{start: time.Now(), done: make(chan struct{})}
		const fastPPM = 5000
		r.wallNow = func() int64 {
			el := time.Since(r.start)
			return r.start.UnixNano() + int64(el) + int64(el)*fastPPM/1_000_000 + step.Load()
		}
		// offErr is how far a stamp taken now lands from now on the run clock.
		offErr := func() time.Duration {
			at, ok := r.clock.toMono(r.wallNow())
			if !ok {
				t.Fatal("no wall-clock fix")
			}
			return at - time.Since(r.start)
		}
		r.clock.advance(wallSample(r.start, r.wallNow))
		go r.trackWallClock()

		time.Sleep(time.Second + 20*time.Millisecond)
		synctest.Wait()
		if e := offErr(); e > time.Microsecond || e < -time.Microsecond || r.clockSteps.Load() != 0 {
			t.Fatalf("a clock 0.5%% fast, after 1 s: stamps %v off, %d steps; want within 1 µs, 0", e, r.clockSteps.Load())
		}
		step.Store(200 * int64(time.Microsecond)) // jitter-sized: followed, not counted
		time.Sleep(120 * time.Millisecond)
		synctest.Wait()
		if e := offErr(); e > time.Microsecond || e < -time.Microsecond || r.clockSteps.Load() != 0 {
			t.Fatalf("after a 200 µs shift: stamps %v off, %d steps; want within 1 µs, 0", e, r.clockSteps.Load())
		}
		step.Store(-3 * int64(time.Second)) // the clock set back
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		if e := offErr(); e > 100*time.Microsecond || e < -100*time.Microsecond || r.clockSteps.Load() != 1 {
			t.Fatalf("after a -3 s step: stamps %v off, %d steps; want followed, 1", e, r.clockSteps.Load())
		}
		close(r.done)
	})
}

// fakeStamper is a connection whose latest read's data arrived at a fixed
// wall-clock time.
type fakeStamper struct{ ns int64 }

func (f fakeStamper) kernelStamp() int64 { return f.ns }

// A read is dated by its kernel stamp through the run's wall-clock map:
// data stamped 300 µs before the read lands 300 µs before it; a stamp after
// the read, or one with no map yet, falls back to the read's own time.
func TestStampReaderUsesTheWallClockMap(t *testing.T) {
	start := time.Now()
	var clock wallMap
	read := func(stamp int64) *stampReader {
		t.Helper()
		s := &stampReader{body: strings.NewReader("data: x\n\n"), start: start, clock: &clock, conn: fakeStamper{stamp}}
		if _, err := s.Read(make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := read(time.Now().UnixNano()); s.kernelReads != 0 || s.userReads != 1 {
		t.Errorf("no map yet: %d kernel reads, want the read's own time", s.kernelReads)
	}
	clock.advance(wallSample(start, wallNow))
	before := time.Since(start)
	s := read(time.Now().Add(-300 * time.Microsecond).UnixNano())
	after := time.Since(start)
	if s.kernelReads != 1 || s.at < before-350*time.Microsecond || s.at > after-250*time.Microsecond {
		t.Errorf("read between %v and %v dated %v (%d kernel reads): want 300 µs before it", before, after, s.at, s.kernelReads)
	}
	if s := read(time.Now().Add(time.Second).UnixNano()); s.kernelReads != 0 {
		t.Errorf("a stamp a second after the read was used")
	}
}
