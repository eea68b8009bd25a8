package wake

import (
	"testing"
	"time"
)

// A Waker returns after a timed sleep, and a kick ends an
// untimed sleep, whether it comes before or during it. (Lateness is the
// pacing benchmark's business, not a unit test's.)
func TestWaker(t *testing.T) {
	w := New()
	defer w.Close()
	done := make(chan struct{})
	go func() {
		t0 := time.Now()
		w.Sleep(2 * time.Millisecond)
		if el := time.Since(t0); el < time.Millisecond {
			t.Errorf("a first 2 ms sleep returned after %v", el)
		}
		w.Kick()
		w.Sleep(-1) // kicked before: returns at once
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("sleep did not return")
	}
	done = make(chan struct{})
	go func() { w.Sleep(-1); close(done) }()
	time.Sleep(5 * time.Millisecond)
	w.Kick()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a kick did not end an untimed sleep")
	}
}

func TestSpin(t *testing.T) {
	w := New()
	defer w.Close()
	t0 := time.Now()
	w.Spin(3 * time.Millisecond)
	if el := time.Since(t0); el < 3*time.Millisecond {
		t.Errorf("a 3 ms spin returned after %v", el)
	}
	w.Kick()
	t0 = time.Now()
	w.Spin(time.Hour) // kicked before: returns at once
	if el := time.Since(t0); el > time.Minute {
		t.Errorf("a kicked spin ran %v", el)
	}
}

func TestSpinWindow(t *testing.T) {
	for _, c := range []struct{ gap, want time.Duration }{
		{time.Second, MaxSpin},                        // rare arrivals: the whole window
		{20 * time.Millisecond, 2 * time.Millisecond}, // a tenth of the gap: at most 10% of a core
		{0, 0},
		{-time.Millisecond, 0}, // unsorted arrivals
	} {
		if got := SpinWindow(c.gap); got != c.want {
			t.Errorf("SpinWindow(%v) = %v, want %v", c.gap, got, c.want)
		}
	}
}
