//go:build linux

package loadgen

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// witnessPair is a loopback TCP pair whose client side is dialed by
// dialWitnessed.
func witnessPair(t *testing.T) (client *witnessConn, server *net.TCPConn) {
	t.Helper()
	c, s := dialedPair[*witnessConn](t, dialWitnessed(&net.Dialer{}))
	return c, s.(*net.TCPConn)
}

// tcpInfo reads a connection's TCP_INFO.
func tcpInfo(t *testing.T, c syscall.Conn) *unix.TCPInfo {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		t.Fatal(err, ierr)
	}
	return info
}

// waitFor polls cond (a socket state the kernel reaches in microseconds)
// for up to 10 s: a wait, never a timing assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
	}
}

// readEnd reads the client until its end and returns the error.
func readEnd(c net.Conn) error {
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			return err
		}
	}
}

// TestTCPWitness checks on real loopback sockets what the kernel tells at
// a connection's end: tcpi_bytes_acked counts the SYN as one byte; a
// server that read all it was sent and closed acknowledged it all (the
// request it read is not resent); one that closed first never
// acknowledged the bytes written after; one that closed with our bytes
// unread reset the connection.
func TestTCPWitness(t *testing.T) {
	msg := []byte(strings.Repeat("x", 100))
	t.Run("read then closed", func(t *testing.T) {
		c, s := witnessPair(t)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(s, make([]byte, len(msg))); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := readEnd(c); err != io.EOF {
			t.Fatalf("client read %v, want EOF", err)
		}
		if c.endAcked != int64(len(msg)) {
			t.Errorf("acknowledged %d bytes at the end, want %d (tcpi_bytes_acked less the SYN)", c.endAcked, len(msg))
		}
		if missed, why, known := c.peerMissed(); missed || !known {
			t.Errorf("peerMissed = %v %q %v, want false, known", missed, why, known)
		}
	})
	t.Run("closed before the bytes came", func(t *testing.T) {
		c, s := witnessPair(t)
		s.Close()
		waitFor(t, "the server's FIN", c.peerClosed)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		err := readEnd(c)
		if err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("client read %v, want EOF or a reset", err)
		}
		if c.endAcked != 0 {
			t.Errorf("acknowledged %d bytes at the end, want 0", c.endAcked)
		}
		if missed, why, known := c.peerMissed(); !missed || !known || !strings.Contains(why, "acknowledged 0 of the 100 bytes") {
			t.Errorf("peerMissed = %v %q %v, want true, known, 0 of 100 acknowledged", missed, why, known)
		}
	})
	t.Run("closed with the bytes unread", func(t *testing.T) {
		c, s := witnessPair(t)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the bytes at the server", func() bool { return tcpInfo(t, s).Bytes_received == uint64(len(msg)) })
		s.Close() // unread data: the kernel resets
		if err := readEnd(c); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("client read %v, want a reset", err)
		}
		if missed, why, known := c.peerMissed(); !missed || !known {
			t.Errorf("peerMissed = %v %q %v, want true, known", missed, why, known)
		}
	})
}

// TestLearnsToStopReusing: where the kernel cannot tell whether a request
// that met the server's close was read (ackWitnessOff stands for a
// system without TCP_INFO), the run stops reusing connections at the
// first sign that the server closes them, says so in its notes, and
// loses nothing after that: at concurrency 1 at most the one request that
// taught it.
func TestLearnsToStopReusing(t *testing.T) {
	ackWitnessOff.Store(true)
	defer ackWitnessOff.Store(false)
	n := 40
	res, srv := closerRun(t, 1, n, func() time.Duration { return 20 * time.Millisecond }, Config{})
	srv.Close()
	failed, first := lost(res)
	t.Logf("%d requests: %d lost, %d connection retries, %d connections, server read %d; notes %q",
		len(res.Records), failed, res.ConnectionRetries, srv.Conns(), srv.Read(), res.Notes)
	if len(res.Records) != n {
		t.Fatalf("%d records, want %d", len(res.Records), n)
	}
	if failed > 1 {
		t.Errorf("%d requests lost, want at most the one that showed the server's closes; %s", failed, first)
	}
	if failed+int(res.ConnectionRetries) > 0 {
		if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "every request opened a connection of its own") {
			t.Errorf("notes %q, want one saying connections are no longer reused", res.Notes)
		}
	}
	if int64(n-failed) != srv.Answered() {
		t.Errorf("%d records ok, the server answered %d", n-failed, srv.Answered())
	}
}
