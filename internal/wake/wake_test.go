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
