//go:build unix

package simserver

import (
	"errors"
	"net"
	"syscall"
	"unsafe"
)

// errClientTooSlow ends a stream whose client has let the socket buffers
// fill: the writers never block on one client, so one stalled reader cannot
// delay the other streams of its shard.
var errClientTooSlow = errors.New("client not reading: socket buffer full")

// rawConnOf returns the TCP socket under a (possibly wrapped) connection.
func rawConnOf(c net.Conn) syscall.RawConn {
	for {
		switch cc := c.(type) {
		case *stampConn:
			c = cc.Conn
		case *replayConn:
			c = cc.Conn
		case *net.TCPConn:
			raw, err := cc.SyscallConn()
			if err != nil {
				return nil
			}
			return raw
		default:
			return nil
		}
	}
}

// nbWriter performs non-blocking writes; it keeps the callback handed to
// RawConn.Write so that a write allocates nothing.
type nbWriter struct {
	b   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// writeNow writes b with one write(2) that never waits for buffer space.
func (w *nbWriter) writeNow(raw syscall.RawConn, b []byte) error {
	if w.fn == nil {
		w.fn = w.write
	}
	w.b = b
	err := raw.Write(w.fn)
	w.b = nil
	switch {
	case err != nil:
		return err
	case w.err == syscall.EAGAIN:
		return errClientTooSlow
	case w.err != nil:
		return w.err
	case w.n < len(b):
		return errClientTooSlow
	}
	return nil
}

func (w *nbWriter) write(fd uintptr) bool {
	for {
		w.n, w.err = rawWrite(int(fd), w.b)
		if w.err != syscall.EINTR {
			return true // never park: a full buffer is the client's fault
		}
	}
}

// rawWrite is write(2) without the Go scheduler's syscall bookkeeping. The
// socket is non-blocking, so the call never waits; and a writer that keeps
// its P through the call cannot lose it to sysmon mid-write and then wait
// for one at the back of the run queue, behind every client goroutine its
// burst just woke. With syscall.Write that wait put pacing lag tails of
// 20-60 ms, and client reads late enough to merge chunks, at 1,000 streams.
func rawWrite(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	raceReleaseIO(fd)
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
