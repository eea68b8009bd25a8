package simserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sendHeadersOnly opens a connection to url's host and sends a chat
// request's headers announcing a body of n bytes, and one byte of it.
func sendHeadersOnly(t *testing.T, url string, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(n) + "\r\n\r\n{"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	return c
}

// statusWithin reads c's response status, waiting at most d; 0 when none
// came.
func statusWithin(c net.Conn, d time.Duration) int {
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSlowBodyIsBoundedInTime: a client that sends its headers and then
// stalls in the body gets 408 at the body read timeout, instead of
// holding its connection and goroutine for as long as it likes.
func TestSlowBodyIsBoundedInTime(t *testing.T) {
	url, _ := startTest(t, func(c *Config) { c.BodyReadTimeout = 100 * time.Millisecond })
	c := sendHeadersOnly(t, url, 1000)
	if got := statusWithin(c, 10*time.Second); got != http.StatusRequestTimeout {
		t.Fatalf("status %d for a body that stalled, want 408", got)
	}
}

// TestConcurrentBodiesAreCapped: eight clients announce 60 MiB bodies at
// once and send them slowly; the server admits as many as fit in its
// 256 MiB budget (four) and answers the others 503 at once, so large
// bodies together cannot take its memory.
func TestConcurrentBodiesAreCapped(t *testing.T) {
	url, _ := startTest(t, func(c *Config) { c.BodyReadTimeout = time.Minute })
	const n, size = 8, 60 << 20
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = sendHeadersOnly(t, url, size)
	}
	busy := 0
	for _, c := range conns {
		switch got := statusWithin(c, time.Second); got {
		case http.StatusServiceUnavailable:
			busy++
		case 0: // admitted, still waiting for its body
		default:
			t.Errorf("status %d, want 503 or none yet", got)
		}
	}
	if want := n - maxBodyBytesInFlight/size; busy != want {
		t.Errorf("%d of %d bodies of %d MiB turned away, want %d (a %d MiB budget)", busy, n, size>>20, want, maxBodyBytesInFlight>>20)
	}
}

// TestIdleConnectionIsClosed: a client that keeps its connection after a
// streamed answer and sends nothing more has it closed at the idle
// timeout, on the hijacked path (handed back through the recycle
// listener) as on net/http's.
func TestIdleConnectionIsClosed(t *testing.T) {
	for _, hijack := range []bool{true, false} {
		url, _ := startTest(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond; c.NoHijack = !hijack })
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true}`
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("hijack %v: idle connection: read %v, want EOF (closed by the server)", hijack, err)
		}
	}
}
