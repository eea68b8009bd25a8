//go:build unix

package loadgen

import "syscall"

// OpenFileLimit is the most files this process may open, each connection
// one (the Go runtime raises the soft limit to the hard one at start); 0
// when unknown.
func OpenFileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Cur
}
