//go:build unix

package loadgen

import (
	"syscall"
	"testing"
)

func TestOpenFileLimitIsTheSoftLimit(t *testing.T) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Skip(err)
	}
	if got := OpenFileLimit(); got != l.Cur || got == 0 {
		t.Errorf("OpenFileLimit %d, want the soft limit %d", got, l.Cur)
	}
}
