//go:build linux

package simserver

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdWaker sleeps on a timerfd registered with Go's netpoller. Go's own
// timers fire late by up to a millisecond when the process is otherwise
// idle, because the netpoller blocks in epoll_wait with a timeout in whole
// milliseconds; a timerfd becomes readable at its hrtimer's expiry and wakes
// epoll_wait at once.
type timerfdWaker struct {
	mu     sync.Mutex
	fd     int
	f      *os.File
	kicked bool
	buf    [8]byte
}

func newWaker() (waker, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerWaker(), nil // fall back to Go timers
	}
	return &timerfdWaker{fd: fd, f: os.NewFile(uintptr(fd), "simserver-timerfd")}, nil
}

func (w *timerfdWaker) set(d time.Duration) {
	var spec unix.ItimerSpec
	if d >= 0 {
		if d < 1 {
			d = 1 // zero would disarm
		}
		spec.Value = unix.NsecToTimespec(int64(d))
	}
	unix.TimerfdSettime(w.fd, 0, &spec, nil)
}

// sleep blocks for d (d < 0: until kicked) or until kick is called.
func (w *timerfdWaker) sleep(d time.Duration) {
	w.mu.Lock()
	if w.kicked {
		w.kicked = false
		w.mu.Unlock()
		return
	}
	w.set(d)
	w.mu.Unlock()
	w.f.Read(w.buf[:])
	w.mu.Lock()
	w.kicked = false
	w.mu.Unlock()
}

func (w *timerfdWaker) kick() {
	w.mu.Lock()
	w.kicked = true
	w.set(1)
	w.mu.Unlock()
}

func (w *timerfdWaker) close() { w.f.Close() }
