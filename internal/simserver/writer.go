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
	buf  []byte
	lag  lagHist
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
			w.buf = st.tmpl.appendWhole(w.buf[:0], st.id, len(st.final.tokenTimes), st.reason, st.inputTokens, st.final)
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
	b := w.buf[:0]
	now := s.now()
	if !st.headerSent {
		h := st.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		if st.hdrQueue >= 0 {
			setPhaseHeaders(h, st.hdrQueue, st.hdrPrefill)
		}
		st.rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		st.deadlineAt = now + int64(s.cfg.WriteTimeout)/2
		st.w.WriteHeader(http.StatusOK)
		st.headerSent = true
		if st.tmpl.chat {
			b = st.tmpl.appendRole(b)
		}
	} else if now > st.deadlineAt {
		st.rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		st.deadlineAt = now + int64(s.cfg.WriteTimeout)/2
	}
	if it.kind == kindCut {
		if len(b) > 0 {
			st.w.Write(b)
			st.rc.Flush()
		}
		st.outcome = cut
		close(st.done)
		return
	}
	text := word(st.id, int(it.idx))
	if int(it.idx) == st.plan.malformAt {
		b = st.tmpl.appendMalformed(b, text)
	} else {
		b = st.tmpl.appendToken(b, text)
	}
	if it.kind == kindFinal {
		b = st.tmpl.appendFinal(b, st.reason, st.includeUsage, st.inputTokens, len(st.final.tokenTimes), st.final)
	}
	_, err := st.w.Write(b)
	if err == nil && (flush || it.kind == kindFinal) {
		err = st.rc.Flush()
	}
	w.buf = b
	w.lag.add(s.now() - it.due)
	switch {
	case err != nil:
		st.outcome = writeFailed
		close(st.done)
	case it.kind == kindFinal:
		st.outcome = finished
		close(st.done)
	}
}

func setPhaseHeaders(h http.Header, queue, prefill int64) {
	h["X-Knee-Queue-Ms"] = []string{string(appendMS(nil, queue))}
	h["X-Knee-Prefill-Ms"] = []string{string(appendMS(nil, prefill))}
}
