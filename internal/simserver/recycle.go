package simserver

import (
	"bufio"
	"net"
	"sync"
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
}

type acceptResult struct {
	c   net.Conn
	err error
}

func newRecycleListener(ln net.Listener) *recycleListener {
	l := &recycleListener{Listener: ln, recycled: make(chan net.Conn, 1024), accepted: make(chan acceptResult), done: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
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
	}()
	return l
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
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// give returns a finished connection to the server; bytes the client had
// already sent (a pipelined request) are replayed first.
func (l *recycleListener) give(c net.Conn, br *bufio.Reader) {
	if br != nil && br.Buffered() > 0 {
		b, _ := br.Peek(br.Buffered())
		c = &replayConn{Conn: c, pending: append([]byte(nil), b...)}
	}
	select {
	case l.recycled <- c:
	case <-l.done:
		c.Close()
	}
}

type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
