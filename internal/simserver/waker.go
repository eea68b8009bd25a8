package simserver

import "time"

// waker is how the pacer waits for a step's end (or for work when idle):
// sleep returns after d, or earlier when kick is called; a kick that comes
// before sleep makes the next sleep return at once.
type waker interface {
	sleep(d time.Duration)
	kick()
	close()
}

// timerWaker uses Go's timers: portable, but see timerfdWaker.
type timerWaker struct {
	t  *time.Timer
	ch chan struct{}
}

func newTimerWaker() *timerWaker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerWaker{t: t, ch: make(chan struct{}, 1)}
}

func (w *timerWaker) sleep(d time.Duration) {
	if d < 0 {
		<-w.ch
		return
	}
	w.t.Reset(d)
	select {
	case <-w.t.C:
	case <-w.ch:
		w.t.Stop()
	}
}

func (w *timerWaker) kick() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w *timerWaker) close() {}
