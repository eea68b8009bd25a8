//go:build unix

package store

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists (signal 0
// checks without sending anything; EPERM means it exists but is not ours).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// addressSpaceLimited reports an address-space limit (ulimit -v) under
// 8 GiB. Each OS thread of a cgo build reserves its C stack (8 MiB) there,
// and the Go runtime's own reservations come near 1 GB: under `ulimit -v
// 1000000` one more thread made pthread_create fail at start in 1 run of 5.
func addressSpaceLimited() bool {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		return false
	}
	return lim.Cur < 8<<30 // RLIM_INFINITY is the largest value
}
