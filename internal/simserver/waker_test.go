package simserver

import (
	"testing"
	"time"
)

// The pacer's waker returns after a timed sleep, and a kick ends an
// untimed sleep, whether it comes before or during it. (Lateness is the
// pacing benchmark's business, not a unit test's.)
func TestWaker(t *testing.T) {
	w, err := newWaker()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	done := make(chan struct{})
	go func() {
		t0 := time.Now()
		w.sleep(2 * time.Millisecond)
		if el := time.Since(t0); el < time.Millisecond {
			t.Errorf("a first 2 ms sleep returned after %v", el)
		}
		w.kick()
		w.sleep(-1) // kicked before: returns at once
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("sleep did not return")
	}
	done = make(chan struct{})
	go func() { w.sleep(-1); close(done) }()
	time.Sleep(5 * time.Millisecond)
	w.kick()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a kick did not end an untimed sleep")
	}
}
