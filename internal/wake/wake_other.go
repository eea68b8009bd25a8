//go:build !linux

package wake

import "time"

// hrtimer is absent off Linux: Go's timers alone.
type hrtimer struct{}

func openHRTimer(func()) hrtimer  { return hrtimer{} }
func (hrtimer) arm(time.Duration) {}
func (hrtimer) close()            {}
