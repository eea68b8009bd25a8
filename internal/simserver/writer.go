package simserver

import (
	"net/http"
	"strconv"
	"time"
)

// writer owns the streams of one shard (id mod writers) and writes their
// tokens: one Write and one flush per stream per batch, into bytes built
// from the stream's pre-built template.
type writer struct {
	s    *Server
	ch   chan []item
	free chan []item
	buf  []byte // SSE bytes of one item
	out  []byte // framed bytes of one item on a hijacked connection
	lag  lagHist
	nb   nbWriter
}

// batch returns an empty item slice, recycled when possible.
func (w *writer) batch() []item {
	select {
	case b := <-w.free:
		return b
	default:
		return make([]item, 0, 64)
	}
}

func (w *writer) run() {
	defer w.s.writeWG.Done()
	for b := range w.ch {
		w.lag.mu.Lock()
		for i := range b {
			next := (*stream)(nil)
			if i+1 < len(b) {
				next = b[i+1].st
			}
			w.write(&b[i], next != b[i].st)
		}
		w.lag.mu.Unlock()
		clear(b)
		select {
		case w.free <- b[:0]:
		default:
		}
	}
}

// write performs one item; flush is false when the next item is for the
// same stream (a released stall), so the burst goes out in one write.
func (w *writer) write(it *item, flush bool) {
	st := it.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dead || st.outcome != running {
		return
	}
	s := w.s
	if !st.streaming {
		switch it.kind {
		case kindCut:
			st.outcome = cut
			close(st.done)
		case kindFinal:
			// The whole body leaves in one write: every token's write time.
			wt := s.now() - st.recvS
			f := st.final
			f.writeTimes = st.writeTimes[:0]
			for range f.tokenTimes {
				f.writeTimes = append(f.writeTimes, wt)
			}
			if st.items > 0 {
				w.buf = appendItemsAnswer(w.buf[:0], st.ep, st.id, s.created, s.modelJSON, st.items, st.inputTokens)
			} else {
				w.buf = st.tmpl.appendWhole(w.buf[:0], st.id, len(st.final.tokenTimes), st.reason, st.inputTokens, st.final)
			}
			if it.idx == int32(st.plan.malformAt) {
				w.buf = w.buf[:len(w.buf)/2]
			}
			h := st.w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Content-Length", strconv.Itoa(len(w.buf)))
			setPhaseHeaders(h, st.final.queue, st.final.prefill)
			st.w.WriteHeader(http.StatusOK)
			st.headerSent = true
			_, err := st.w.Write(w.buf)
			if err != nil {
				st.outcome = writeFailed
			} else {
				st.outcome = finished
			}
			close(st.done)
		}
		return
	}
	b := w.buf[:0]   // the SSE bytes of this item
	pending := false // hijacked: the status line and headers still to write
	if !st.headerSent {
		st.headerSent = true
		if st.conn != nil {
			pending = true
			if st.raw == nil {
				st.conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			}
		} else {
			h := st.w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			if st.hdrQueue >= 0 {
				setPhaseHeaders(h, st.hdrQueue, st.hdrPrefill)
			}
			st.rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			st.w.WriteHeader(http.StatusOK)
		}
		st.deadlineAt = -1 // set below, from this write's time
		if st.tmpl.chat {
			b = st.tmpl.appendRole(b)
		}
	}
	// One clock read per write: it is the write time of the tokens the
	// write carries, their pacing lag, and the write-deadline clock. The
	// final chunk carries its own write time, so for it the clock is read
	// just before its bytes are built (a few µs before the write(2)).
	var now int64
	if it.kind != kindCut {
		text := word(st.id, int(it.idx))
		if int(it.idx) == st.plan.malformAt {
			b = st.tmpl.appendMalformed(b, text)
		} else {
			b = st.tmpl.appendToken(b, text)
		}
		if it.kind == kindFinal {
			now = s.now()
			w.noteWrite(st, now)
			f := st.final
			f.writeTimes = st.writeTimes
			for i := range f.writeTimes {
				f.writeTimes[i] -= st.recvS
			}
			b = st.tmpl.appendFinal(b, st.reason, st.includeUsage, st.inputTokens, len(f.tokenTimes), f)
		}
	}
	var err error
	if st.conn != nil {
		out := w.out[:0]
		if pending {
			out = append(out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"...)
			if st.hdrQueue >= 0 {
				out = append(out, "X-Knee-Queue-Ms: "...)
				out = appendMS(out, st.hdrQueue)
				out = append(out, "\r\nX-Knee-Prefill-Ms: "...)
				out = appendMS(out, st.hdrPrefill)
				out = append(out, "\r\n"...)
			}
			out = append(out, "\r\n"...)
		}
		if len(b) > 0 {
			out = strconv.AppendUint(out, uint64(len(b)), 16)
			out = append(out, "\r\n"...)
			out = append(out, b...)
			out = append(out, "\r\n"...)
		}
		if it.kind == kindFinal {
			out = append(out, "0\r\n\r\n"...)
		}
		if it.kind == kindToken {
			now = s.now()
			w.noteWrite(st, now)
		} else if it.kind == kindCut {
			now = s.now()
		}
		w.refreshDeadline(st, now)
		if it.kind == kindFinal {
			// The client may send its next request as soon as this
			// arrives: the connection's next read starts a request.
			if sc := stampConnOf(st.conn); sc != nil {
				sc.arm()
			}
		}
		if len(out) > 0 {
			if st.raw != nil {
				err = w.nb.writeNow(st.raw, out)
			} else {
				_, err = st.conn.Write(out)
			}
		}
		w.out = out
	} else {
		if it.kind == kindToken {
			now = s.now()
			if flush {
				w.noteWrite(st, now)
			} else {
				st.writeTimes = append(st.writeTimes, now) // rewritten at the flush
				st.unflushed++
			}
		} else if it.kind == kindCut {
			now = s.now()
		}
		w.refreshDeadline(st, now)
		if len(b) > 0 {
			_, err = st.w.Write(b)
			if err == nil && (flush || it.kind != kindToken) {
				err = st.rc.Flush()
			}
		}
	}
	w.buf = b
	if it.kind != kindCut {
		w.lag.add(now - it.due)
	}
	switch {
	case it.kind == kindCut:
		st.outcome = cut // the handler drops the connection
	case err != nil:
		st.outcome = writeFailed
	case it.kind == kindFinal:
		st.outcome = finished
		if st.conn != nil {
			st.conn.SetWriteDeadline(time.Time{})
		}
	default:
		return
	}
	if st.conn != nil {
		st.conn.SetReadDeadline(aLongTimeAgo) // ends the handler's watch
	}
	close(st.done)
}

// refreshDeadline keeps a blocking write's deadline WriteTimeout ahead,
// before the write, resetting it only every WriteTimeout/2 (a syscall-free
// but not free call). Non-blocking hijacked writes need none.
func (w *writer) refreshDeadline(st *stream, now int64) {
	wt := w.s.cfg.WriteTimeout
	switch {
	case st.deadlineAt < 0: // set with the headers
	case now <= st.deadlineAt || st.raw != nil:
		return
	case st.conn != nil:
		st.conn.SetWriteDeadline(time.Now().Add(wt))
	default:
		st.rc.SetWriteDeadline(time.Now().Add(wt))
	}
	st.deadlineAt = now + int64(wt)/2
}

// noteWrite records now as the write time of the token being written and of
// any earlier ones still waiting in net/http's buffer (they leave with it).
func (w *writer) noteWrite(st *stream, now int64) {
	for i := len(st.writeTimes) - st.unflushed; i < len(st.writeTimes); i++ {
		st.writeTimes[i] = now
	}
	st.unflushed = 0
	st.writeTimes = append(st.writeTimes, now)
}

func setPhaseHeaders(h http.Header, queue, prefill int64) {
	h["X-Knee-Queue-Ms"] = []string{string(appendMS(nil, queue))}
	h["X-Knee-Prefill-Ms"] = []string{string(appendMS(nil, prefill))}
}
