package cli

import (
	"runtime"
	"syscall"
	"time"
)

// processCPU is the user+system CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func numCPU() int { return runtime.NumCPU() }
