//go:build unix

package loadgen

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time this process has used (all
// threads), from getrusage(RUSAGE_SELF).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
