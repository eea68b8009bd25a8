package loadgen

import (
	"context"
	"math"
	"runtime"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
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
			due := r.firstDue(w, n)
			for r.issueCtx.Err() == nil {
				i := next.Add(1) - 1
				if r.cfg.Requests > 0 && i >= r.cfg.Requests {
					r.stopFor(StopRequests)
					return
				}
				scheduled := time.Since(r.start)
				if due >= 0 {
					scheduled, due = min(scheduled, due), -1
				}
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
//
// It builds and encodes requests (see outgoing) while it waits anyway:
// the next arrival's, and those due soon after it (a burst), so that at
// each request's time only the send remains. It does not hand that work
// to another goroutine meanwhile: on two cores one did, and made both the
// dispatcher and the sends before it late by milliseconds. What there is
// no time left to prepare is prepared by the request's own goroutine, in
// parallel, so a dispatcher that fell behind catches up.
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

	q := arrivalQueue{r: r, sched: sched}
	var prevAt time.Duration
	for {
		if q.len() == 0 && !q.pull() {
			r.stopFor(q.ended)
			return
		}
		at := q.at(0).at
		// The last stretch of each wait is spun, not slept: an idle VM
		// can be woken milliseconds late (see package wake).
		spin := wake.SpinWindow(at - prevAt)
		prevAt = at
		for k := 0; k < maxPreparedAhead && at-time.Since(r.start) > spin; k++ {
			if k == q.len() && !q.pull() {
				break
			}
			a := q.at(k) // after pull, which may move the queue
			if a.at-at > burstWindow {
				break // prepared in its own wait
			}
			if !a.prepared {
				var ok bool
				if a.o, ok = r.prepare(a.i); !ok {
					return
				}
				a.prepared = true
			}
		}
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
				q.countDropped()
				return
			}
		}
		if r.issueCtx.Err() != nil {
			q.countDropped()
			return
		}
		a := q.pop()
		if trace.IsEnabled() {
			trace.Logf(r.issueCtx, "knee.due", "request %d, %d µs after its time, prepared %t", a.i, (time.Since(r.start) - a.at).Microseconds(), a.prepared)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			if !a.prepared {
				var ok bool
				if a.o, ok = r.prepare(a.i); !ok {
					return
				}
			}
			r.send(a.i, a.at, a.o, nil)
		}()
		// The send runs now, on this P, ahead of the next request's
		// preparation.
		runtime.Gosched()
	}
}

const (
	// burstWindow: arrivals due this soon after the next one are prepared
	// in its wait, since theirs may be too short for it.
	burstWindow = 20 * time.Millisecond
	// maxPreparedAhead bounds the requests prepared and not yet sent
	// (their bodies are in memory).
	maxPreparedAhead = 16
)

// arrival is one scheduled request of the open loop, prepared or not.
type arrival struct {
	i        int64
	at       time.Duration
	o        outgoing
	prepared bool
}

// arrivalQueue holds the arrivals the dispatcher has taken from the
// schedule and not yet sent, in order.
type arrivalQueue struct {
	r     *Run
	sched Schedule
	next  int64     // index of the next arrival to take from sched
	q     []arrival // q[head:] are pending
	head  int
	ended string // why the schedule ended (set when pull returns false)
}

func (q *arrivalQueue) len() int          { return len(q.q) - q.head }
func (q *arrivalQueue) at(k int) *arrival { return &q.q[q.head+k] }

// pull takes the next arrival from the schedule; false (and ended set)
// when the run's request count or duration has none left.
func (q *arrivalQueue) pull() bool {
	if q.ended != "" {
		return false
	}
	if q.r.cfg.Requests > 0 && q.next >= q.r.cfg.Requests {
		q.ended = StopRequests
		return false
	}
	at := rampWarp(q.sched.Next(), q.r.cfg.Ramp)
	if q.r.cfg.Duration > 0 && at >= q.r.cfg.Duration {
		q.ended = StopDuration
		return false
	}
	if q.head > 0 && q.head*2 >= len(q.q) {
		n := copy(q.q, q.q[q.head:])
		q.q, q.head = q.q[:n], 0
	}
	q.q = append(q.q, arrival{i: q.next, at: at})
	q.next++
	return true
}

func (q *arrivalQueue) pop() arrival {
	a := q.q[q.head]
	q.q[q.head] = arrival{} // the body is the request goroutine's now
	q.head++
	return a
}

// countDropped counts the pending arrivals, and every later one, already
// due when issuing stopped: scheduled, never sent.
func (q *arrivalQueue) countDropped() {
	now := time.Since(q.r.start)
	var n int64
	for ; q.len() > 0 || q.pull(); n++ {
		if q.pop().at > now {
			break
		}
	}
	q.r.dropped.Add(n)
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

// ProbeIDBase is the ID of the first probe (Config.ProbeRateRPS): far above
// any main request's, so IDs stay unique and records sort probes last.
const ProbeIDBase int64 = 1 << 40

// probeLoop sends Config.Probe(k) every 1/ProbeRateRPS from the start until
// issuing stops; each probe runs in its own goroutine (counted in wg), so a
// stalled probe never delays the next one.
func (r *Run) probeLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	sched := constantSchedule{rate: r.cfg.ProbeRateRPS}
	for k := int64(0); ; k++ {
		at := sched.Next()
		if r.cfg.Duration > 0 && at >= r.cfg.Duration {
			return
		}
		if !r.sleep(at - time.Since(r.start)) {
			return
		}
		probe := r.cfg.Probe(k)
		probe.Class = record.ProbeClass
		o := r.encode(probe)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.send(ProbeIDBase+k, at, o, nil)
		}()
	}
}
