package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
)

// Lengths gives the prompt and output length of request i, deterministically
// (*workload.Generator satisfies it).
type Lengths interface {
	Lengths(i int64) (in, out int)
}

// Contents is implemented by workloads that know which prompt tokens
// repeat across requests (shared prefixes, a trace's hash_ids): Content
// replaces Lengths and names the prompt's content for the engine's prefix
// cache, appending to dst.
type Contents interface {
	Content(i int64, dst []simengine.Segment) (in, out int, prompt []simengine.Segment)
}

// Arrivals gives the absolute offset of each next arrival from the run start
// (workload.Arrivals satisfies it).
type Arrivals interface {
	Next() time.Duration
}

// Config is one simulated run.
type Config struct {
	Engine simengine.Config
	Gen    Lengths

	// Open loop: Arrivals. Closed loop: Concurrency users, each sending its
	// next request the moment the previous one finishes (as the client
	// sees it, and after Client.Gap).
	Arrivals    Arrivals
	Concurrency int
	// Sessions > 0 runs that many multi-turn conversations instead (a
	// closed loop of users): turn k of a conversation is Turn(s, k)'s new
	// message after the whole history — every earlier message and answer,
	// which the engine's prefix cache can hold — sent Turn's think time
	// after the previous answer ended. Gen is not used.
	Sessions int
	Turn     func(session, turn int) (SessionTurn, bool)
	// Ramp raises the load linearly from zero over this long: an open
	// loop's rate grows as rate × t/Ramp (arrival times are warped, the
	// sequence is the same); closed-loop users start one by one across it.
	Ramp time.Duration
	// MaxConcurrency caps an open loop's requests in flight: an arrival
	// beyond it waits in the client (sent later than scheduled: lag)
	// instead of being dropped. 0 = no cap.
	MaxConcurrency int

	// The run issues requests until Requests have been issued or the next
	// arrival is at or after Duration, whichever comes first (0 = no limit;
	// at least one must be set). Requests in flight then run to completion.
	Requests int64
	Duration time.Duration

	// Records sent before Warmup, or among the first WarmupRequests, are
	// flagged Warmup (excluded from statistics).
	Warmup         time.Duration
	WarmupRequests int

	// KeepTokenTimes gives each record its own TokenTimes slice and
	// ServerPhases, so a copy of the record may be kept after onRecord
	// returns. StreamTokenTimes fills TokenTimes from a reused buffer that
	// is valid only during onRecord: enough for statistics and for writing
	// records out, without per-request allocation. With neither, records
	// carry no TokenTimes (no inter-token statistics) and no per-token work
	// is done.
	KeepTokenTimes   bool
	StreamTokenTimes bool
	// OnGaps receives the inter-token gaps of the measured (non-warm-up)
	// requests as the engine produces them, grouped by value (see
	// simengine.Config.OnGaps): the fast way to inter-token statistics
	// when records need no TokenTimes.
	OnGaps func(gap time.Duration, count int)

	// TooLongAsErrors records a request longer than the model's context
	// as an http_4xx record (HTTP 400, as vLLM answers it) and goes on;
	// without it such a request stops the run with an error.
	TooLongAsErrors bool

	// OnStep, when set, sees the engine's state after every step (virtual
	// time, running and waiting requests, KV usage): for views that follow
	// the queue and the cache over a run.
	OnStep func(simengine.EngineStats)

	// Client is the benchmark client the records are measured by; the zero
	// value is an ideal one (knee's). A client with a chunk cost sees tokens
	// later than the server sends them, so OnGaps (the server's gaps) must
	// not be set with it.
	Client Client
	// ServerLoop is the server's streaming loop; the zero value keeps up
	// with the engine. With a chunk cost tokens leave the server later than
	// the engine makes them, and several to a chunk, so OnGaps must not be
	// set with it; a client chunk cost is not supported with it yet.
	ServerLoop ServerLoop

	// Class, when set, names request i's traffic class (copied to its
	// record) and the LoRA adapter it runs with (0: the base model; the
	// engine's Config.LoRA must serve adapters).
	Class func(i int64) (name string, adapter int32)
}

// SessionTurn is one turn of a simulated conversation.
type SessionTurn struct {
	InputTokens, OutputTokens int // the new message and the answer's length
	Think                     time.Duration
}

// session is a conversation's state: what its next prompt repeats.
type session struct {
	done    int // turns completed
	history int // tokens of the history (messages and answers)
	segs    []simengine.Segment
	over    bool
}

// contentID names one message or answer of a conversation for the engine.
func contentID(s, turn int, answer bool) uint64 {
	x := uint64(s)<<32 | uint64(turn)<<1
	if answer {
		x |= 1
	}
	x ^= 0x73657373696f6e00
	x ^= x >> 31
	x *= 0x7fb5d329728ea185
	x ^= x >> 27
	return x | 1
}

// Result says what a run did.
type Result struct {
	Issued, Completed, Rejected int64
	Failed                      int64 // too long for the context (TooLongAsErrors)
	PeakInFlight                int
	End                         time.Duration // virtual time of the last event
	Steps                       int64         // engine steps
	Tokens                      int64         // output tokens emitted
	Events                      int64         // arrivals + steps + token emissions
	Engine                      simengine.EngineStats
}

// pending is one request in flight; its slot index is its engine id.
type pending struct {
	id       int64
	sched    time.Duration
	sent     time.Duration
	engineAt time.Duration          // when the front end handed it to the engine
	feDone   int64                  // front-end time at which its front end's turn is done (frontEndClock)
	feRest   simengine.FrontEndCost // its front end's turns yet to come (FrontEndQueue.Next)
	feMore   bool                   // the turn that ends at feDone is not its last
	segs     []simengine.Segment    // the prompt's content (reused per slot)
	first    time.Duration
	in, out  int
	inFlight int
	user     int
	turn     int    // sessions: the turn (from 1)
	outputID uint64 // sessions: names the answer for later turns
	class    string // Config.Class's name and adapter
	adapter  int32
	times    []time.Duration // reused per slot
	counts   []int32         // tokens per chunk, when a chunk carried other than one (reused per slot)
	// A client with a chunk cost: chunks arrived and not yet taken up,
	// chunks handled, whether the slot waits in the client's turn, and the
	// server's phases (known at the last token, recorded at the client's).
	chunks, handled int
	waiting         bool
	serverPhases    simengine.Phases
}

// held is an issued request not yet sent: the client waits for a slot
// under MaxConcurrency.
type held struct {
	id    int64
	sched time.Duration
	user  int
}

const (
	evArrival  = iota // ID: closed-loop user, or -1 (open loop)
	evSlotFree        // a rejection freed a slot: send the oldest held request
	evDone            // a request finished at this step end: its slot frees
	evSubmit          // ID: slot; a sent request clears the front end and reaches the engine
	evChunk           // ID: slot; a streamed token reaches a client with a chunk cost
	evHandled         // ID: slot; the client has handled one of its chunks
)

// Run simulates cfg, calling onRecord once per finished or rejected request
// in virtual-time order. Unless KeepTokenTimes is set, the record passed to
// onRecord is reused: copy what you keep. A request longer than the model's
// context stops the run with an error wrapping simengine.ErrTooLong (the
// records before it have been delivered). Cancelling ctx stops the run early
// with ctx's error.
func Run(ctx context.Context, cfg Config, onRecord func(*record.Request)) (Result, error) {
	var res Result
	if cfg.Gen == nil && cfg.Sessions <= 0 {
		return res, errors.New("sim: no workload lengths (Config.Gen)")
	}
	if cfg.Sessions > 0 {
		if cfg.Turn == nil || cfg.Arrivals != nil || cfg.Concurrency > 0 {
			return res, errors.New("sim: sessions need a turn source, and no arrivals or concurrency")
		}
		cfg.Concurrency = cfg.Sessions
		if cfg.Gen == nil {
			cfg.Gen = noLengths{}
		}
	}
	if (cfg.Arrivals == nil) == (cfg.Concurrency <= 0) {
		return res, errors.New("sim: give either arrivals (open loop) or a concurrency > 0 (closed loop), not both")
	}
	if cfg.Ramp < 0 || cfg.MaxConcurrency < 0 {
		return res, errors.New("sim: ramp and max concurrency must not be negative")
	}
	if cfg.Requests <= 0 && cfg.Duration <= 0 {
		return res, errors.New("sim: give a number of requests or a duration")
	}
	if err := cfg.Client.validate(cfg.Concurrency > 0); err != nil {
		return res, err
	}
	if cfg.ServerLoop.ChunkCost < 0 {
		return res, errors.New("sim: the server loop's chunk cost must not be negative")
	}
	if cfg.ServerLoop.ChunkCost > 0 && cfg.Client.ChunkCost > 0 {
		return res, errors.New("sim: a server loop chunk cost and a client chunk cost are not supported together yet")
	}
	// thread is the one thread tokens pass through on the way to the
	// records: the client's, or the server's loop (merging what waits).
	thread := clientThread{cost: int64(cfg.Client.ChunkCost), current: -1}
	if cfg.ServerLoop.ChunkCost > 0 {
		thread = clientThread{cost: int64(cfg.ServerLoop.ChunkCost), merge: true, current: -1}
	}
	if thread.cost > 0 && cfg.OnGaps != nil {
		return res, errors.New("sim: OnGaps reports the engine's inter-token gaps, not those seen through a client or server loop with a chunk cost; use token times")
	}
	ecfg := cfg.Engine
	// The thread must handle every token when it has a cost per chunk.
	ecfg.EdgeEmissionsOnly = !cfg.KeepTokenTimes && !cfg.StreamTokenTimes && thread.cost == 0
	if cfg.OnGaps != nil {
		ecfg.OnGaps = func(gap int64, n int) { cfg.OnGaps(time.Duration(gap), n) }
	}
	eng, err := simengine.NewEngine(ecfg)
	if err != nil {
		return res, err
	}
	if onRecord == nil {
		onRecord = func(*record.Request) {}
	}

	var (
		q        simengine.EventQueue
		pend     []pending
		free     []int
		inFlight int
		rec      record.Request
		heldQ    []held
		heldHead int
		stalled  int
		phases   record.Phases
		runErr   error
		keep     = cfg.KeepTokenTimes || cfg.StreamTokenTimes
		contents Contents
		segBuf   []simengine.Segment
		submit   func(slot int, now time.Duration)
		frontEnd simengine.FrontEndQueue
		feClock  = newFrontEndClock(frontEndRate(cfg.Engine))
		observe  func(slot int, at int64, index, n int, last bool, sp simengine.Phases)
	)
	contents, _ = cfg.Gen.(Contents)
	var sessions []session
	if cfg.Sessions > 0 {
		sessions = make([]session, cfg.Sessions)
	}
	accepting := func(t time.Duration) bool {
		return (cfg.Requests <= 0 || res.Issued < cfg.Requests) && (cfg.Duration <= 0 || t < cfg.Duration)
	}
	schedule := func(t time.Duration, user int) {
		if accepting(t) {
			q.Push(simengine.Event{Time: int64(t), Kind: evArrival, ID: int64(user)})
		}
	}
	if cfg.Arrivals != nil {
		if cfg.Ramp > 0 {
			cfg.Arrivals = rampArrivals{cfg.Arrivals, float64(cfg.Ramp)}
		}
		schedule(cfg.Arrivals.Next(), -1)
	} else {
		for u := 0; u < cfg.Concurrency; u++ {
			schedule(cfg.Client.Start+time.Duration(int64(cfg.Ramp)*int64(u)/int64(cfg.Concurrency)), u)
		}
	}
	warm := func(id int64, t time.Duration) bool {
		return id < int64(cfg.WarmupRequests) || t < cfg.Warmup
	}

	// send sends an issued request at now; the engine sees it after its
	// front-end cost (HTTP, tokenization), when submit runs.
	send := func(h held, now time.Duration) {
		var in, out, turn int
		var outputID uint64
		segBuf = segBuf[:0]
		if sessions != nil {
			st := &sessions[h.user]
			turn = st.done + 1
			t, _ := cfg.Turn(h.user, turn)
			in, out = st.history+t.InputTokens, t.OutputTokens
			segBuf = append(append(segBuf, st.segs...), simengine.Segment{ID: contentID(h.user, turn, false), Tokens: int32(t.InputTokens)})
			outputID = contentID(h.user, turn, true)
		} else if contents != nil {
			in, out, segBuf = contents.Content(h.id, segBuf)
		} else {
			in, out = cfg.Gen.Lengths(h.id)
		}
		var slot int
		if n := len(free); n > 0 {
			slot = free[n-1]
			free = free[:n-1]
		} else {
			pend = append(pend, pending{})
			slot = len(pend) - 1
		}
		inFlight++
		res.PeakInFlight = max(res.PeakInFlight, inFlight)
		p := &pend[slot]
		*p = pending{id: h.id, sched: h.sched, sent: now, in: in, out: out, inFlight: inFlight, user: h.user, times: p.times[:0], counts: p.counts[:0],
			segs: append(p.segs[:0], segBuf...), turn: turn, outputID: outputID} // kept until the front end hands it on
		if cfg.Class != nil {
			p.class, p.adapter = cfg.Class(h.id)
		}
		if c := eng.FrontEnd(h.id, in); !c.Zero() {
			// The front end's costs are spent in its own time (the
			// simulation's, unless steps slow it: frontEndClock).
			p.feRest = c
			done, last := frontEnd.Next(int64(feClock.at(int64(now))), &p.feRest)
			p.feDone, p.feMore = done, !last
			q.Push(simengine.Event{Time: feClock.when(float64(p.feDone), int64(now)), Kind: evSubmit, ID: int64(slot)})
			return
		}
		submit(slot, now)
	}
	submit = func(slot int, now time.Duration) {
		p := &pend[slot]
		p.engineAt = now
		err := eng.SubmitRequest(simengine.Request{ID: int64(slot), InputTokens: p.in, OutputTokens: p.out, At: int64(now),
			Content: p.segs, NoGapStats: warm(p.id, p.sched), OutputID: p.outputID, Adapter: p.adapter})
		if err == nil {
			return
		}
		h := held{id: p.id, sched: p.sched, user: p.user}
		in, out, sent := p.in, p.out, p.sent
		inFlight--
		free = append(free, slot)
		rec = record.Request{
			ID: h.id, Warmup: warm(h.id, h.sched), Scheduled: h.sched, Sent: sent, Done: now, StreamEnd: now,
			TokenSource: record.TokensFromSim, PromptTokensRequested: in, MaxTokens: out,
			InFlightAtSend: p.inFlight, ErrorMessage: err.Error(), Class: p.class,
		}
		if sessions != nil {
			rec.Session, rec.Turn = strconv.Itoa(h.user), p.turn
		}
		switch {
		case errors.Is(err, simengine.ErrQueueFull):
			res.Rejected++
			rec.HTTPStatus, rec.Error = 429, record.ErrRejected
		case errors.Is(err, simengine.ErrTooLong) && cfg.TooLongAsErrors:
			res.Failed++
			rec.HTTPStatus, rec.Error = 400, record.ErrHTTP4xx
		default:
			runErr = fmt.Errorf("sim: request %d: %w", h.id, err)
			return
		}
		onRecord(&rec)
		if sessions != nil && rec.Error == record.ErrHTTP4xx {
			sessions[h.user].over = true // its history outgrew the context: the conversation ends
		} else if h.user >= 0 {
			// A rejected closed-loop user retries after the next step; one
			// refused outright sends its next request a round trip later.
			retry := max(eng.Now(), int64(now)) + 1
			if rec.Error == record.ErrHTTP4xx {
				retry = int64(now + time.Millisecond)
			}
			q.Push(simengine.Event{Time: retry, Kind: evArrival, ID: int64(h.user)})
		}
		if len(heldQ) > heldHead {
			q.Push(simengine.Event{Time: int64(now), Priority: -1, Kind: evSlotFree})
		}
	}

	arrive := func(ev simengine.Event) {
		switch ev.Kind {
		case evChunk:
			if next, id, ok := thread.arrive(pend, int(ev.ID), ev.Time); ok {
				q.Push(simengine.Event{Time: next, Kind: evHandled, ID: int64(id)})
			}
			return
		case evHandled:
			slot := int(ev.ID)
			p := &pend[slot]
			index, n := p.handled, thread.taken
			p.handled += n
			more := p.chunks > 0
			observe(slot, ev.Time, index, n, p.handled == p.out, p.serverPhases)
			if next, id, ok := thread.done(pend, slot, more, ev.Time); ok {
				q.Push(simengine.Event{Time: next, Kind: evHandled, ID: int64(id)})
			}
			return
		}
		if ev.Kind == evSubmit {
			if p := &pend[ev.ID]; !feClock.done(float64(p.feDone), ev.Time) {
				// Steps ran meanwhile: the front end is not done yet.
				q.Push(simengine.Event{Time: feClock.when(float64(p.feDone), ev.Time), Kind: evSubmit, ID: ev.ID})
				return
			}
			if p := &pend[ev.ID]; p.feMore {
				// Its first turn is done: the rest queues behind every
				// request that joined the lane meanwhile.
				done, last := frontEnd.Next(p.feDone, &p.feRest)
				p.feDone, p.feMore = done, !last
				q.Push(simengine.Event{Time: feClock.when(float64(p.feDone), ev.Time), Kind: evSubmit, ID: ev.ID})
				return
			}
			submit(int(ev.ID), time.Duration(ev.Time))
			return
		}
		if ev.Kind == evDone {
			inFlight--
		}
		if ev.Kind == evDone || ev.Kind == evSlotFree {
			if heldHead < len(heldQ) && inFlight < cfg.MaxConcurrency {
				h := heldQ[heldHead]
				heldHead++
				if heldHead == len(heldQ) {
					heldQ, heldHead = heldQ[:0], 0
				}
				send(h, time.Duration(ev.Time))
			}
			return
		}
		t := time.Duration(ev.Time)
		if !accepting(t) {
			return
		}
		if sessions != nil {
			if st := &sessions[ev.ID]; st.over {
				return // the conversation is over
			}
			if _, ok := cfg.Turn(int(ev.ID), sessions[ev.ID].done+1); !ok {
				return
			}
		}
		h := held{id: res.Issued, sched: t, user: int(ev.ID)}
		res.Issued++
		res.Events++
		if cfg.MaxConcurrency > 0 && inFlight >= cfg.MaxConcurrency {
			heldQ = append(heldQ, h) // the client waits for a slot; lag is measured
		} else {
			send(h, t)
		}
		if cfg.Arrivals != nil {
			schedule(cfg.Arrivals.Next(), -1)
		}
	}

	// observe is the client seeing a chunk of n tokens from index of the
	// request in slot at at (the step end for an ideal client and server):
	// the chunk's record time, and with the last one the record.
	observe = func(slot int, at int64, index, n int, last bool, sp simengine.Phases) {
		p := &pend[slot]
		t := time.Duration(at)
		if index == 0 {
			p.first = t
		}
		if keep {
			p.times = append(p.times, t)
			if n != 1 || len(p.counts) > 0 {
				for len(p.counts) < len(p.times)-1 {
					p.counts = append(p.counts, 1)
				}
				p.counts = append(p.counts, int32(n))
			}
		}
		if !last {
			return
		}
		res.Completed++
		// The slot frees when the client has the last token, after any
		// arrival during the step and before any arrival at the same instant.
		q.Push(simengine.Event{Time: at, Priority: -1, Kind: evDone})
		ph := &phases
		if cfg.KeepTokenTimes {
			ph = new(record.Phases)
		}
		// The engine's phases, as vLLM reports them: the front end's time
		// (engineAt − sent) is in TTFT and E2E but in none of them.
		*ph = record.Phases{Queue: time.Duration(sp.Queue), Prefill: time.Duration(sp.Prefill), Decode: time.Duration(sp.Decode)}
		rec = record.Request{
			ID: p.id, Warmup: warm(p.id, p.sched), Scheduled: p.sched, Sent: p.sent,
			FirstToken: p.first, Done: t, StreamEnd: t,
			InputTokens: p.in, OutputTokens: p.out, TokenSource: record.TokensFromSim,
			PromptTokensRequested: p.in, MaxTokens: p.out, InFlightAtSend: p.inFlight,
			ServerPhases: ph, FinishReason: "length", Class: p.class,
		}
		if sessions != nil {
			rec.Session, rec.Turn = strconv.Itoa(p.user), p.turn
		}
		switch {
		case cfg.KeepTokenTimes:
			rec.TokenTimes = append([]time.Duration(nil), p.times...)
			if len(p.counts) > 0 {
				rec.TokenCounts = append([]int32(nil), p.counts...)
			}
		case cfg.StreamTokenTimes:
			rec.TokenTimes = p.times
			if len(p.counts) > 0 {
				rec.TokenCounts = p.counts
			}
		}
		if cfg.KeepTokenTimes {
			r := rec
			onRecord(&r)
		} else {
			onRecord(&rec)
		}
		free = append(free, slot)
		if sessions != nil {
			// The next turn repeats this prompt and its answer.
			st := &sessions[p.user]
			tt, _ := cfg.Turn(p.user, p.turn)
			st.segs = append(st.segs, simengine.Segment{ID: contentID(p.user, p.turn, false), Tokens: int32(tt.InputTokens)},
				simengine.Segment{ID: p.outputID, Tokens: int32(p.out)})
			st.history, st.done = p.in+p.out, p.turn
			if next, ok := cfg.Turn(p.user, p.turn+1); ok {
				schedule(t+next.Think+cfg.Client.Gap, p.user)
			}
		} else if p.user >= 0 {
			schedule(t+cfg.Client.Gap, p.user)
		}
	}
	emit := func(em simengine.Emission) {
		if thread.cost == 0 {
			observe(int(em.ID), em.Time, em.Index, 1, em.Finished, em.Phases)
			return
		}
		// The token reaches the thread (the client's, or the server's
		// loop), which handles it in its turn.
		if em.Finished {
			pend[em.ID].serverPhases = em.Phases
		}
		q.Push(simengine.Event{Time: em.Time, Kind: evChunk, ID: em.ID})
	}

	for {
		for {
			ev, ok := q.Peek()
			if !ok || ev.Time > eng.Now() {
				break
			}
			arrive(q.Pop())
			if runErr != nil {
				return finish(&res, eng), runErr
			}
		}
		if eng.HasWork() {
			dt := eng.Step(emit)
			feClock.step(eng.Now())
			if dt == 0 {
				// A step that preempted everything schedules nothing; the
				// next one admits. Two in a row would never end.
				if stalled++; stalled > 1 {
					return finish(&res, eng), fmt.Errorf("sim: engine made no progress at %v with %+v", time.Duration(eng.Now()), eng.Stats())
				}
				continue
			}
			stalled = 0
			res.Steps++
			if cfg.OnStep != nil {
				cfg.OnStep(eng.Stats())
			}
			if res.Steps&1023 == 0 && ctx.Err() != nil {
				return finish(&res, eng), ctx.Err()
			}
			continue
		}
		ev, ok := q.Peek()
		if !ok {
			break
		}
		eng.AdvanceTo(ev.Time)
		feClock.idle(eng.Now())
	}
	return finish(&res, eng), ctx.Err()
}

func finish(res *Result, eng *simengine.Engine) Result {
	res.Engine = eng.Stats()
	res.End = time.Duration(eng.Now())
	res.Tokens = res.Engine.OutputTokens
	res.Events += res.Steps + res.Tokens
	return *res
}

// Collect runs cfg and returns every record, each safe to keep.
func Collect(ctx context.Context, cfg Config) ([]record.Request, Result, error) {
	var recs []record.Request
	res, err := Run(ctx, cfg, func(r *record.Request) {
		c := *r
		if r.ServerPhases != nil && !cfg.KeepTokenTimes {
			p := *r.ServerPhases
			c.ServerPhases = &p
		}
		if cfg.StreamTokenTimes && !cfg.KeepTokenTimes {
			c.TokenTimes = append([]time.Duration(nil), r.TokenTimes...)
			if r.TokenCounts != nil {
				c.TokenCounts = append([]int32(nil), r.TokenCounts...)
			}
		}
		recs = append(recs, c)
	})
	return recs, res, err
}

// rampArrivals warps a steady arrival process so that its rate grows
// linearly from zero over the ramp R: with the cumulative intensity
// Λ(t) = t²/2R before R and t − R/2 after, an arrival at steady time s
// happens at t = √(2Rs) for s < R/2, else at s + R/2.
type rampArrivals struct {
	a      Arrivals
	rampNS float64
}

func (r rampArrivals) Next() time.Duration {
	s := float64(r.a.Next())
	if s < r.rampNS/2 {
		return time.Duration(math.Sqrt(2 * r.rampNS * s))
	}
	return time.Duration(s + r.rampNS/2)
}

// noLengths stands in for Gen in session runs, whose lengths come from Turn.
type noLengths struct{}

func (noLengths) Lengths(int64) (int, int) { return 1, 1 }
