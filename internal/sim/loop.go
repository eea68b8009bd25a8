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

// loop is one simulated run: the workload's requests through a router to
// one or more replicas (Run is a fleet of one) on one virtual clock. Its
// methods are the steps a request takes, in order:
//
//	arrive    an arrival or a closed-loop user's next request: issued now,
//	          or held in the client under MaxConcurrency
//	request   its content (a session's turn, a shared prefix or lengths)
//	route     the gateway's admission and the router's pick of a replica
//	frontEnd  the replica's front end (HTTP, tokenization) on its own clock
//	submit    the engine takes it, or refuse records why not (429, 400)
//	step      a replica's engine step, whose tokens come out through emit
//	emit      a token leaves the engine: to the client, through the client's
//	          one thread or the replica's streaming loop (chunk, handled)
//	observe   the client sees a chunk; with the last, the request is over
//	complete  its record, and a closed-loop user's or session's next turn
//	finish    the result: what every replica did
type loop struct {
	cfg      FleetConfig
	onRecord func(*record.Request)
	// direct hands a record over at its last token (Run, as it always
	// has) instead of at an event of that instant, which puts records of
	// several replicas in virtual-time order (RunFleet).
	direct bool
	names  bool // records name their replica
	pd     bool // disaggregated: prefill replicas, then decode replicas
	link   KVLink

	res      FleetResult
	reps     []replica
	rt       fleetRouter // the router (over the prefill pool when disaggregated)
	rtDecode fleetRouter // the decode pool's

	q        simengine.EventQueue
	reqs     []request // in flight; a slot index is its engine id
	free     []int
	inFlight int
	heldQ    []held // issued, waiting in the client for MaxConcurrency
	heldHead int
	// users is the closed loop's users, all pools together; poolEnd[p]
	// is the number of the first user past pool p (Config.Pools).
	users    int
	poolEnd  []int
	probing  int // probes in flight (Config.Probes), outside MaxConcurrency
	arrivals Arrivals
	contents Contents
	sessions []session
	segBuf   []simengine.Segment
	keep     bool // records carry token times
	// client is the client's one thread when it has a chunk cost;
	// serverLoop says each replica's streaming loop is modelled instead.
	client     clientThread
	serverLoop bool
	threaded   bool // tokens pass through a thread with a cost

	rec    record.Request // reused unless KeepTokenTimes
	phases record.Phases
	emitFn func(simengine.Emission) // emit, made once: a method value per step would allocate
	err    error
}

// replica is one engine behind the router, with its front end.
type replica struct {
	eng   *simengine.Engine
	fe    simengine.FrontEndQueue
	clock *frontEndClock // the front end's time on cores the engine shares
	loop  clientThread   // its streaming loop (ServerLoop)
	// outstanding: routed, not yet finished or refused.
	outstanding int
	// unprefilled is the KV blocks of requests routed here that have no
	// first token yet: the load the engine's KV usage does not show yet,
	// which a router adds so a burst does not all go to the replica that
	// looked emptiest when it began.
	unprefilled int
	frontEnd    int // in the front end, not yet in the engine
	stalled     int
	res         ReplicaResult
}

// catchUp brings an idle replica's engine and front-end clock to t.
func (r *replica) catchUp(t int64) {
	if t > r.eng.Now() {
		r.eng.AdvanceTo(t)
		r.clock.idle(t)
	}
}

// request is one request in flight; its slot index is its engine id on
// whichever replica it went to.
type request struct {
	id                 int64
	sched, sent, first time.Duration
	in, out, inFlight  int
	user               int    // closed-loop user or session; -1 in an open loop
	turn               int    // sessions: the turn (from 1)
	outputID           uint64 // sessions: names the answer for later turns
	class              string // Config.Class's name and adapter
	adapter            int32
	replica            int
	segs               []simengine.Segment // the prompt's content (reused per slot)
	times              []time.Duration     // reused per slot
	counts             []int32             // tokens per chunk, when a chunk carried other than one (reused per slot)
	phases             simengine.Phases    // the engine's, known at the last token
	feDone             int64               // front-end time at which its front end's turn is done (frontEndClock)
	feRest             simengine.FrontEndCost
	feMore             bool // the turn that ends at feDone is not its last
	// A thread with a chunk cost: chunks arrived and not yet taken up,
	// chunks handled, and whether the slot waits in the thread's turn.
	chunks, handled int
	waiting         bool
	// Disaggregated: stage 0 is the prefill, 1 the decode; pre holds the
	// prefill's phases and engineAt when the prefill replica got it.
	stage    int8
	prefill  int
	pre      simengine.Phases
	engineAt time.Duration
	session  string // for session affinity (and the decode pool's)
}

// held is an issued request not yet sent: the client waits for a slot
// under MaxConcurrency.
type held struct {
	id    int64
	sched time.Duration
	user  int
}

const (
	evArrival  = iota // ID: closed-loop user, -1 (open loop) or probeUser
	evSlotFree        // a refusal freed a slot: send the oldest held request
	evDone            // ID: slot (or -1 once its record is out); a request is over at this instant
	evSubmit          // ID: slot; a sent request clears the front end and reaches the engine
	evChunk           // ID: slot; a streamed token reaches its thread (client's or server loop's)
	evHandled         // ID: slot; the thread has handled one of its chunks
	evTransfer        // ID: slot; its prompt's KV reaches the decode side
)

// probeUser is a probe's user (Config.Probes): none, and no open-loop
// arrival either. doneProbe is evDone's ID for a probe whose record is out.
const (
	probeUser = -2
	doneProbe = -2
)

// newLoop checks cfg and builds its replicas.
func newLoop(cfg FleetConfig, onRecord func(*record.Request)) (*loop, error) {
	if cfg.Gen == nil && cfg.Sessions <= 0 {
		return nil, errors.New("sim: no workload lengths (Config.Gen)")
	}
	if cfg.Sessions > 0 {
		if cfg.Turn == nil || cfg.Arrivals != nil || cfg.Concurrency > 0 || len(cfg.Pools) > 0 {
			return nil, errors.New("sim: sessions need a turn source, and no arrivals, concurrency or user pools")
		}
		if cfg.Probes.RateRPS > 0 {
			return nil, errors.New("sim: probes beside sessions are not supported yet")
		}
		cfg.Concurrency = cfg.Sessions
		if cfg.Gen == nil {
			cfg.Gen = noLengths{}
		}
	}
	users := max(cfg.Concurrency, 0)
	poolEnd := []int{users}
	for _, n := range cfg.Pools {
		if n < 1 {
			return nil, fmt.Errorf("sim: a user pool of %d users; want at least 1", n)
		}
		users += n
		poolEnd = append(poolEnd, users)
	}
	switch {
	case (cfg.Arrivals == nil) == (users <= 0):
		return nil, errors.New("sim: give either arrivals (open loop) or a concurrency > 0 (closed loop), not both")
	case !(cfg.Probes.RateRPS >= 0) || math.IsInf(cfg.Probes.RateRPS, 0):
		return nil, fmt.Errorf("sim: probe rate %g; want probes per second >= 0", cfg.Probes.RateRPS)
	case cfg.Probes.RateRPS > 0 && cfg.Probes.Gen == nil:
		return nil, errors.New("sim: probes need their lengths (Probes.Gen)")
	case cfg.Ramp < 0 || cfg.MaxConcurrency < 0 || cfg.GatewayQueueLimit < 0:
		return nil, errors.New("sim: ramp, max concurrency and gateway queue limit must not be negative")
	case cfg.Requests <= 0 && cfg.Duration <= 0:
		return nil, errors.New("sim: give a number of requests or a duration")
	case cfg.ServerLoop.ChunkCost < 0:
		return nil, errors.New("sim: the server loop's chunk cost must not be negative")
	case cfg.ServerLoop.ChunkCost > 0 && cfg.Client.ChunkCost > 0:
		return nil, errors.New("sim: a server loop chunk cost and a client chunk cost are not supported together yet")
	}
	if err := cfg.Client.validate(users > 0); err != nil {
		return nil, err
	}
	l := &loop{cfg: cfg, onRecord: onRecord, keep: cfg.KeepTokenTimes || cfg.StreamTokenTimes, users: users, poolEnd: poolEnd,
		client: clientThread{cost: int64(cfg.Client.ChunkCost), current: -1}, serverLoop: cfg.ServerLoop.ChunkCost > 0}
	l.threaded = l.client.cost > 0 || l.serverLoop
	if l.threaded && cfg.OnGaps != nil {
		return nil, errors.New("sim: OnGaps reports the engine's inter-token gaps, not those seen through a client or server loop with a chunk cost; use token times")
	}
	if l.onRecord == nil {
		l.onRecord = func(*record.Request) {}
	}
	l.emitFn = l.emit
	engines, err := l.engines()
	if err != nil {
		return nil, err
	}
	router := cfg.Router
	if router == "" {
		router = RoundRobin
	}
	if !validRouter(router) {
		return nil, fmt.Errorf("sim: unknown router %q (want one of %v)", router, Routers)
	}
	l.reps = make([]replica, len(engines))
	for i, ec := range engines {
		// The thread must handle every token when it has a cost per chunk.
		ec.EdgeEmissionsOnly = !l.keep && !l.threaded
		if cfg.OnGaps != nil {
			ec.OnGaps = func(gap int64, n int) { cfg.OnGaps(time.Duration(gap), n) }
		}
		eng, err := simengine.NewEngine(ec)
		if err != nil {
			if len(engines) == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		name := "r" + strconv.Itoa(i)
		if l.pd {
			name = "p" + strconv.Itoa(i)
			if i >= cfg.Prefill {
				name = "d" + strconv.Itoa(i-cfg.Prefill)
			}
		}
		l.reps[i] = replica{eng: eng, clock: newFrontEndClock(frontEndRate(ec)), res: ReplicaResult{Name: name},
			loop: clientThread{cost: int64(cfg.ServerLoop.ChunkCost), merge: true, current: -1}}
	}
	l.rt = fleetRouter{policy: router, reps: l.reps}
	if l.pd {
		l.rt.reps = l.reps[:cfg.Prefill]
		l.rtDecode = fleetRouter{policy: router, reps: l.reps[cfg.Prefill:]}
	}
	l.contents, _ = cfg.Gen.(Contents)
	l.rt.sessions, _ = cfg.Gen.(Sessions)
	l.rtDecode.sessions = l.rt.sessions
	if cfg.Sessions > 0 {
		l.sessions = make([]session, cfg.Sessions)
	}
	return l, nil
}

// engines is each replica's engine config.
func (l *loop) engines() ([]simengine.Config, error) {
	cfg := &l.cfg
	l.pd = cfg.Prefill > 0 || cfg.Decode > 0
	if !l.pd {
		if len(cfg.Replicas) > 0 {
			return cfg.Replicas, nil
		}
		if cfg.Count < 1 {
			return nil, errors.New("sim: a fleet needs at least one replica")
		}
		return repeat(cfg.Engine, cfg.Count), nil
	}
	l.link = cfg.KVLink
	if l.link == (KVLink{}) {
		l.link = DefaultKVLink
	}
	switch {
	case cfg.Prefill < 1 || cfg.Decode < 1:
		return nil, errors.New("sim: a disaggregated fleet needs at least one prefill and one decode replica")
	case !(l.link.GBps > 0 && l.link.Latency >= 0):
		return nil, errors.New("sim: the KV link needs a positive bandwidth and a latency >= 0")
	}
	return repeat(cfg.Engine, cfg.Prefill+cfg.Decode), nil
}

func repeat(c simengine.Config, n int) []simengine.Config {
	out := make([]simengine.Config, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// run simulates until every request is over, the context is cancelled or
// a request stops the run. Of the replicas with work, the one furthest
// behind steps next; an event at or before its clock comes first. When no
// replica has work, every replica idles to the next event.
func (l *loop) run(ctx context.Context) error {
	cfg := &l.cfg
	if cfg.Arrivals != nil {
		l.arrivals = cfg.Arrivals
		if cfg.Ramp > 0 {
			l.arrivals = rampArrivals{l.arrivals, float64(cfg.Ramp)}
		}
		l.schedule(l.arrivals.Next(), -1)
	} else {
		for u := 0; u < l.users; u++ {
			l.schedule(cfg.Client.Start+time.Duration(int64(cfg.Ramp)*int64(u)/int64(l.users)), u)
		}
	}
	if cfg.Probes.RateRPS > 0 {
		l.schedule(0, probeUser)
	}
	for {
		next := -1
		for i := range l.reps {
			if l.reps[i].eng.HasWork() && (next < 0 || l.reps[i].eng.Now() < l.reps[next].eng.Now()) {
				next = i
			}
		}
		if ev, ok := l.q.Peek(); ok && (next < 0 || ev.Time <= l.reps[next].eng.Now()) {
			if next < 0 {
				for i := range l.reps {
					l.reps[i].catchUp(ev.Time)
				}
			}
			l.handle(l.q.Pop())
			if l.err != nil {
				return l.err
			}
			continue
		}
		if next < 0 {
			return ctx.Err()
		}
		if err := l.step(next); err != nil {
			return err
		}
		if l.res.Steps&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// handle dispatches one event.
func (l *loop) handle(ev simengine.Event) {
	t := time.Duration(ev.Time)
	switch ev.Kind {
	case evArrival:
		l.arrive(t, int(ev.ID))
	case evSubmit:
		l.frontEndTurn(int(ev.ID), ev.Time)
	case evChunk:
		slot := int(ev.ID)
		if next, id, ok := l.threadOf(slot).arrive(l.reqs, slot, ev.Time); ok {
			l.q.Push(simengine.Event{Time: next, Kind: evHandled, ID: int64(id)})
		}
	case evHandled:
		slot := int(ev.ID)
		th := l.threadOf(slot)
		p := &l.reqs[slot]
		index, n := p.handled, th.taken
		p.handled += n
		more := p.chunks > 0
		l.observe(slot, ev.Time, index, n, p.handled == p.out)
		if next, id, ok := th.done(l.reqs, slot, more, ev.Time); ok {
			l.q.Push(simengine.Event{Time: next, Kind: evHandled, ID: int64(id)})
		}
	case evTransfer:
		l.transfer(int(ev.ID), t)
	case evDone:
		probe := ev.ID == doneProbe
		if ev.ID >= 0 {
			probe = l.reqs[ev.ID].user == probeUser
			l.complete(int(ev.ID), t)
		}
		l.inFlight--
		if probe {
			l.probing--
		}
		l.sendHeld(t)
	case evSlotFree:
		l.sendHeld(t)
	}
}

func (l *loop) accepting(t time.Duration) bool {
	return l.res.Capped == "" && (l.cfg.Requests <= 0 || l.res.Issued < l.cfg.Requests) && (l.cfg.Duration <= 0 || t < l.cfg.Duration)
}

// capped stops the run issuing when it reaches MaxRequests or MaxInFlight
// (probes and held requests counted: all are in memory).
func (l *loop) capped() bool {
	switch {
	case l.res.Issued >= MaxRequests:
		l.res.Capped = CappedRequests
	case l.inFlight+len(l.heldQ)-l.heldHead >= MaxInFlight:
		l.res.Capped = CappedInFlight
	}
	return l.res.Capped != ""
}

// schedule queues an arrival (user -1) or a closed-loop user's next request.
func (l *loop) schedule(t time.Duration, user int) {
	if l.accepting(t) {
		l.q.Push(simengine.Event{Time: int64(t), Kind: evArrival, ID: int64(user)})
	}
}

func (l *loop) warm(id int64, t time.Duration) bool {
	return id < int64(l.cfg.WarmupRequests) || t < l.cfg.Warmup
}

// arrive issues a request at t: sent now, or held while MaxConcurrency
// requests are in flight (the client sends it late: lag is measured).
func (l *loop) arrive(t time.Duration, user int) {
	if !l.accepting(t) {
		return
	}
	if user == probeUser {
		l.probe(t)
		return
	}
	if l.sessions != nil {
		if l.sessions[user].over {
			return // its history outgrew the context: the conversation is over
		}
		if _, ok := l.cfg.Turn(user, l.sessions[user].done+1); !ok {
			return
		}
	}
	if l.capped() {
		return
	}
	h := held{id: l.res.Issued, sched: t, user: user}
	l.res.Issued++
	l.res.Events++
	if l.cfg.Pool != nil && user >= 0 && l.sessions == nil {
		l.cfg.Pool(h.id, l.poolOf(user))
	}
	if l.cfg.MaxConcurrency > 0 && l.inFlight-l.probing >= l.cfg.MaxConcurrency {
		l.heldQ = append(l.heldQ, h)
	} else {
		l.send(h, t)
	}
	if l.arrivals != nil {
		l.schedule(l.arrivals.Next(), -1)
	}
}

// poolOf is the pool of closed-loop user u (0: Concurrency's).
func (l *loop) poolOf(u int) int {
	p := 0
	for p < len(l.poolEnd) && u >= l.poolEnd[p] {
		p++
	}
	return p
}

// probe sends probe k at t, k/rate from the start as loadgen's constant
// schedule, and schedules the next.
func (l *loop) probe(t time.Duration) {
	k := l.res.Probes
	l.res.Probes++
	l.res.Events++
	l.send(held{id: ProbeIDBase + k, sched: t, user: probeUser}, t)
	l.schedule(time.Duration(float64(k+1)/l.cfg.Probes.RateRPS*float64(time.Second)), probeUser)
}

// sendHeld sends the oldest held request if a slot is free.
func (l *loop) sendHeld(now time.Duration) {
	if l.heldHead < len(l.heldQ) && l.inFlight-l.probing < l.cfg.MaxConcurrency {
		h := l.heldQ[l.heldHead]
		if l.heldHead++; l.heldHead == len(l.heldQ) {
			l.heldQ, l.heldHead = l.heldQ[:0], 0
		}
		l.send(h, now)
	}
}

// send is the client sending an issued request at now: its content, its
// route, and its replica's front end.
func (l *loop) send(h held, now time.Duration) {
	session := l.routeSession(h)
	in, out, turn, outputID := l.request(h)
	ri, ok := l.route(h, now, in, out, session)
	if !ok {
		return
	}
	var slot int
	if n := len(l.free); n > 0 {
		slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		l.reqs = append(l.reqs, request{})
		slot = len(l.reqs) - 1
	}
	l.inFlight++
	if h.user == probeUser {
		l.probing++
	}
	l.res.PeakInFlight = max(l.res.PeakInFlight, l.inFlight)
	r := &l.reps[ri]
	r.outstanding++
	r.unprefilled += blocksOf(in)
	r.res.Routed++
	p := &l.reqs[slot]
	*p = request{id: h.id, sched: h.sched, sent: now, in: in, out: out, inFlight: l.inFlight, user: h.user, replica: ri,
		times: p.times[:0], counts: p.counts[:0], segs: append(p.segs[:0], l.segBuf...), turn: turn, outputID: outputID, session: session}
	p.class, p.adapter = l.classOf(h)
	l.frontEnd(slot, now)
}

// routeSession is the session a session-affinity router keys on: the
// workload's (a trace's session ids, asked before the content) or the
// simulated conversation's.
func (l *loop) routeSession(h held) string {
	if l.rt.policy != SessionAffinity || h.user == probeUser {
		return ""
	}
	if l.sessions != nil {
		return "s" + strconv.Itoa(h.user)
	}
	if l.rt.sessions != nil {
		return l.rt.sessions.Session(h.id)
	}
	return ""
}

// request is the content of the request h: a session's next turn after its
// history, a workload's named content, or bare lengths. The content is
// left in segBuf.
func (l *loop) request(h held) (in, out, turn int, outputID uint64) {
	l.segBuf = l.segBuf[:0]
	switch {
	case l.sessions != nil:
		st := &l.sessions[h.user]
		turn = st.done + 1
		t, _ := l.cfg.Turn(h.user, turn)
		in, out = st.history+t.InputTokens, t.OutputTokens
		l.segBuf = append(append(l.segBuf, st.segs...), simengine.Segment{ID: contentID(h.user, turn, false), Tokens: int32(t.InputTokens)})
		outputID = contentID(h.user, turn, true)
	case h.user == probeUser:
		in, out = l.cfg.Probes.Gen.Lengths(h.id - ProbeIDBase)
	case l.contents != nil:
		in, out, l.segBuf = l.contents.Content(h.id, l.segBuf)
	default:
		in, out = l.cfg.Gen.Lengths(h.id)
	}
	return in, out, turn, outputID
}

// classOf is h's traffic class and adapter: a probe's, or Config.Class's.
func (l *loop) classOf(h held) (string, int32) {
	switch {
	case h.user == probeUser:
		return record.ProbeClass, 0
	case l.cfg.Class != nil:
		return l.cfg.Class(h.id)
	}
	return "", 0
}

// route admits the request at the gateway (or refuses it, 429) and picks
// its replica.
func (l *loop) route(h held, now time.Duration, in, out int, session string) (int, bool) {
	if lim := l.cfg.GatewayQueueLimit; lim > 0 {
		if w := l.rt.waiting(); w >= lim {
			l.res.GatewayRejected++
			turn := 0
			if l.sessions != nil {
				turn = l.sessions[h.user].done + 1
			}
			cls, _ := l.classOf(h)
			l.refuse(&request{id: h.id, sched: h.sched, sent: now, in: in, out: out, inFlight: l.inFlight + 1, user: h.user, turn: turn, class: cls},
				-1, now, fmt.Errorf("%w: gateway: %d requests waiting in the fleet (limit %d)", simengine.ErrQueueFull, w, lim))
			return 0, false
		}
	}
	l.rt.session = session
	return l.rt.pick(h.id, in, l.segBuf), true
}

// frontEnd starts the request in slot through its replica's front end; the
// engine sees it after the front end's costs (HTTP, tokenization), spent
// in the front end's own time (frontEndClock), when submit runs.
func (l *loop) frontEnd(slot int, now time.Duration) {
	p := &l.reqs[slot]
	r := &l.reps[p.replica]
	c := r.eng.FrontEnd(p.id, p.in)
	if c.Zero() {
		l.submit(slot, now)
		return
	}
	r.frontEnd++
	p.feRest = c
	done, last := r.fe.Next(int64(r.clock.at(int64(now))), &p.feRest)
	p.feDone, p.feMore = done, !last
	l.q.Push(simengine.Event{Time: r.clock.when(float64(p.feDone), int64(now)), Kind: evSubmit, ID: int64(slot)})
}

// frontEndTurn is the end, at virtual time at, of a front-end turn of the
// request in slot: not yet (steps slowed the front end), its next turn, or
// on to the engine.
func (l *loop) frontEndTurn(slot int, at int64) {
	p := &l.reqs[slot]
	r := &l.reps[p.replica]
	if !r.clock.done(float64(p.feDone), at) {
		l.q.Push(simengine.Event{Time: r.clock.when(float64(p.feDone), at), Kind: evSubmit, ID: int64(slot)})
		return
	}
	if p.feMore {
		// Its first turn is done: the rest queues behind every request
		// that joined the lane meanwhile.
		done, last := r.fe.Next(p.feDone, &p.feRest)
		p.feDone, p.feMore = done, !last
		l.q.Push(simengine.Event{Time: r.clock.when(float64(p.feDone), at), Kind: evSubmit, ID: int64(slot)})
		return
	}
	r.frontEnd--
	l.submit(slot, time.Duration(at))
}

// submit hands the request in slot to its replica's engine (a prefill
// replica computes the prompt and one token; a decode replica gets the
// prompt's KV), or refuses it.
func (l *loop) submit(slot int, now time.Duration) {
	p := &l.reqs[slot]
	r := &l.reps[p.replica]
	r.catchUp(int64(now))
	out, moved := p.out, 0
	switch {
	case l.pd && p.stage == 0:
		out = 1
	case l.pd:
		moved = p.in - 1
	}
	if p.stage == 0 {
		p.engineAt = now
	}
	err := r.eng.SubmitRequest(simengine.Request{ID: int64(slot), InputTokens: p.in, OutputTokens: out, At: int64(now),
		Content: p.segs, NoGapStats: l.warm(p.id, p.sched) || (l.pd && p.stage == 0), TransferredTokens: moved,
		OutputID: p.outputID, Adapter: p.adapter})
	if err == nil {
		return
	}
	l.inFlight--
	if p.user == probeUser {
		l.probing--
	}
	r.outstanding--
	r.unprefilled -= blocksOf(p.in)
	if errors.Is(err, simengine.ErrQueueFull) {
		r.res.Rejected++
	}
	l.free = append(l.free, slot)
	l.refuse(p, p.replica, now, err)
}

// refuse records a request that never reached an engine: rejected by the
// gateway (rep -1) or a replica's queue (429), or too long (400); any
// other error stops the run.
func (l *loop) refuse(p *request, rep int, now time.Duration, err error) {
	rec := &l.rec
	*rec = record.Request{
		ID: p.id, Warmup: l.warm(p.id, p.sched), Scheduled: p.sched, Sent: p.sent, Done: now, StreamEnd: now,
		TokenSource: record.TokensFromSim, PromptTokensRequested: p.in, MaxTokens: p.out,
		InFlightAtSend: p.inFlight, ErrorMessage: err.Error(), Class: p.class,
	}
	if l.names && rep >= 0 {
		rec.Replica = l.reps[rep].res.Name
	}
	if l.sessions != nil {
		rec.Session, rec.Turn = strconv.Itoa(p.user), p.turn
	}
	switch {
	case errors.Is(err, simengine.ErrQueueFull):
		l.res.Rejected++
		rec.HTTPStatus, rec.Error = 429, record.ErrRejected
	case errors.Is(err, simengine.ErrTooLong) && l.cfg.TooLongAsErrors:
		l.res.Failed++
		rec.HTTPStatus, rec.Error = 400, record.ErrHTTP4xx
	default:
		l.err = fmt.Errorf("sim: request %d: %w", p.id, err)
		return
	}
	user := p.user
	l.onRecord(rec)
	if l.sessions != nil && rec.Error == record.ErrHTTP4xx {
		l.sessions[user].over = true // its history outgrew the context: the conversation ends
	} else if user >= 0 {
		// A rejected closed-loop user retries after the next step of the
		// replica that refused it; one refused outright (or by the
		// gateway) sends its next request a round trip later.
		retry := int64(now + time.Millisecond)
		if rep >= 0 && rec.Error == record.ErrRejected {
			retry = max(l.reps[rep].eng.Now(), int64(now)) + 1
		}
		l.q.Push(simengine.Event{Time: retry, Kind: evArrival, ID: int64(user)})
	}
	if len(l.heldQ) > l.heldHead {
		l.q.Push(simengine.Event{Time: int64(now), Priority: -1, Kind: evSlotFree})
	}
}

// step runs one engine step of replica i.
func (l *loop) step(i int) error {
	r := &l.reps[i]
	dt := r.eng.Step(l.emitFn)
	r.clock.step(r.eng.Now())
	if dt == 0 {
		// A step that preempted everything schedules nothing; the next one
		// admits. Two in a row would never end.
		if r.stalled++; r.stalled > 1 {
			return fmt.Errorf("sim: replica %s made no progress at %v with %+v", r.res.Name, time.Duration(r.eng.Now()), r.eng.Stats())
		}
		return nil
	}
	r.stalled = 0
	l.res.Steps++
	if l.cfg.OnStep != nil {
		st := r.eng.Stats()
		if len(l.reps) > 1 {
			st = fleetKVStats(st, l.reps)
		}
		l.cfg.OnStep(st)
	}
	return nil
}

// emit is a token leaving an engine at the end of its step.
func (l *loop) emit(em simengine.Emission) {
	p := &l.reqs[em.ID]
	if em.Index == 0 {
		l.reps[p.replica].unprefilled -= blocksOf(p.in)
	}
	if l.pd && p.stage == 0 {
		if em.Finished { // the prefill's one token, not sent: the KV goes to a decode replica
			p.pre, p.prefill = em.Phases, p.replica
			l.q.Push(simengine.Event{Time: em.Time + l.link.transferNS(l.cfg.Engine.Model, l.cfg.Engine.TP, p.in), Kind: evTransfer, ID: em.ID})
		}
		return
	}
	if em.Finished {
		p.phases = em.Phases
	}
	if !l.threaded {
		l.observe(int(em.ID), em.Time, em.Index, 1, em.Finished)
		return
	}
	// The token reaches the thread (the client's, or the replica's
	// streaming loop), which handles it in its turn.
	l.q.Push(simengine.Event{Time: em.Time, Kind: evChunk, ID: em.ID})
}

// threadOf is the thread the tokens of the request in slot pass through.
func (l *loop) threadOf(slot int) *clientThread {
	if l.serverLoop {
		return &l.reps[l.reqs[slot].replica].loop
	}
	return &l.client
}

// transfer is a prompt's KV reaching the decode side: the prefill replica
// is done with it, a decode replica takes it.
func (l *loop) transfer(slot int, t time.Duration) {
	p := &l.reqs[slot]
	pr := &l.reps[p.prefill]
	pr.outstanding--
	pr.res.Completed++
	l.rtDecode.session = p.session
	di := l.cfg.Prefill + l.rtDecode.pick(p.id, p.in, p.segs)
	d := &l.reps[di]
	d.outstanding++
	d.unprefilled += blocksOf(p.in)
	d.res.Routed++
	p.replica, p.stage = di, 1
	l.submit(slot, t)
}

// observe is the client seeing a chunk of n tokens from index of the
// request in slot at at (the step end for an ideal client and server):
// the chunk's time, and with the last one the request is over.
func (l *loop) observe(slot int, at int64, index, n int, last bool) {
	p := &l.reqs[slot]
	t := time.Duration(at)
	if index == 0 {
		p.first = t
	}
	if l.keep {
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
	done := int64(-1)
	if p.user == probeUser {
		done = doneProbe
	} else {
		l.res.Completed++
	}
	// Its slot in flight frees when the client has the last token, after
	// any arrival during the step and before any arrival at that instant.
	if l.direct {
		l.q.Push(simengine.Event{Time: at, Priority: -1, Kind: evDone, ID: done})
		l.complete(slot, t)
		return
	}
	l.q.Push(simengine.Event{Time: at, Priority: -1, Kind: evDone, ID: int64(slot)})
}

// complete hands over the record of the request in slot, which ended at t,
// frees its slot and starts its user's next request or session's next turn.
func (l *loop) complete(slot int, t time.Duration) {
	p := &l.reqs[slot]
	r := &l.reps[p.replica]
	r.outstanding--
	r.res.Completed++
	ph := &l.phases
	if l.cfg.KeepTokenTimes {
		ph = new(record.Phases)
	}
	// The engine's phases, as vLLM reports them: the front end's time
	// (engineAt − sent) is in TTFT and E2E but in none of them.
	*ph = record.Phases{Queue: time.Duration(p.phases.Queue), Prefill: time.Duration(p.phases.Prefill), Decode: time.Duration(p.phases.Decode)}
	rec := &l.rec
	*rec = record.Request{
		ID: p.id, Warmup: l.warm(p.id, p.sched), Scheduled: p.sched, Sent: p.sent,
		FirstToken: p.first, Done: t, StreamEnd: t,
		InputTokens: p.in, OutputTokens: p.out, TokenSource: record.TokensFromSim,
		PromptTokensRequested: p.in, MaxTokens: p.out, InFlightAtSend: p.inFlight,
		ServerPhases: ph, FinishReason: "length", Class: p.class,
	}
	if l.names {
		rec.Replica = r.res.Name
	}
	if l.pd {
		// Queued at the prefill replica; "prefill" runs to the first token
		// from the decode replica (the transfer and the decode replica's
		// wait included), so the phases still add up.
		ph.Queue = time.Duration(p.pre.Queue)
		ph.Prefill = p.first - p.engineAt - ph.Queue
		rec.Replica = l.reps[p.prefill].res.Name + "/" + r.res.Name
	}
	if l.sessions != nil {
		rec.Session, rec.Turn = strconv.Itoa(p.user), p.turn
	}
	switch {
	case l.cfg.KeepTokenTimes:
		rec.TokenTimes = append([]time.Duration(nil), p.times...)
		if len(p.counts) > 0 {
			rec.TokenCounts = append([]int32(nil), p.counts...)
		}
		c := *rec
		rec = &c
	case l.cfg.StreamTokenTimes:
		rec.TokenTimes = p.times
		if len(p.counts) > 0 {
			rec.TokenCounts = p.counts
		}
	}
	l.onRecord(rec)
	l.free = append(l.free, slot)
	switch {
	case l.sessions != nil:
		// The next turn repeats this prompt and its answer.
		st := &l.sessions[p.user]
		tt, _ := l.cfg.Turn(p.user, p.turn)
		st.segs = append(st.segs, simengine.Segment{ID: contentID(p.user, p.turn, false), Tokens: int32(tt.InputTokens)},
			simengine.Segment{ID: p.outputID, Tokens: int32(p.out)})
		st.history, st.done = p.in+p.out, p.turn
		if next, ok := l.cfg.Turn(p.user, p.turn+1); ok {
			l.schedule(t+next.Think+l.cfg.Client.Gap, p.user)
		}
	case p.user >= 0:
		l.schedule(t+l.cfg.Client.Gap, p.user)
	}
}

// finish is the result: with one replica its engine's own stats, with
// several their sums (KV blocks included).
func (l *loop) finish() FleetResult {
	res := &l.res
	res.Replicas = res.Replicas[:0]
	var sum simengine.EngineStats
	for i := range l.reps {
		s := l.reps[i].eng.Stats()
		l.reps[i].res.Engine = s
		res.Replicas = append(res.Replicas, l.reps[i].res)
		res.End = max(res.End, time.Duration(s.Now))
		sum.Submitted += s.Submitted
		sum.Rejected += s.Rejected
		sum.Finished += s.Finished
		sum.Preemptions += s.Preemptions
		sum.Steps += s.Steps
		sum.PrefillTokens += s.PrefillTokens
		sum.OutputTokens += s.OutputTokens
		sum.BusyNS += s.BusyNS
		sum.KVBlocksTotal += s.KVBlocksTotal
		sum.KVBlocksUsed += s.KVBlocksUsed
		sum.KVCapacityTokens += s.KVCapacityTokens
		sum.PrefixCacheQueries += s.PrefixCacheQueries
		sum.PrefixCacheHits += s.PrefixCacheHits
		sum.PrefixCachedBlocks += s.PrefixCachedBlocks
		sum.Running += s.Running
		sum.Waiting += s.Waiting
		sum.GPUs += s.GPUs
		// The per-GPU step figures are not summed: replicas may differ.
		sum.EnergyJ += s.EnergyJ
	}
	// A replica whose last step ended before the run did idles to its end.
	for i := range res.Replicas {
		s := &res.Replicas[i].Engine
		if s.IdlePowerW > 0 && int64(res.End) > s.Now {
			extra := float64(s.GPUs) * s.IdlePowerW * float64(int64(res.End)-s.Now) / 1e9
			s.EnergyJ += extra
			sum.EnergyJ += extra
		}
		sum.IdlePowerW = max(sum.IdlePowerW, s.IdlePowerW)
	}
	if sum.KVBlocksTotal > 0 {
		sum.KVUsage = float64(sum.KVBlocksUsed) / float64(sum.KVBlocksTotal)
	}
	sum.Now = int64(res.End)
	if len(l.reps) == 1 {
		sum = res.Replicas[0].Engine
	}
	res.Engine = sum
	res.Tokens = sum.OutputTokens
	res.Events += res.Steps + res.Tokens
	return *res
}
