package simserver

import (
	"time"

	"github.com/knee-dev/knee/internal/simengine"
)

// item is one thing a writer does for a stream.
type item struct {
	st   *stream
	due  int64 // server time the bytes are meant to leave
	idx  int32 // output token index
	kind itemKind
}

type itemKind uint8

const (
	kindToken itemKind = iota
	kindFinal          // the last token: also finish, usage, knee_timing, [DONE]
	kindCut            // drop the stream here (fault)
)

// pace is the one goroutine that runs the engine against the wall clock.
// Each step is computed when it starts; its tokens are handed to the
// writers when the step's end time comes round on the wall clock.
func (s *Server) pace() {
	defer s.pacerWG.Done()
	var ems []simengine.Emission
	emit := func(e simengine.Emission) { ems = append(ems, e) }
	batches := make([][]item, len(s.writers))
	for {
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			return
		}
		if !s.eng.HasWork() {
			next := s.nextReleaseLocked()
			s.idle, s.asleep = true, true
			s.mu.Unlock()
			d := time.Duration(-1)
			if next >= 0 {
				d = time.Duration(max(next-s.now(), 0))
			}
			if d != 0 {
				s.waker.Sleep(d)
			}
			s.mu.Lock()
			// The first step starts when the last request it takes arrived
			// (the handlers advanced the engine to it), not when this
			// goroutine got round to running: on a busy host that wake-up
			// came milliseconds late, and starting then put its lateness in
			// every request's TTFT at an idle engine (which calibrate then
			// fitted as request overhead) and in no request's at a busy one.
			// Lateness the step cannot absorb shows as pacing lag.
			s.idle, s.asleep = false, false
			s.mu.Unlock()
			s.releaseDue()
			continue
		}
		ems = ems[:0]
		if s.eng.Step(emit) == 0 {
			// Work that cannot be scheduled yet (should not happen with a
			// validated engine): do not spin.
			s.mu.Unlock()
			s.waker.Sleep(time.Millisecond)
			continue
		}
		endS := s.clk.toServer(s.eng.Now())
		for i := range batches {
			batches[i] = s.writers[i].batch()
		}
		s.processLocked(ems, endS, batches)
		s.mu.Unlock()

		// Wait for the step's end, releasing stalled tokens due before it.
		for !s.closed.Load() {
			now := s.now()
			rel := int64(-1)
			if s.nStalled.Load() > 0 {
				s.mu.Lock()
				rel = s.nextReleaseLocked()
				s.mu.Unlock()
			}
			if rel >= 0 && rel <= now {
				s.releaseDue()
				continue
			}
			if now >= endS {
				break
			}
			target := endS
			if rel >= 0 && rel < target {
				target = rel
			}
			s.waker.Sleep(time.Duration(target - now))
		}
		s.dispatch(batches)
	}
}

// processLocked turns one step's emissions into writer items (or held items
// of a stalled stream) and keeps the metrics. The caller holds s.mu.
func (s *Server) processLocked(ems []simengine.Emission, endS int64, batches [][]item) {
	m := s.metrics
	gen := 0
	nw := int64(len(s.writers))
	// Two passes: first tokens go to the front of each writer's batch, so
	// the burst of a large step delays TTFT as little as possible; the rest
	// keep the engine's running order, which is stable from step to step,
	// so each stream's place in the burst (and its gaps) stays steady.
	for pass := 0; pass < 2; pass++ {
		for i := range ems {
			if e := &ems[i]; (e.Index == 0) != (pass == 0) {
				continue
			}
			gen += s.processOne(&ems[i], endS, batches, nw)
		}
	}
	m.generationTokens.Add(float64(gen))
}

// processOne handles one emission; it returns 1 when it was a live token.
func (s *Server) processOne(ep *simengine.Emission, endS int64, batches [][]item, nw int64) int {
	m := s.metrics
	e := *ep
	st := s.streams[e.ID]
	if st == nil {
		return 0 // canceled
	}
	due := endS
	if int(e.Index) == st.plan.stallAt {
		st.holdUntil = endS + int64(s.cfg.Faults.StallDuration)
	}
	held := st.holdUntil > endS
	if held {
		due = st.holdUntil
	}
	if e.Index == 0 {
		m.promptTokens.Add(float64(st.inputTokens))
		if st.items == 0 { // embeddings and rerank have no first token
			m.ttft.Observe(sec(due - st.recvS))
		}
		if q, p := e.Phases.Queue, e.Phases.Prefill; q+p > 0 || e.Finished {
			// The engine's phases, as vLLM reports them: the front end
			// is in TTFT but in neither.
			st.hdrQueue = max(s.clk.toServer(st.arrV+q)-st.recvS-st.frontEndS, 0)
			st.hdrPrefill = max(due-st.recvS-st.frontEndS-st.hdrQueue, 0)
		}
	} else {
		m.itl.Observe(sec(due - st.tokenTimes[len(st.tokenTimes)-1]))
	}
	st.tokenTimes = append(st.tokenTimes, due)
	it := item{st: st, due: due, idx: int32(e.Index), kind: kindToken}
	switch {
	case int(e.Index) == st.plan.cutAt:
		it.kind = kindCut
		s.eng.Cancel(e.ID) // no-op when it just finished
		delete(s.streams, e.ID)
	case e.Finished:
		it.kind = kindFinal
		delete(s.streams, e.ID)
		st.final = s.finalTiming(st, e.Phases)
		m.success.WithLabelValues(st.reason).Inc()
		f := st.final
		m.e2e.Observe(sec(f.tokenTimes[len(f.tokenTimes)-1]))
		m.queue.Observe(sec(f.queue))
		m.prefill.Observe(sec(f.prefill))
		m.decode.Observe(sec(f.decode))
		m.inference.Observe(sec(f.prefill + f.decode))
		if len(f.tokenTimes) > 1 {
			m.tpot.Observe(sec(f.decode) / float64(len(f.tokenTimes)-1))
		}
		m.reqPrompt.Observe(float64(st.inputTokens))
		if st.items == 0 {
			m.reqGeneration.Observe(float64(len(f.tokenTimes)))
		}
	}
	if held {
		if len(st.held) == 0 {
			s.stalled = append(s.stalled, st)
			s.nStalled.Add(1)
		}
		st.held = append(st.held, it)
		return 1
	}
	w := st.id % nw
	batches[w] = append(batches[w], it)
	if st.items > 0 {
		return 0 // the engine's step ended the prefill; nothing was generated
	}
	return 1
}

// finalTiming is the request's truth in server time relative to receipt.
// queue + prefill is the first token's time and decode runs from the first
// token to the last, so the three add up to the end-to-end time exactly.
func (s *Server) finalTiming(st *stream, ph simengine.Phases) *timing {
	tt := st.tokenTimes
	for i := range tt {
		tt[i] -= st.recvS
	}
	fe := min(st.frontEndS, tt[0])
	q := max(s.clk.toServer(st.arrV+ph.Queue)-st.recvS-fe, 0)
	q = min(q, tt[0]-fe)
	return &timing{queue: q, prefill: tt[0] - fe - q, decode: tt[len(tt)-1] - tt[0], frontEnd: fe, tokenTimes: tt}
}

// nextReleaseLocked is the earliest time a stalled stream's held tokens are
// due, or -1.
func (s *Server) nextReleaseLocked() int64 {
	next := int64(-1)
	for _, st := range s.stalled {
		if next < 0 || st.holdUntil < next {
			next = st.holdUntil
		}
	}
	return next
}

// releaseDue dispatches the held tokens of stalls that have ended.
func (s *Server) releaseDue() {
	if s.nStalled.Load() == 0 {
		return
	}
	now := s.now()
	out := make([][]item, len(s.writers))
	s.mu.Lock()
	k := 0
	for _, st := range s.stalled {
		if st.holdUntil > now {
			s.stalled[k] = st
			k++
			continue
		}
		w := st.id % int64(len(s.writers))
		out[w] = append(out[w], st.held...)
		st.held = nil
		s.nStalled.Add(-1)
	}
	clear(s.stalled[k:])
	s.stalled = s.stalled[:k]
	s.mu.Unlock()
	s.dispatch(out)
}

func (s *Server) dispatch(batches [][]item) {
	for i, b := range batches {
		if len(b) > 0 {
			s.writers[i].ch <- b
		}
		batches[i] = nil
	}
}
