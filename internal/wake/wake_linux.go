//go:build linux

package wake

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// hrtimer is a timerfd whose expiries call fire (from its own goroutine);
// the zero value (no timerfd could be made) leaves Go's timers alone.
type hrtimer struct {
	fd int
	f  *os.File
}

func openHRTimer(fire func()) hrtimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return hrtimer{}
	}
	h := hrtimer{fd: fd, f: os.NewFile(uintptr(fd), "wake-timerfd")}
	go func() {
		var buf [8]byte
		for {
			if _, err := h.f.Read(buf[:]); err != nil {
				return // closed
			}
			fire()
		}
	}()
	return h
}

func (h hrtimer) arm(d time.Duration) {
	if h.f == nil {
		return
	}
	var spec unix.ItimerSpec
	spec.Value = unix.NsecToTimespec(int64(max(d, 1))) // zero would disarm
	unix.TimerfdSettime(h.fd, 0, &spec, nil)
}

func (h hrtimer) close() {
	if h.f != nil {
		h.f.Close()
	}
}
