// Package wake sleeps until a deadline without the millisecond of lateness
// Go's timers can have, for the two places where knee keeps wall-clock time
// to the sub-millisecond: the simulated server's pacer and the load
// generator's open-loop dispatcher.
//
// A Waker wakes on whichever comes first of a Go timer and (on Linux) a
// timerfd. Neither is enough alone:
//   - On an idle process Go's timers fire late by up to a millisecond: the
//     netpoller sleeps in epoll_wait with a timeout in whole milliseconds
//     (golang/go#44343). A timerfd becomes readable at its hrtimer's expiry
//     and wakes epoll_wait at once.
//   - On a busy process (every P running goroutines) the netpoller is
//     consulted only when a P runs out of work, or by sysmon every 10 ms, so
//     a ready timerfd can wait that long; Go's timers are checked at every
//     scheduling round.
//
// Neither is enough on a virtual machine either: a process idle for long
// enough that its vCPUs halt is woken by the host, which on the 2-core VM
// knee is built on, in a busy hour, delivered 1 in 100 wakes 3-6 ms late
// (spinning through the last 2 ms brought the worst of 143 to 1.1 ms); in
// a quiet one the worst of 48 was 0.4 ms either way. go run
// ./internal/wake/cmd/wakeprobe measures it. So a caller that must not be
// late also Spins through the last stretch: see SpinWindow.
package wake

import (
	"runtime"
	"time"
)

// Waker is one goroutine's sleep: Sleep returns after d, or earlier when
// Kick is called; a Kick that comes before Sleep makes the next Sleep return
// at once. A timerfd expiry left over from an earlier Sleep may end one
// early too, so callers check the clock after every wake. Sleep is for one
// goroutine at a time; Kick is safe from any.
type Waker struct {
	t  *time.Timer
	ch chan struct{} // kicks and timerfd expiries
	fd hrtimer
}

// New returns a Waker; Close it.
func New() *Waker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	w := &Waker{t: t, ch: make(chan struct{}, 1)}
	w.fd = openHRTimer(w.Kick)
	return w
}

// Sleep blocks for d (d < 0: until kicked) or until Kick is called.
func (w *Waker) Sleep(d time.Duration) {
	if d < 0 {
		<-w.ch
		return
	}
	w.fd.arm(d)
	w.t.Reset(d)
	select {
	case <-w.t.C:
	case <-w.ch:
		w.t.Stop()
	}
}

// Kick ends the current Sleep, or the next one.
func (w *Waker) Kick() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Close releases the timerfd.
func (w *Waker) Close() { w.fd.close() }

// MaxSpin is the longest final stretch of a sleep worth busy-waiting: it
// covers the host's late wakes of an idle VM (up to ~6 ms measured).
const MaxSpin = 5 * time.Millisecond

// SpinWindow is how much of a wait for a deadline gap after the previous
// one to busy-wait rather than sleep: MaxSpin at most and a tenth of gap,
// so a spinner never takes more than a tenth of one core however often it
// wakes.
func SpinWindow(gap time.Duration) time.Duration {
	return max(0, min(MaxSpin, gap/10))
}

// Spin busy-waits for d, or until Kick is called, yielding the processor
// at every turn so other goroutines still run. It is never late by more
// than a scheduling round, since nothing has to wake it. Not for a
// testing/synctest bubble, whose clock stands still while anything runs.
func (w *Waker) Spin(d time.Duration) {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		select {
		case <-w.ch:
			return
		default:
		}
		runtime.Gosched()
	}
}
