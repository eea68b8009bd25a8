//go:build unix

package cpuclock

import (
	"syscall"
	"time"
)

// Process is the user+system CPU time of this process so far (0 if unknown).
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
