//go:build linux

package simserver

import (
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelStamps reads with recvmsg(2) and SO_TIMESTAMPNS to learn when the
// kernel received the data.
type kernelStamps struct {
	raw syscall.RawConn
	oob []byte
}

func (k *kernelStamps) init(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return
	}
	k.raw, k.oob = raw, make([]byte, syscall.CmsgSpace(int(unsafe.Sizeof(syscall.Timespec{}))))
}

// pending reports whether bytes were already waiting on the socket (a
// request that arrived before the connection was accepted).
func (k *kernelStamps) pending() bool {
	if k.raw == nil {
		return false
	}
	n := 0
	k.raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return n > 0
}

func (k *kernelStamps) on() bool { return k.raw != nil }

// read reads into p and returns the server time the first byte arrived
// (0 when the kernel gave no timestamp).
func (k *kernelStamps) read(c *stampConn, p []byte) (int, int64, error) {
	var n, oobn int
	var rerr error
	err := k.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, k.oob, 0)
			if rerr != syscall.EINTR {
				break
			}
		}
		return rerr != syscall.EAGAIN
	})
	if err != nil { // a deadline or a closed connection
		return 0, 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if rerr != nil {
		return 0, 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: rerr}
	}
	if n == 0 {
		return 0, 0, io.EOF
	}
	var at int64
	if msgs, err := syscall.ParseSocketControlMessage(k.oob[:oobn]); err == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
				ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
				// The stamp is wall-clock time; carry it to server time
				// through the present, where both clocks are read together.
				now, wall := c.s.now(), time.Now().UnixNano()
				at = now - (wall - ts.Nano())
				if at > now {
					at = now
				}
			}
		}
	}
	return n, at, nil
}

// stampListenerSocket turns receive timestamps on for the listening socket,
// so the first request on a new connection, which may arrive before the
// connection is accepted, is stamped too (accepted sockets inherit it).
func stampListenerSocket(ln net.Listener) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return
	}
	if raw, err := tl.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) })
	}
}
