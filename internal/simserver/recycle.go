package simserver

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// recycleListener lets streams write straight to their connection: a
// streaming response hijacks its connection at the first token, writes the
// HTTP/1.1 chunked framing itself (one write(2) per token, no fmt or bufio
// copies in net/http's chunk writer), and when the response is complete
// hands the connection back through this listener, so net/http serves the
// client's next request on it as on any kept-alive connection.
type recycleListener struct {
	net.Listener
	recycled chan net.Conn
	accepted chan acceptResult
	done     chan struct{}
	once     sync.Once

	mu   sync.Mutex
	idle map[net.Conn]struct{} // handed back, waiting for the next request

	idleTimeout time.Duration // a handed-back connection waiting longer is closed (0: never)
}

// defaultIdleTimeout is Config.IdleTimeout's default.
const defaultIdleTimeout = 2 * time.Minute

type acceptResult struct {
	c   net.Conn
	err error
}

func newRecycleListener(ln net.Listener) *recycleListener {
	l := &recycleListener{Listener: ln, recycled: make(chan net.Conn, 1024), accepted: make(chan acceptResult), done: make(chan struct{})}
	go l.acceptLoop(ln)
	return l
}

// acceptLoop hands accepted connections to Accept. A temporary error
// (EMFILE, ENFILE, ECONNABORTED: descriptors run out under a flood of
// connections) is retried with a backoff from 5 ms doubling to maxAcceptBackoff, as
// net/http's Serve does, never handed over: the server must go on
// accepting once descriptors are free. Any other error ends the loop and
// goes to Accept's caller.
func (l *recycleListener) acceptLoop(ln net.Listener) {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil && isTemporary(err) {
			backoff = min(max(2*backoff, 5*time.Millisecond), maxAcceptBackoff)
			select {
			case <-time.After(backoff):
				continue
			case <-l.done:
				return
			}
		}
		backoff = 0
		select {
		case l.accepted <- acceptResult{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// maxAcceptBackoff caps the wait between accept retries: lower than
// net/http's 1 s so that the server answers again well within a second of
// descriptors coming free; a retry that fails again costs one syscall.
const maxAcceptBackoff = 200 * time.Millisecond

// isTemporary reports whether an accept error will likely pass: net/http's
// test (a net.Error that says Temporary), which covers the descriptor
// limits.
func isTemporary(err error) bool {
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

func (l *recycleListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.recycled:
		return c, nil
	default:
	}
	select {
	case c := <-l.recycled:
		return c, nil
	case r := <-l.accepted:
		return r.c, r.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *recycleListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		for c := range l.idle {
			c.Close()
		}
		l.mu.Unlock()
	})
	return l.Listener.Close()
}

// give returns a finished connection to the server. Bytes the client had
// already sent are replayed first; otherwise a goroutine waits for the
// client's next request, like net/http's own background read, so the
// request's arrival is stamped when it comes rather than when the server
// gets round to serving the connection again.
func (l *recycleListener) give(c net.Conn, pending []byte) {
	for {
		rc, ok := c.(*replayConn)
		if !ok || len(rc.pending) > 0 {
			break
		}
		c = rc.Conn // drained: do not nest wrappers request after request
	}
	if len(pending) > 0 {
		l.push(&replayConn{Conn: c, pending: pending})
		return
	}
	l.mu.Lock()
	select {
	case <-l.done:
		l.mu.Unlock()
		c.Close()
		return
	default:
	}
	if l.idle == nil {
		l.idle = map[net.Conn]struct{}{}
	}
	l.idle[c] = struct{}{}
	l.mu.Unlock()
	go func() {
		buf := readBufs.Get().(*[]byte)
		if l.idleTimeout > 0 {
			// net/http sets its own deadlines once the request is its.
			_ = c.SetReadDeadline(time.Now().Add(l.idleTimeout))
		}
		n, err := c.Read(*buf)
		l.mu.Lock()
		delete(l.idle, c)
		l.mu.Unlock()
		if n == 0 {
			readBufs.Put(buf)
			c.Close() // the client closed it (err), or the server is stopping
			return
		}
		_ = err // a read that returned data and an error: the next Read repeats the error
		l.push(&replayConn{Conn: c, pending: (*buf)[:n], buf: buf})
	}()
}

func (l *recycleListener) push(c net.Conn) {
	select {
	case l.recycled <- c:
	case <-l.done:
		c.Close()
	}
}

// readBufs hold the first bytes of a kept-alive connection's next request.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 2048); return &b }}

type replayConn struct {
	net.Conn
	pending []byte
	buf     *[]byte // pooled backing of pending, returned once replayed
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 && c.buf != nil {
			readBufs.Put(c.buf)
			c.buf, c.pending = nil, nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// stampConn records when a request's first bytes arrived, so the server's
// receipt time (the origin of knee_timing) is the request's arrival rather
// than the later moment net/http has parsed it and the handler starts. On
// Linux the arrival is the kernel's receive timestamp of the first segment
// (SO_TIMESTAMPNS), so it does not depend on how soon a busy process gets
// round to reading; elsewhere it is the time of the first read.
type stampConn struct {
	net.Conn
	s       *Server
	kts     kernelStamps // kernel receive timestamps, when available
	arrived atomic.Int64 // server time of the pending request's arrival; 0 = none
	// armed: the next read that returns data starts a request, so it is
	// stamped. Disarmed by that read, re-armed when the response is
	// complete, so the later reads of a request (a body that comes in its
	// own segment) do not stamp the next request with their time.
	armed atomic.Bool
	// hijacked: the request being served took the connection over; its
	// writer re-arms at the final chunk instead of ServeHTTP on return.
	hijacked atomic.Bool
	// lastRead is the server time of the last read that returned data, or
	// of the accept when no bytes were waiting then (reads of one
	// connection are never concurrent). Bytes read later arrived after it,
	// so a kernel stamp older than it is stale and the read time is used
	// instead. Seen on Linux: the first request on a connection opened
	// ahead of time and used half a second later was stamped with about
	// the connection's setup time, which started knee_timing (and the TTFT
	// truth) that much early.
	lastRead int64
}

func (c *stampConn) Read(p []byte) (int, error) {
	// Every read asks for the kernel stamp, armed or not: a read that
	// starts before the response is complete (the handler watching for a
	// departed client) can return the next request's first bytes after
	// the writer has re-armed, and then only the kernel knows when they
	// came — the time this goroutine got to run may be many ms later.
	if !c.kts.on() {
		n, err := c.Conn.Read(p)
		if n > 0 {
			now := c.s.now()
			c.lastRead = now
			if c.armed.CompareAndSwap(true, false) {
				c.arrived.Store(max(now, 1))
			}
		}
		return n, err
	}
	n, at, err := c.kts.read(c, p)
	if n > 0 {
		now := c.s.now()
		if at <= 0 || at < c.lastRead {
			at = now
		}
		c.lastRead = now
		if c.armed.CompareAndSwap(true, false) {
			c.arrived.Store(max(at, 1))
		}
	}
	return n, err
}

// arm marks the connection as between requests (its response is complete).
func (c *stampConn) arm() { c.armed.Store(true) }

// stampConnOf finds the stampConn under a (possibly wrapped) connection.
func stampConnOf(c net.Conn) *stampConn {
	for {
		switch cc := c.(type) {
		case *stampConn:
			return cc
		case *replayConn:
			c = cc.Conn
		default:
			return nil
		}
	}
}

// take returns and clears the arrival time of the request being handled.
func (c *stampConn) take() int64 { return c.arrived.Swap(0) }

type stampKey struct{}

// stampListener wraps accepted connections in stampConn.
type stampListener struct {
	net.Listener
	s *Server
}

func (l stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &stampConn{Conn: c, s: l.s}
	sc.armed.Store(true)
	sc.kts.init(c)
	if !sc.kts.pending() {
		sc.lastRead = l.s.now()
	}
	return sc, nil
}

// connContext makes the stampConn of a request reachable from its context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	for {
		switch cc := c.(type) {
		case *stampConn:
			return context.WithValue(ctx, stampKey{}, cc)
		case *replayConn:
			c = cc.Conn
		default:
			return ctx
		}
	}
}
