//go:build linux

package loadgen

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dialedPair is a loopback TCP pair whose client side dial opened and
// that is a C, the connection type dial promises.
func dialedPair[C net.Conn](t testing.TB, dial func(context.Context, string, string) (net.Conn, error)) (client C, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		c.Close()
		t.Fatal("accept failed")
	}
	client, ok := c.(C)
	if !ok {
		c.Close()
		server.Close()
		t.Fatalf("dial returned %T, want %T", c, client)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// stampedPair is a loopback TCP pair whose client side is dialed by
// dialStamped; it fails the test if the kernel option was not set.
func stampedPair(t testing.TB) (client *stampConn, server net.Conn) {
	t.Helper()
	return dialedPair[*stampConn](t, dialStamped(&net.Dialer{}))
}

// TestStampConnStamps: each read's stamp lies between the start of the
// write that sent its bytes and the moment the read returned, on the wall
// clock, and stamps grow write by write.
func TestStampConnStamps(t *testing.T) {
	c, s := stampedPair(t)
	buf := make([]byte, 64)
	var prev int64
	for i := range 20 {
		msg := []byte{byte('a' + i)}
		before := time.Now().UnixNano()
		if _, err := s.Write(msg); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		returned := time.Now().UnixNano()
		if err != nil || n != 1 || buf[0] != msg[0] {
			t.Fatalf("read %d: %q %v, want %q", i, buf[:n], err, msg)
		}
		st := c.kernelStamp()
		if st < before || st > returned {
			t.Fatalf("read %d: stamp %d outside [write start %d, read return %d]", i, st, before, returned)
		}
		if st <= prev {
			t.Fatalf("read %d: stamp %d not after the previous %d", i, st, prev)
		}
		prev = st
		time.Sleep(time.Millisecond)
	}
}

// TestStampConnCoalesced: bytes of two writes read at once carry the
// stamp of the later write's arrival.
func TestStampConnCoalesced(t *testing.T) {
	c, s := stampedPair(t)
	s.Write([]byte("first"))
	time.Sleep(5 * time.Millisecond)
	second := time.Now().UnixNano()
	s.Write([]byte("second"))
	buf := make([]byte, 64)
	got := 0
	for got < len("firstsecond") {
		n, err := c.Read(buf[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if string(buf[:got]) != "firstsecond" {
		t.Fatalf("read %q", buf[:got])
	}
	if st := c.kernelStamp(); st < second {
		t.Errorf("stamp %d before the second write began (%d): the latest arrival must win", st, second)
	}
}

// TestStampConnWakeups: a Read that waits for data is woken by every
// write, whatever the timing between the two (the runtime poller must
// not lose a readiness edge), and EOF and deadlines behave as net.Conn.
func TestStampConnWakeups(t *testing.T) {
	c, s := stampedPair(t)
	rng := rand.New(rand.NewPCG(1, 2))
	delays := make([]time.Duration, 300)
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(300)) * time.Microsecond
	}
	go func() {
		for i, d := range delays {
			time.Sleep(d)
			s.Write([]byte{byte(i)})
		}
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a lost wake-up fails here, not by hanging
	buf := make([]byte, 1)
	for i := range delays {
		n, err := c.Read(buf)
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("read %d: n %d byte %d err %v", i, n, buf[0], err)
		}
	}

	// A deadline: a timeout error, as net.Conn gives.
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})

	// The peer closes: the rest, then io.EOF.
	s.Write([]byte("z"))
	s.Close()
	if n, err := io.ReadFull(c, buf); n != 1 || err != nil || buf[0] != 'z' {
		t.Fatalf("last byte: %q %v", buf[:n], err)
	}
	if _, err := c.Read(buf); err != io.EOF {
		t.Fatalf("after the peer closed: %v, want io.EOF", err)
	}
}

// TestStampConnCloseUnblocks: closing the connection ends a waiting Read
// with an error (how net/http cancels a request).
func TestStampConnCloseUnblocks(t *testing.T) {
	c, _ := stampedPair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("read on a closed connection: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the waiting Read")
	}
}

// TestParseStamp: the control-message parser finds SCM_TIMESTAMPNS among
// others and rejects truncated or malformed buffers.
func TestParseStamp(t *testing.T) {
	const tsLen = int(unsafe.Sizeof(unix.Timespec{}))
	msg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, unix.CmsgSpace(len(data)))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(len(data)))
		copy(b[unix.CmsgLen(0):], data)
		return b
	}
	ts := unix.NsecToTimespec(1_732_900_000_123_456_789)
	tsBytes := unsafe.Slice((*byte)(unsafe.Pointer(&ts)), tsLen)
	stamp := msg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, tsBytes)
	other := msg(unix.SOL_IP, 1, []byte{1, 2, 3, 4})
	for _, c := range []struct {
		name string
		b    []byte
		want int64
	}{
		{"alone", stamp, 1_732_900_000_123_456_789},
		{"after another message", append(append([]byte{}, other...), stamp...), 1_732_900_000_123_456_789},
		{"none", nil, 0},
		{"another message only", other, 0},
		{"truncated", stamp[:len(stamp)-4], 0},
		{"header only", stamp[:unix.SizeofCmsghdr], 0},
		{"wrong type", msg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS+1, tsBytes), 0},
		{"too short for a timespec", msg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, tsBytes[:4]), 0},
	} {
		if got := parseStamp(c.b); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// A zero length would loop forever if the parser trusted it.
	zero := append([]byte{}, stamp...)
	(*unix.Cmsghdr)(unsafe.Pointer(&zero[0])).SetLen(0)
	if got := parseStamp(zero); got != 0 {
		t.Errorf("zero-length header: %d, want 0", got)
	}
}

// TestWallSample: the run start on the wall clock, as one sample puts it,
// agrees with time.Now's own wall reading (to well within a millisecond on
// any machine).
func TestWallSample(t *testing.T) {
	start := time.Now()
	mono, wall := wallSample(start, wallNow)
	if d := time.Duration(wall - mono - start.UnixNano()); d > time.Millisecond || d < -time.Millisecond {
		t.Errorf("the sample's start differs from time.Now's wall reading by %v", d)
	}
}

// BenchmarkConnRead compares one read of a token-sized event through
// stampConn (recvmsg with the timestamp) with a plain net.Conn read: the
// cost of kernel stamps per socket read.
func BenchmarkConnRead(b *testing.B) {
	event := make([]byte, 256)
	for _, kind := range []string{"stamped", "plain"} {
		b.Run(kind, func(b *testing.B) {
			c, s := stampedPair(b)
			var r net.Conn = c
			if kind == "plain" {
				r = c.Conn
			}
			buf := make([]byte, 16<<10)
			b.ReportAllocs()
			for b.Loop() {
				s.Write(event)
				for got := 0; got < len(event); {
					n, err := r.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					got += n
				}
			}
			c.Close()
			s.Close()
		})
	}
}
