package hostile

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Closer serves HTTP/1.1 over a plain net.Listener and closes every
// connection after its first response, as llama.cpp's llama-server does:
// the response says nothing of it (no "Connection: close"), so a client
// keeps the connection for its next request and races the close. Linger,
// when set, is how long each connection stays open, idle, after its
// response (the close then finds any request that arrived meanwhile
// unread). It is written on the socket directly, not on net/http's
// server, so that it shares no code with the client's expectations.
type Closer struct {
	Handler http.Handler
	Linger  func() time.Duration // nil: close at once

	ln       net.Listener
	wg       sync.WaitGroup
	read     atomic.Int64 // requests read whole and handed to Handler
	answered atomic.Int64 // responses written whole
	conns    atomic.Int64
}

// NewCloser serves h on a loopback port until Close.
func NewCloser(h http.Handler, linger func() time.Duration) (*Closer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return ServeCloser(ln, h, linger), nil
}

// ServeCloser serves h on ln, closing each connection after its response
// (see Closer), until Close.
func ServeCloser(ln net.Listener, h http.Handler, linger func() time.Duration) *Closer {
	c := &Closer{Handler: h, Linger: linger, ln: ln}
	c.wg.Add(1)
	go c.serve()
	return c
}

// URL is the server's base URL.
func (c *Closer) URL() string { return "http://" + c.ln.Addr().String() }

// Read is the number of requests read whole; Answered the responses
// written whole; Conns the connections accepted.
func (c *Closer) Read() int64     { return c.read.Load() }
func (c *Closer) Answered() int64 { return c.answered.Load() }
func (c *Closer) Conns() int64    { return c.conns.Load() }

// Close stops accepting and waits for the connections in progress.
func (c *Closer) Close() {
	c.ln.Close()
	c.wg.Wait()
}

func (c *Closer) serve() {
	defer c.wg.Done()
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.conns.Add(1)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.one(conn)
		}()
	}
}

// one answers the connection's first request, then closes it.
func (c *Closer) one(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(stallLimit)) // bounded whatever the client does
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxRequestBody))
	if err != nil {
		return
	}
	req.Body = io.NopCloser(strings.NewReader(string(body)))
	req.RemoteAddr = conn.RemoteAddr().String()
	c.read.Add(1)
	bw := bufio.NewWriter(conn)
	w := &chunkedWriter{bw: bw, header: http.Header{}}
	c.Handler.ServeHTTP(w, req)
	if w.finish() == nil {
		c.answered.Add(1)
	}
	if c.Linger != nil {
		if d := c.Linger(); d > 0 {
			time.Sleep(d) // idle, reading nothing: a request that arrives now is never read
		}
	}
}

// chunkedWriter is a ResponseWriter that sends its body with chunked
// transfer encoding, each Flush on the wire at once.
type chunkedWriter struct {
	bw      *bufio.Writer
	header  http.Header
	status  int
	err     error
	started bool
}

func (w *chunkedWriter) Header() http.Header { return w.header }

func (w *chunkedWriter) WriteHeader(code int) {
	if w.started {
		return
	}
	w.started, w.status = true, code
	w.header.Del("Content-Length")
	w.header.Del("Connection")
	w.header.Set("Transfer-Encoding", "chunked")
	_, w.err = fmt.Fprintf(w.bw, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	if w.err == nil {
		w.err = w.header.Write(w.bw)
	}
	if w.err == nil {
		_, w.err = w.bw.WriteString("\r\n")
	}
}

func (w *chunkedWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	fmt.Fprintf(w.bw, "%x\r\n", len(p))
	w.bw.Write(p)
	_, w.err = w.bw.WriteString("\r\n")
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

func (w *chunkedWriter) Flush() {
	if w.err == nil {
		w.err = w.bw.Flush()
	}
}

// finish ends the body and sends what is buffered.
func (w *chunkedWriter) finish() error {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	if w.err == nil {
		_, w.err = w.bw.WriteString("0\r\n\r\n")
	}
	w.Flush()
	return w.err
}
