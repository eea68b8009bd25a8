//go:build linux

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelStampsSupported: this build can ask the kernel for receive
// timestamps.
const kernelStampsSupported = true

// stampConn is a TCP connection with SO_TIMESTAMPNS on: every Read is a
// recvmsg whose control message carries the kernel's receive time of the
// data (the time the latest segment it returns reached the socket, on
// CLOCK_REALTIME), and the connection keeps that of its latest Read.
//
// One goroutine reads a connection at a time (net/http's persistConn:
// readLoop for headers, the body reader's goroutine for the body, handed
// over by channels), but the stamp is read by the request's goroutine
// while readLoop may already be waiting on the next response, so it is
// atomic.
type stampConn struct {
	net.Conn
	tcpWitness
	recv func(fd uintptr) bool // c.recvmsg, bound once: no allocation per Read

	stampNS atomic.Int64 // kernel receive time of the latest Read's data (Unix ns); 0: none
	writeNS atomic.Int64 // when the latest Write started (ns since writeEpoch); 0: none

	// State of the Read in progress, shared with recv.
	msg  unix.Msghdr
	iov  unix.Iovec
	oob  [64]byte
	n    int
	errn syscall.Errno
}

// tcpWitness is what a TCP connection can tell, from the kernel, about a
// request that failed on it without a byte of answer (closeWitness):
//   - whether a write began after the peer's FIN had arrived (the socket
//     was no longer ESTABLISHED);
//   - whether, when the connection ended (its first failed Read, or
//     Close), the peer had acknowledged every byte written on it
//     (TCP_INFO's tcpi_bytes_acked): the peer's FIN, and any RST, carries
//     the acknowledgment of all it received, so bytes not acknowledged
//     never reached the server before it closed;
//   - whether it ended with a reset rather than a FIN: Linux (and other
//     kernels, RFC 2525) reset a connection closed with received data
//     unread, where a server that had read our request whole would close
//     with a FIN.
type tcpWitness struct {
	rc        syscall.RawConn
	written   atomic.Int64 // bytes the kernel took from Write
	lateWrite atomic.Bool  // a Write began after the peer's FIN had arrived
	wrote     atomic.Bool  // a Write has been made: later ones may follow the server's close
	// At the connection's end: ended is set once endAcked (bytes of
	// ours acknowledged; -1: TCP_INFO could not say), endWritten and
	// endReset are written.
	endOnce    sync.Once
	ended      atomic.Bool
	endAcked   int64
	endWritten int64
	endReset   bool
}

// ackWitnessOff turns the acknowledgment and reset checks off (tests of
// the learning that replaces them where the kernel cannot say).
var ackWitnessOff atomic.Bool

// beforeWrite runs before each Write.
func (w *tcpWitness) beforeWrite() {
	// The first write of a connection cannot follow a close the server
	// made after a response: only later ones pay for the check.
	if w.wrote.Swap(true) && !w.lateWrite.Load() && w.peerClosed() {
		w.lateWrite.Store(true)
	}
}

// atEnd notes what the kernel says when the connection ends: err is the
// failed Read's error (nil: Close).
func (w *tcpWitness) atEnd(err error) {
	w.endOnce.Do(func() {
		w.endAcked = -1
		w.endWritten = w.written.Load()
		w.endReset = errors.Is(err, syscall.ECONNRESET)
		if !ackWitnessOff.Load() {
			_ = w.rc.Control(func(fd uintptr) {
				info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
				// bytes_acked counts the SYN (1 once connected); 0 is a
				// kernel without the field (before 4.1).
				if err == nil && info.Bytes_acked > 0 {
					w.endAcked = int64(info.Bytes_acked) - 1
				}
			})
		}
		w.ended.Store(true)
	})
}

// peerClosed reports whether the kernel has the peer's FIN: the socket
// has left ESTABLISHED (CLOSE_WAIT, or closing on both sides).
func (w *tcpWitness) peerClosed() bool {
	closed := false
	_ = w.rc.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		closed = err == nil && info.State != unix.BPF_TCP_ESTABLISHED
	})
	return closed
}

// wroteAfterPeerClose implements closeWitness.
func (w *tcpWitness) wroteAfterPeerClose() bool { return w.lateWrite.Load() }

// peerMissed implements closeWitness.
func (w *tcpWitness) peerMissed() (missed bool, why string, known bool) {
	if !w.ended.Load() || w.endAcked < 0 {
		return false, "", false
	}
	switch {
	case w.endAcked < w.endWritten:
		return true, fmt.Sprintf("the server acknowledged %d of the %d bytes written on the connection when it closed", w.endAcked, w.endWritten), true
	case w.endReset:
		return true, "the server reset the connection with the request unread (a close with unread data is a reset; a server that read the request closes with a FIN)", true
	}
	return false, "", true
}

// witnessConn is a TCP connection without kernel stamps that still
// witnesses its end (tcpWitness).
type witnessConn struct {
	net.Conn
	tcpWitness
}

func (c *witnessConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.atEnd(err)
	}
	return n, err
}

func (c *witnessConn) Write(p []byte) (int, error) {
	c.beforeWrite()
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

func (c *witnessConn) Close() error {
	c.atEnd(nil)
	return c.Conn.Close()
}

// dialWitnessed dials like d and wraps TCP connections in a witnessConn.
func dialWitnessed(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			if rc, err := tc.SyscallConn(); err == nil {
				return &witnessConn{Conn: conn, tcpWitness: tcpWitness{rc: rc}}, nil
			}
		}
		return conn, nil
	}
}

// dialStamped dials like d and turns kernel receive timestamps on; where
// the option cannot be set it returns the plain connection (user-space
// stamps then).
func dialStamped(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if c := newStampConn(conn); c != nil {
			return c, nil
		}
		return conn, nil
	}
}

// newStampConn wraps a TCP connection, or returns nil when it is not one
// or the kernel refuses the option.
func newStampConn(conn net.Conn) *stampConn {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil
	}
	c := &stampConn{Conn: conn, tcpWitness: tcpWitness{rc: rc}}
	c.recv = c.recvmsg
	c.msg.Iov = &c.iov
	c.msg.SetIovlen(1)
	return c
}

// recvmsg is one non-blocking recvmsg into the buffer set up by Read. It
// returns false on EAGAIN, so that the runtime poller waits for the socket
// to become readable and calls it again; every other outcome is final.
func (c *stampConn) recvmsg(fd uintptr) bool {
	for {
		c.msg.Control = &c.oob[0]
		c.msg.SetControllen(len(c.oob))
		c.msg.Flags = 0
		n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
		switch e {
		case 0:
			c.n, c.errn = int(n), 0
			raceAcquireIO(fd)
			return true
		case unix.EINTR:
			continue // data may be waiting: returning false could sleep past it
		case unix.EAGAIN:
			return false
		default:
			c.n, c.errn = 0, e
			return true
		}
	}
}

// Read reads like net.Conn's Read and records the kernel receive time of
// what it returns. A Read whose data carries no timestamp clears the
// stamp, so the caller falls back to its own clock rather than reuse an
// older one.
func (c *stampConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.iov.Base = &p[0]
	c.iov.SetLen(len(p))
	err := c.rc.Read(c.recv)
	c.iov.Base = nil // do not keep the caller's buffer alive
	if err != nil {
		c.atEnd(err)
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if c.errn != 0 {
		c.atEnd(c.errn)
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("recvmsg", c.errn)}
	}
	if c.n == 0 {
		c.atEnd(io.EOF)
		return 0, io.EOF
	}
	c.stampNS.Store(parseStamp(c.oob[:c.msg.Controllen]))
	return c.n, nil
}

// parseStamp returns the SCM_TIMESTAMPNS time in a control buffer as Unix
// nanoseconds, or 0 when there is none.
func parseStamp(b []byte) int64 {
	for len(b) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		if uint64(h.Len) < unix.SizeofCmsghdr || uint64(h.Len) > uint64(len(b)) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS &&
			uint64(h.Len) >= uint64(unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{})))) {
			ts := (*unix.Timespec)(unsafe.Pointer(&b[unix.CmsgLen(0)]))
			return ts.Nano()
		}
		next := unix.CmsgSpace(int(h.Len) - unix.CmsgLen(0))
		if next > len(b) {
			return 0
		}
		b = b[next:]
	}
	return 0
}

// Write stamps the moment just before the bytes go to the kernel: a
// request's send time is the start of its last write, so scheduling delay
// of net/http's writer goroutine after the write does not shorten TTFT.
func (c *stampConn) Write(p []byte) (int, error) {
	c.writeNS.Store(int64(time.Since(writeEpoch)))
	c.beforeWrite()
	if trace.IsEnabled() {
		trace.Logf(context.Background(), "knee.write", "%d bytes", len(p))
	}
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// Close notes the connection's end (tcpWitness) before closing it.
func (c *stampConn) Close() error {
	c.atEnd(nil)
	return c.Conn.Close()
}

// lastWriteStart implements writeStamper.
func (c *stampConn) lastWriteStart() int64 { return c.writeNS.Load() }

// kernelStamp implements kernelStamper.
func (c *stampConn) kernelStamp() int64 { return c.stampNS.Load() }

// holdKernelStamps makes sure the kernel stamps packets from the first
// byte of the run: the first socket in the system to ask for timestamps
// turns them on through deferred work, and packets that arrive before it
// has run carry none (their reads fall back to user space). It opens a
// loopback UDP socket with the option and waits until a datagram to
// itself comes back stamped — up to stampWait: on a starved machine the
// deferred work waited more than half a second (a CI run with a test
// suite beside it saw the first 98 of 1,000 streams unstamped) — and
// keeps that socket open for the life of the process, the kernel stamping
// while any socket asks, so that later runs in the process start stamped
// without waiting again.
func holdKernelStamps() { stampHold.Do(func() { enableKernelStamps(stampWait) }) }

var stampHold sync.Once

// stampWait bounds holdKernelStamps' wait for the kernel to start
// stamping.
const stampWait = 3 * time.Second

// enableKernelStamps opens the loopback socket that asks for stamps and
// waits, up to wait, until a datagram to itself comes back stamped. The
// socket is never closed (it is what keeps the kernel stamping), whether
// or not the stamp came; one that cannot be set up is closed.
func enableKernelStamps(wait time.Duration) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) != nil ||
		unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}) != nil {
		unix.Close(fd)
		return
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return
	}
	var buf [1]byte
	var oob [64]byte
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if unix.Sendto(fd, buf[:], 0, self) != nil {
			return
		}
		for range 10 {
			_, oobn, _, _, err := unix.Recvmsg(fd, buf[:], oob[:], 0)
			if err == nil {
				if parseStamp(oob[:oobn]) != 0 {
					return
				}
				break
			}
			if err != unix.EAGAIN && err != unix.EINTR {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}

}
