package loadgen

import (
	"context"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/wake"
)

// constantSchedule sends every 1/rate seconds, starting at 0.
type constantSchedule struct {
	rate float64
	i    int64
}

func (c *constantSchedule) Next() time.Duration {
	t := time.Duration(float64(c.i) / c.rate * float64(time.Second))
	c.i++
	return t
}

// rampWarp maps an arrival offset t of the full-rate schedule to the
// offset at which it is sent when the rate grows linearly from 0 to full
// over ramp: the number of arrivals by time τ must equal full-rate
// arrivals by t, so ∫₀^τ rate·s/ramp ds = rate·t gives τ = √(2·ramp·t)
// while τ < ramp (t < ramp/2), and τ = t + ramp/2 after.
func rampWarp(t, ramp time.Duration) time.Duration {
	if ramp <= 0 {
		return t
	}
	if t >= ramp/2 {
		return t + ramp/2
	}
	return time.Duration(math.Sqrt(2 * float64(ramp) * float64(t)))
}

// closedLoop runs Concurrency workers until issuing stops. A worker's
// request is scheduled when its slot frees, so closed-loop lag is only the
// client's own delay between the two. No more workers start than there
// are requests to send, and none once issuing has stopped: a huge
// concurrency costs only what can run.
func (r *Run) closedLoop(wg *sync.WaitGroup) {
	var next atomic.Int64
	n := r.cfg.Concurrency
	if r.cfg.Requests > 0 && int64(n) > r.cfg.Requests {
		n = int(r.cfg.Requests)
	}
	for w := range n {
		if r.issueCtx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.cfg.Ramp > 0 && w > 0 {
				delay := r.cfg.Ramp * time.Duration(w) / time.Duration(n)
				t := time.NewTimer(delay - time.Since(r.start))
				select {
				case <-t.C:
				case <-r.issueCtx.Done():
					t.Stop()
					return
				}
			}
			for r.issueCtx.Err() == nil {
				i := next.Add(1) - 1
				if r.cfg.Requests > 0 && i >= r.cfg.Requests {
					r.stopFor(StopRequests)
					return
				}
				scheduled := time.Since(r.start)
				r.do(i, scheduled)
			}
		}()
	}
	wg.Wait()
}

// openLoop is one dispatcher goroutine (the caller's) that sleeps until
// each arrival's scheduled time and starts a goroutine for it. Responses
// never slow it: only a MaxConcurrency cap can make it wait, and then the
// wait is measured as lag.
func (r *Run) openLoop(wg *sync.WaitGroup) {
	sched := r.cfg.Arrivals
	if sched == nil {
		sched = &constantSchedule{rate: r.cfg.RateRPS}
	}
	var sem chan struct{}
	if r.cfg.MaxConcurrency > 0 {
		sem = make(chan struct{}, r.cfg.MaxConcurrency)
	}
	// A plain Go timer wakes an idle client up to a millisecond late (the
	// netpoller sleeps in whole milliseconds), and that is lag of every
	// send; the Waker is on time to tens of microseconds.
	wk := wake.New()
	defer wk.Close()
	stopWake := context.AfterFunc(r.issueCtx, wk.Kick)
	defer stopWake()
	var i int64
	var prevAt time.Duration
	for ; r.cfg.Requests == 0 || i < r.cfg.Requests; i++ {
		at := rampWarp(sched.Next(), r.cfg.Ramp)
		if r.cfg.Duration > 0 && at >= r.cfg.Duration {
			r.stopFor(StopDuration)
			return
		}
		// The dispatcher builds and encodes the request while it has to
		// wait anyway, so that at its time only the send remains (see
		// outgoing). It does not share a core with a goroutine doing
		// that work meanwhile: one did on two cores and made both the
		// dispatcher and the sends before it late by milliseconds. An
		// arrival due within the spin window is prepared by its own
		// goroutine instead, in parallel, so a dispatcher that fell
		// behind catches up.
		spin := wake.SpinWindow(at - prevAt)
		prevAt = at
		var o outgoing
		prepared := false
		if at-time.Since(r.start) > spin {
			var ok bool
			if o, ok = r.prepare(i); !ok {
				return
			}
			prepared = true
		}
		// The last stretch of each wait is spun, not slept: an idle VM
		// can be woken milliseconds late (see package wake).
		for d := at - time.Since(r.start); d > 0; d = at - time.Since(r.start) {
			if d > spin {
				wk.Sleep(d - spin)
			} else {
				wk.Spin(d)
			}
			if r.issueCtx.Err() != nil {
				return // not yet due: not dropped
			}
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-r.issueCtx.Done():
				r.countDropped(sched, i, at)
				return
			}
		}
		if r.issueCtx.Err() != nil {
			r.countDropped(sched, i, at)
			return
		}
		wg.Add(1)
		go func(i int64) {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			if !prepared {
				var ok bool
				if o, ok = r.prepare(i); !ok {
					return
				}
			}
			r.send(i, at, o, nil)
		}(i)
		// The send runs now, on this P, ahead of the next request's
		// preparation.
		runtime.Gosched()
	}
	r.stopFor(StopRequests)
}

// countDropped counts arrival i (due at at) and every later one already
// due when issuing stopped: scheduled, never sent.
func (r *Run) countDropped(sched Schedule, i int64, at time.Duration) {
	now := time.Since(r.start)
	for n := int64(0); ; n++ {
		if at > now || (r.cfg.Requests > 0 && i >= r.cfg.Requests) || (r.cfg.Duration > 0 && at >= r.cfg.Duration) {
			r.dropped.Add(n)
			return
		}
		i++
		at = rampWarp(sched.Next(), r.cfg.Ramp)
	}
}

// SessionTurn is one turn of a conversation: the user's new message (its
// Prompt, PromptTokens and MaxTokens; History, Session and Turn are filled
// in) and how long the user thinks before sending it.
type SessionTurn struct {
	Request Request
	Think   time.Duration
}

// sessionLoop runs Sessions conversations at once, each a closed loop of
// turns: a turn is scheduled when the user has read the previous answer and
// thought, and carries the whole history, the server's actual answers
// included. A failed turn ends its conversation.
func (r *Run) sessionLoop(wg *sync.WaitGroup) {
	var next atomic.Int64
	n := r.cfg.Sessions
	for s := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.cfg.Ramp > 0 && s > 0 && !r.sleep(r.cfg.Ramp*time.Duration(s)/time.Duration(n)-time.Since(r.start)) {
				return
			}
			var history []openai.Message
			historyTokens := 0
			for turn := 1; r.issueCtx.Err() == nil; turn++ {
				t, ok := r.cfg.Turn(s, turn)
				if !ok || (turn > 1 && !r.sleep(t.Think)) {
					return
				}
				i := next.Add(1) - 1
				if r.cfg.Requests > 0 && i >= r.cfg.Requests {
					r.stopIssue()
					return
				}
				req := t.Request
				req.History = history
				req.Session, req.Turn = strconv.Itoa(s), turn
				req.PromptTokens += historyTokens
				if req.RequestedTokens > 0 {
					req.RequestedTokens += historyTokens
				}
				var res turnResult
				r.send(i, time.Since(r.start), r.encode(req), &res)
				if !res.ok {
					return
				}
				history = append(history[:len(history):len(history)],
					openai.Message{Role: "user", Content: t.Request.Prompt}, openai.Message{Role: "assistant", Content: res.answer})
				historyTokens = res.inTokens + res.outToks
			}
		}()
	}
	wg.Wait()
}

// sleep waits d unless issuing stops first; it reports whether to go on.
func (r *Run) sleep(d time.Duration) bool {
	if d <= 0 {
		return r.issueCtx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.issueCtx.Done():
		return false
	}
}
