//go:build linux

package simserver

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// hybridWaker wakes the pacer by whichever comes first of a Go timer and a
// timerfd. Neither is enough alone:
//   - On an idle process Go's timers fire late by up to a millisecond: the
//     netpoller sleeps in epoll_wait with a timeout in whole milliseconds. A
//     timerfd becomes readable at its hrtimer's expiry and wakes epoll_wait
//     at once.
//   - On a busy process (both Ps running client goroutines) the netpoller
//     is consulted only when a P runs out of work, or by sysmon every 10 ms,
//     so a ready timerfd can wait that long; Go's timers are checked at
//     every scheduling round and make the pacer the next goroutine to run.
type hybridWaker struct {
	t  *time.Timer
	ch chan struct{} // kicks and timerfd expiries
	fd int
	f  *os.File
}

func newWaker() (waker, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerWaker(), nil // Go timers only
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	w := &hybridWaker{t: t, ch: make(chan struct{}, 1), fd: fd, f: os.NewFile(uintptr(fd), "simserver-timerfd")}
	go w.readTimerfd()
	return w, nil
}

func (w *hybridWaker) readTimerfd() {
	var buf [8]byte
	for {
		if _, err := w.f.Read(buf[:]); err != nil {
			return // closed
		}
		w.kick()
	}
}

func (w *hybridWaker) arm(d time.Duration) {
	var spec unix.ItimerSpec
	if d >= 0 {
		spec.Value = unix.NsecToTimespec(int64(max(d, 1))) // zero would disarm
	}
	unix.TimerfdSettime(w.fd, 0, &spec, nil)
}

// sleep blocks for d (d < 0: until kicked) or until kick is called. A
// timerfd expiry left over from an earlier sleep may end it early; the
// pacer checks the clock after every wake.
func (w *hybridWaker) sleep(d time.Duration) {
	if d < 0 {
		<-w.ch
		return
	}
	w.arm(d)
	w.t.Reset(d)
	select {
	case <-w.t.C:
	case <-w.ch:
		w.t.Stop()
	}
}

func (w *hybridWaker) kick() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w *hybridWaker) close() { w.f.Close() }
