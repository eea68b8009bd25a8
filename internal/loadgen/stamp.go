package loadgen

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// Token timestamps are the time the bytes reached this machine, not the
// time a busy client goroutine got round to reading them: at a thousand
// streams on a few cores the gap between the two is milliseconds.
//
// On Linux the transport dials connections with SO_TIMESTAMPNS on
// (stamp_linux.go): each socket read is a recvmsg that also returns the
// kernel's receive time of the data, and the connection keeps that of its
// latest read. net/http reads the connection through a bufio.Reader that
// calls the connection only when empty, so when the response body returns
// bytes, the connection's latest stamp is the arrival of the last of them
// — the moment the events they complete became readable. Events read
// together share that stamp, as they share a user-space stamp. The
// request reaches its connection through httptrace's GotConn.
//
// The kernel stamp is on CLOCK_REALTIME; record times are offsets on the
// monotonic clock from the run start. A wallMap converts one to the
// other: the latest measurement of the two clocks together (every 50 ms,
// trackWallClock) and the rate at which the wall clock has been running
// against the monotonic one since the measurement before. The rate is not
// taken as 1: a VM's wall clock can run at a pace of its own (one here ran
// 0.5% fast, 5 ms a second), and with a fixed offset a stamp read 70 ms
// after its data arrived came out 0.35 ms before the server wrote it. A
// step of the wall clock (over 1 ms off the rate) restarts the map and is
// counted; a stamp that lands after the moment its read returned is
// replaced by the user-space stamp.
//
// Where there is no kernel stamp (not Linux, the option refused, a read
// without one, a transport from Config.Transport, Config.UserSpaceTimestamps)
// the read is stamped with the monotonic clock when it returns, as before;
// Result.KernelTimestamps says whether every stream had kernel stamps.

// wallNow reads the wall clock, Unix ns.
func wallNow() int64 { return time.Now().UnixNano() }

// wallSample reads the wall clock (Unix ns) and the monotonic offset from
// start (ns) at one instant. time.Now reads the two clocks one after the
// other, and an interruption between the reads (a preempted vCPU) would
// shift every stamp converted through the sample by as much, so this
// brackets a wall reading between two monotonic ones, a few times, and
// keeps the tightest bracket (its width, tens of nanoseconds, bounds the
// error).
func wallSample(start time.Time, wallNow func() int64) (mono, wall int64) {
	bestWidth := time.Duration(1 << 62)
	for range 8 {
		m1 := time.Since(start)
		w := wallNow()
		m2 := time.Since(start)
		if d := m2 - m1; d < bestWidth {
			mono, wall, bestWidth = int64(m1+(m2-m1)/2), w, d
		}
	}
	return mono, wall
}

// wallFix is one measurement of both clocks (mono: ns offset from the run
// start; wall: Unix ns) and the wall clock's rate against the monotonic
// one since the measurement before (1: the same pace).
type wallFix struct {
	mono, wall int64
	rate       float64
}

// wallMap converts kernel stamps to run offsets. The zero value has no
// fix and converts nothing; it is safe for concurrent use.
type wallMap struct{ fix atomic.Pointer[wallFix] }

// toMono is the run offset of wall-clock time k (Unix ns); ok is false
// before the first fix.
func (m *wallMap) toMono(k int64) (time.Duration, bool) {
	f := m.fix.Load()
	if f == nil {
		return 0, false
	}
	return time.Duration(f.mono + int64(float64(k-f.wall)/f.rate)), true
}

// maxWallRateError bounds how far from 1 a measured rate may be before it
// is taken as a step: NTP slews at most 0.05%, the VM above 0.5%.
const maxWallRateError = 0.02

// advance records a new measurement. It returns true when the wall clock
// stepped since the last one: more than 1 ms away from where the rate put
// it (the map then restarts at rate 1 from this measurement).
func (m *wallMap) advance(mono, wall int64) (stepped bool) {
	next := &wallFix{mono: mono, wall: wall, rate: 1}
	if f := m.fix.Load(); f != nil && mono > f.mono {
		predicted := f.wall + int64(f.rate*float64(mono-f.mono))
		rate := float64(wall-f.wall) / float64(mono-f.mono)
		stepped = wall-predicted > int64(time.Millisecond) || predicted-wall > int64(time.Millisecond) || math.Abs(rate-1) > maxWallRateError
		if !stepped {
			next.rate = rate
		}
	}
	m.fix.Store(next)
	return stepped
}

// kernelStamper is a connection that knows the kernel receive time of its
// latest read's data, in Unix nanoseconds (0: unknown).
type kernelStamper interface{ kernelStamp() int64 }

// writeStamper is a connection that knows when its latest Write started,
// in nanoseconds since writeEpoch (0: never).
type writeStamper interface{ lastWriteStart() int64 }

// writeEpoch is the origin of write stamps: connections outlive runs, so
// they cannot use a run's start.
var writeEpoch = time.Now()

// stampReader timestamps every Read of the response body, before a byte
// is parsed: all events parsed from that read share the timestamp
// (architecture habit 6).
type stampReader struct {
	body  io.Reader
	start time.Time     // the run start (monotonic)
	clock *wallMap      // converts kernel stamps (wall clock) to run offsets
	conn  kernelStamper // the request's connection; nil: user-space stamps only
	at    time.Duration // offset of the latest Read's data

	kernelReads, userReads int // reads with data, by where their stamp came from
}

func (s *stampReader) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	now := time.Since(s.start)
	s.at = now
	if n == 0 {
		return n, err // no bytes to date: the end or an error, when it was seen
	}
	if s.conn != nil {
		if k := s.conn.kernelStamp(); k != 0 {
			if at, ok := s.clock.toMono(k); ok && at <= now {
				s.at = at
				s.kernelReads++
				return n, err
			}
		}
	}
	s.userReads++
	return n, err
}

// reqTrace is one request's httptrace hooks: when the request was written,
// which connection carries it, and what tells whether the server can have
// seen it when the exchange fails.
type reqTrace struct {
	trace  httptrace.ClientTrace
	start  time.Time
	sentAt atomic.Int64 // ns offset when the request was written; 0 until then
	conn   kernelStamper
	writer writeStamper

	wantConn  bool         // keep the connection's stamps (kernel-stamped dials only)
	conns     int64        // connections the request was given: attempts, net/http's own resends included
	reused    bool         // the latest connection had carried an earlier exchange
	witness   closeWitness // the latest connection, when it can tell a write after the server's close
	firstByte atomic.Bool  // a response byte arrived (set on the transport's read goroutine)
	// dialing: a connect began for this request and has not ended (set
	// on the transport's dial goroutine).
	dialing atomic.Bool
}

func newReqTrace(start time.Time, wantConn bool) *reqTrace {
	t := &reqTrace{start: start, wantConn: wantConn}
	t.trace.WroteRequest = t.wroteRequest
	t.trace.GotConn = t.gotConn
	t.trace.GotFirstResponseByte = func() { t.firstByte.Store(true) }
	t.trace.ConnectStart = func(string, string) { t.dialing.Store(true) }
	t.trace.ConnectDone = func(string, string, error) { t.dialing.Store(false) }
	return t
}

// unseen reports whether a failed attempt is proven to have failed before
// the server can have read the request, so that resending it cannot count
// one request twice: on a reused connection, with no byte of a response,
// not by the run's or the request's own deadline or cancel, and one of
//   - net/http saw the server's close before the request was queued to be
//     written ("server closed idle connection");
//   - a write of the request failed (the server lacks part of it);
//   - the connection knows a write began after the server's FIN had
//     arrived (Linux: the socket had left ESTABLISHED);
//   - the connection knows that when it ended the server had not
//     acknowledged all the bytes written on it, or that it ended with a
//     reset, the kernel's answer to a close with data unread (Linux,
//     tcpWitness): llama.cpp's server closes every connection after its
//     response, and a request that raced the close was never read.
//
// why says which. A reused connection closed with no response byte is not
// proof by itself: a server can read the request and then close without
// answering, and that is its failure, counted as such (the request is not
// resent). On a fresh connection every such failure is the server's doing.
func (t *reqTrace) unseen(err error) (ok bool, why string) {
	if !t.reused || t.firstByte.Load() {
		return false, ""
	}
	var netErr net.Error
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &netErr) && netErr.Timeout()) {
		return false, ""
	}
	if t.witness != nil && t.witness.wroteAfterPeerClose() {
		return true, "the request was written after the server's close arrived"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "write" {
		return true, "a write of the request failed"
	}
	if isServerClosedIdle(err) {
		return true, "the server closed the idle connection before the request was written"
	}
	if t.witness != nil {
		if missed, why, _ := t.witness.peerMissed(); missed {
			return true, why
		}
	}
	return false, ""
}

// witnessKnows reports whether the latest connection could tell, at its
// end, whether the server had the request (Linux's TCP_INFO): where it
// cannot, the run learns from the server instead (Run.stopReuse).
func (t *reqTrace) witnessKnows() bool {
	if t.witness == nil {
		return false
	}
	_, _, known := t.witness.peerMissed()
	return known
}

// isServerClosedIdle matches net/http's unexported errServerClosedIdle: its
// read loop saw the server's EOF while no request was expected on the
// connection, that is before this one was queued to be written.
func isServerClosedIdle(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "http: server closed idle connection" {
			return true
		}
	}
	return false
}

// closeWitness is a connection that knows whether one of its writes began
// after the peer had closed, and, once it has ended, whether the peer had
// missed some of what was written on it (known false: it cannot say).
type closeWitness interface {
	wroteAfterPeerClose() bool
	peerMissed() (missed bool, why string, known bool)
}

func (t *reqTrace) wroteRequest(httptrace.WroteRequestInfo) {
	t.sentAt.Store(int64(time.Since(t.start)))
}

// lastWrite is when the connection's latest write started, as a run
// offset. Read once the response has begun, it is the start of the
// request's last write: net/http flushes its buffer after WroteRequest, so
// that hook fires before the bytes leave, and the writer goroutine may run
// late besides.
func (t *reqTrace) lastWrite() (time.Duration, bool) {
	if t.writer == nil {
		return 0, false
	}
	w := t.writer.lastWriteStart()
	if w == 0 {
		return 0, false
	}
	return time.Duration(w) - t.start.Sub(writeEpoch), true
}

// gotConn runs on the goroutine that called Do, before Do returns.
func (t *reqTrace) gotConn(info httptrace.GotConnInfo) {
	t.conns++
	t.reused = info.Reused
	c := info.Conn
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS: the stamps are the socket's
		c = tc.NetConn()
	}
	t.witness, _ = c.(closeWitness)
	if !t.wantConn {
		return
	}
	t.conn, _ = c.(kernelStamper)
	t.writer, _ = c.(writeStamper)
}
