//go:build unix

package simserver

import (
	"errors"
	"net"
	"syscall"
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

// writeNow writes b with one write(2) that never waits for buffer space.
func writeNow(raw syscall.RawConn, b []byte) error {
	var n int
	var werr error
	err := raw.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), b)
			if werr != syscall.EINTR {
				return true // never park: a full buffer is the client's fault
			}
		}
	})
	switch {
	case err != nil:
		return err
	case werr == syscall.EAGAIN:
		return errClientTooSlow
	case werr != nil:
		return werr
	case n < len(b):
		return errClientTooSlow
	}
	return nil
}
