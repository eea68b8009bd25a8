package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sse"
)

// connServer streams a short answer to every request and treats its
// connections the ways real servers do (see the fields); it counts the
// connections it accepted and the responses it finished.
type connServer struct {
	*httptest.Server
	closeWhenIdle  bool          // close each connection as soon as its response is done, although it answered keep-alive
	idleTimer      time.Duration // close a connection idle this long
	idleCrossing   time.Duration // a request that arrives on a connection idle this long finds it closing: no answer
	perConn        int           // answer this many requests per connection; the next one finds it closed, no answer
	connClose      bool          // answer with "Connection: close"
	closeFreshOnce bool          // close every connection at its first request, unanswered (the server saw it)
	cutAfter       int           // >0: drop the connection mid-stream after this many content chunks

	conns, answered atomic.Int64
	read            atomic.Int64 // requests the handler got: read by the server
	mu              sync.Mutex
	state           map[net.Conn]*connState
}

type connState struct {
	requests int
	idleAt   time.Time
	idle     bool
}

type connKey struct{}

func newConnServer(t *testing.T, cs *connServer) *connServer {
	cs.state = make(map[net.Conn]*connState)
	cs.Server = httptest.NewUnstartedServer(http.HandlerFunc(cs.handle))
	cs.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	cs.Config.ConnState = func(c net.Conn, s http.ConnState) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		switch s {
		case http.StateNew:
			cs.conns.Add(1)
			cs.state[c] = &connState{}
		case http.StateIdle:
			st := cs.state[c]
			st.idle, st.idleAt = true, time.Now()
			if cs.closeWhenIdle {
				c.Close()
			}
			if cs.idleTimer > 0 {
				time.AfterFunc(cs.idleTimer, func() {
					cs.mu.Lock()
					defer cs.mu.Unlock()
					if st.idle && time.Since(st.idleAt) >= cs.idleTimer {
						c.Close()
					}
				})
			}
		case http.StateActive:
			cs.state[c].idle = false
		}
	}
	cs.Start()
	t.Cleanup(cs.Close)
	return cs
}

func (cs *connServer) handle(w http.ResponseWriter, r *http.Request) {
	c := r.Context().Value(connKey{}).(net.Conn)
	cs.read.Add(1)
	cs.mu.Lock()
	st := cs.state[c]
	st.requests++
	n, idleFor := st.requests, time.Since(st.idleAt)
	cs.mu.Unlock()
	if (cs.perConn > 0 && n > cs.perConn) || (cs.idleCrossing > 0 && n > 1 && idleFor >= cs.idleCrossing) || (cs.closeFreshOnce && n == 1) {
		hc, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			hc.Close()
		}
		return
	}
	if cs.connClose {
		w.Header().Set("Connection", "close")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sw := sse.NewWriter(w)
	fl := w.(http.Flusher)
	sw.Data([]byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`))
	for i := range 3 {
		sw.Data(contentChunk)
		fl.Flush()
		if cs.cutAfter > 0 && i+1 >= cs.cutAfter {
			panic(http.ErrAbortHandler)
		}
	}
	sw.Data([]byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`))
	sw.Data([]byte(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}`))
	sw.Data([]byte("[DONE]"))
	fl.Flush()
	cs.answered.Add(1)
}

// TestConnectionReuse runs requests against servers that close kept-alive
// connections in each of the ways real ones do. A request is resent (and
// counted) only where the transport proves the server cannot have read it;
// a server that read a request and closed without answering has failed it:
// that is a stream_broken record, never a resend that turns into success.
// Every row holds the accounting one for one: no record is ok that the
// server did not answer, and where the server reads every request that
// reaches it (its closes never race a request), requests it read =
// records + counted retries.
func TestConnectionReuse(t *testing.T) {
	const n = 10
	closed := func(c int) Config { return Config{Concurrency: c, Requests: n} }
	open := func(rps float64) Config { return Config{RateRPS: rps, Requests: n} }
	for _, tc := range []struct {
		name        string
		srv         *connServer
		cfg         Config
		wantErr     record.ErrorKind // the kind of every failed request
		wantFailed  int              // exact count; -1: any (timing decides how many closes cross a request)
		wantRetries int              // exact count; -1: any
		minRetries  int
		readsAll    bool // the server reads every request that reaches it: read = records + retries
	}{
		{name: "closes after each response although keep-alive", srv: &connServer{closeWhenIdle: true}, cfg: closed(2), wantErr: record.ErrStreamBroken, wantFailed: -1, wantRetries: -1},
		{name: "closes idle connections early", srv: &connServer{idleTimer: time.Millisecond}, cfg: open(100), wantErr: record.ErrStreamBroken, wantFailed: -1, wantRetries: -1},
		// The server reads the request that arrives on a connection idle
		// too long, then closes: odd requests fail, none is resent.
		{name: "reads then closes when idle too long", srv: &connServer{idleCrossing: 5 * time.Millisecond}, cfg: open(40), wantErr: record.ErrStreamBroken, wantFailed: -1, wantRetries: 0, readsAll: true},
		{name: "Connection: close", srv: &connServer{connClose: true}, cfg: closed(2), wantRetries: 0, readsAll: true},
		// One worker: connection A carries requests 0 and 1; the server
		// reads request 2 and closes A unanswered, request 3 opens the
		// next, and so on: 2, 5 and 8 fail and are not resent.
		{name: "reads a 3rd request per connection then closes", srv: &connServer{perConn: 2}, cfg: closed(1), wantErr: record.ErrStreamBroken, wantFailed: 3, wantRetries: 0, readsAll: true},
		{name: "dies mid-stream", srv: &connServer{cutAfter: 2}, cfg: closed(2), wantErr: record.ErrStreamBroken, wantFailed: n, wantRetries: 0, readsAll: true},
		{name: "closes a fresh connection on a request it saw", srv: &connServer{closeFreshOnce: true}, cfg: closed(1), wantErr: record.ErrStreamBroken, wantFailed: n, wantRetries: 0, readsAll: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newConnServer(t, tc.srv)
			cfg := tc.cfg
			cfg.BaseURL = cs.URL
			res := run(t, cfg, promptSource(3))
			if len(res.Records) != n {
				t.Fatalf("%d records, want %d", len(res.Records), n)
			}
			sum, failed, ok := 0, 0, 0
			for _, r := range res.Records {
				sum += r.ConnectionRetries
				if r.OK() {
					ok++
					if r.OutputTokens != 3 || len(r.TokenTimes) != 3 {
						t.Errorf("request %d: %d output tokens in %d chunks, want 3", r.ID, r.OutputTokens, len(r.TokenTimes))
					}
				} else {
					failed++
					if r.Error != tc.wantErr {
						t.Errorf("request %d: error %q (%s), want %q", r.ID, r.Error, r.ErrorMessage, tc.wantErr)
					}
				}
				if r.Sent < r.Scheduled {
					t.Errorf("request %d: sent %v before scheduled %v", r.ID, r.Sent, r.Scheduled)
				}
			}
			if int64(sum) != res.ConnectionRetries {
				t.Errorf("records count %d retries, the result %d", sum, res.ConnectionRetries)
			}
			if tc.wantRetries >= 0 && sum != tc.wantRetries {
				t.Errorf("%d connection retries, want %d", sum, tc.wantRetries)
			}
			if sum < tc.minRetries {
				t.Errorf("%d connection retries, want at least %d", sum, tc.minRetries)
			}
			if tc.wantFailed >= 0 && failed != tc.wantFailed {
				t.Errorf("%d failed requests, want %d", failed, tc.wantFailed)
			}
			if int64(ok) != cs.answered.Load() {
				t.Errorf("%d records ok, the server answered %d: a failure reported as success", ok, cs.answered.Load())
			}
			if tc.readsAll && cs.read.Load() != int64(n+sum) {
				t.Errorf("server read %d requests, want records + retries = %d + %d", cs.read.Load(), n, sum)
			}
			t.Logf("%d connections, %d read, %d retries, %d failed", cs.conns.Load(), cs.read.Load(), sum, failed)
		})
	}
}
