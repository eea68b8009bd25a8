package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
)

// A fleet is several unchanged engines (replicas) behind a router, on one
// virtual clock: every arrival is routed at the instant it arrives, from
// what the router can see then (requests outstanding per replica, KV
// usage, cached prefixes), and goes through that replica's own front end
// to its engine. All replicas' steps and the workload's events form one
// order (the earliest first; an event before a step at the same instant;
// replicas by index), so a run is deterministic per seed.

// Router policies.
const (
	RoundRobin       = "round-robin"       // replicas in turn
	LeastOutstanding = "least-outstanding" // fewest requests routed and not finished
	LeastKV          = "least-kv"          // lowest KV-cache usage (with prompts routed but not yet prefilled), then fewest outstanding
	PrefixAffinity   = "prefix-affinity"   // llm-d's weighted scorers: cached prefix 3, queue 2, KV 2
	SessionAffinity  = "session-affinity"  // one replica per session (hash of the session)
)

// Routers lists the router policies.
var Routers = []string{RoundRobin, LeastOutstanding, LeastKV, PrefixAffinity, SessionAffinity}

// Sessions is implemented by workloads whose requests belong to
// conversations (a trace's session ids: *workload.TraceStream): Session
// names request i's session ("" = none), asked before its content. Without
// it, session affinity keys on the prompt's first shared segment (its
// prefix group), and requests with neither go round robin.
type Sessions interface {
	Session(i int64) string
}

// FleetConfig is one simulated run against a fleet.
type FleetConfig struct {
	Config // the workload and the run's limits; Engine is every replica's engine unless Replicas is set
	// Replicas gives each replica's engine (mixed fleets); without it the
	// fleet is Count copies of Config.Engine.
	Replicas []simengine.Config
	Count    int
	Router   string // one of Routers; "" = round robin
	// GatewayQueueLimit rejects an arrival (HTTP 429 at the gateway) when
	// the fleet's waiting requests — in the replicas' queues and front
	// ends — number this many; 0 = no gateway admission control.
	GatewayQueueLimit int
	// Prefill and Decode, both > 0, disaggregate the fleet: Prefill
	// replicas compute prompts, Decode replicas generate, and each
	// request's prompt KV moves from one to the other over KVLink. Count
	// and Replicas are unused then; both pools run Config.Engine, and
	// Router picks within each pool.
	Prefill, Decode int
	KVLink          KVLink // zero: DefaultKVLink
}

// KVLink is the path a request's KV cache takes from a prefill replica to
// a decode replica: each GPU of the prefill replica sends its shard at
// GBps, after a fixed Latency per request.
type KVLink struct {
	GBps    float64
	Latency time.Duration
}

// DefaultKVLink assumes one 400 Gb/s RDMA NIC per GPU (ConnectX-7, as on
// DGX/HGX H100 systems: 50 GB/s) and 1 ms per request for the hand-off
// (the proxy's call to the decode replica and the transfer's setup;
// RDMA's own latency is microseconds).
var DefaultKVLink = KVLink{GBps: 50, Latency: time.Millisecond}

// transferNS is how long tokens of KV take over the link from a replica
// of tp GPUs.
func (l KVLink) transferNS(m simengine.Model, tp, tokens int) int64 {
	return int64(l.Latency) + int64(float64(tokens)*m.KVBytesPerToken(tp)/(l.GBps*1e9)*1e9)
}

// ReplicaResult is what one replica did.
type ReplicaResult struct {
	Name                        string
	Routed, Completed, Rejected int64 // rejected by its own queue limit
	Engine                      simengine.EngineStats
}

// FleetResult says what a fleet run did: Result sums the replicas (its
// Engine counters are the replicas' sums, KV blocks included).
type FleetResult struct {
	Result
	GatewayRejected int64
	Replicas        []ReplicaResult
}

// PrefixHitRate is the fleet's prefix-cache hit rate in prompt tokens (0
// when nothing was queried).
func (r FleetResult) PrefixHitRate() float64 {
	if r.Engine.PrefixCacheQueries == 0 {
		return 0
	}
	return float64(r.Engine.PrefixCacheHits) / float64(r.Engine.PrefixCacheQueries)
}

type replica struct {
	eng         *simengine.Engine
	fe          simengine.FrontEndQueue
	outstanding int // routed, not yet finished or refused
	// unprefilled is the KV blocks of requests routed here that have no
	// first token yet: the load the engine's KV usage does not show yet,
	// which a router adds so a burst does not all go to the replica that
	// looked emptiest when it began.
	unprefilled int
	frontEnd    int // in the front end, not yet in the engine
	stalled     int
	res         ReplicaResult
}

// fleetReq is one request in flight; its slot index is its engine id on
// whichever replica it went to.
type fleetReq struct {
	id                 int64
	sched, sent, first time.Duration
	in, out, inFlight  int
	user               int
	replica            int
	class              string // Config.Class's name and LoRA adapter
	adapter            int32
	segs               []simengine.Segment
	times              []time.Duration
	phases             simengine.Phases
	feRest             simengine.FrontEndCost // its front end's turns yet to come (FrontEndQueue.Next)
	feMore             bool                   // its front-end turn under way is not its last
	// Disaggregated: stage 0 is the prefill, 1 the decode; pre holds the
	// prefill's phases and engineAt when the prefill replica got it.
	stage    int8
	prefill  int
	pre      simengine.Phases
	engineAt time.Duration
	session  string // for the decode pool's session affinity
}

// RunFleet simulates cfg against a fleet, calling onRecord once per
// finished or rejected request in virtual-time order, each record naming
// its replica (Replica "r0", "r1", …; empty for a gateway rejection). The
// record is reused unless KeepTokenTimes is set. Config.MaxConcurrency is
// not supported with a fleet; Config.OnStep sees, after each replica's
// step, that replica's stats with the KV usage of the whole fleet (every
// replica's blocks together).
func RunFleet(ctx context.Context, cfg FleetConfig, onRecord func(*record.Request)) (FleetResult, error) {
	var res FleetResult
	switch {
	case cfg.Gen == nil:
		return res, errors.New("sim: no workload lengths (Config.Gen)")
	case (cfg.Arrivals == nil) == (cfg.Concurrency <= 0):
		return res, errors.New("sim: give either arrivals (open loop) or a concurrency > 0 (closed loop), not both")
	case cfg.Ramp < 0 || cfg.GatewayQueueLimit < 0:
		return res, errors.New("sim: ramp and gateway queue limit must not be negative")
	case cfg.MaxConcurrency > 0:
		return res, errors.New("sim: a client-side max concurrency is not supported with a fleet (use a gateway queue limit)")
	case cfg.Client != (Client{}):
		return res, errors.New("sim: a client model (Config.Client) is not supported with a fleet yet")
	case cfg.ServerLoop != (ServerLoop{}):
		return res, errors.New("sim: a server loop model (Config.ServerLoop) is not supported with a fleet yet")
	case cfg.Requests <= 0 && cfg.Duration <= 0:
		return res, errors.New("sim: give a number of requests or a duration")
	}
	engines := cfg.Replicas
	pd := cfg.Prefill > 0 || cfg.Decode > 0
	link := cfg.KVLink
	if link == (KVLink{}) {
		link = DefaultKVLink
	}
	switch {
	case pd && (cfg.Prefill < 1 || cfg.Decode < 1):
		return res, errors.New("sim: a disaggregated fleet needs at least one prefill and one decode replica")
	case pd && !(link.GBps > 0 && link.Latency >= 0):
		return res, errors.New("sim: the KV link needs a positive bandwidth and a latency >= 0")
	case pd:
		engines = nil
		for range cfg.Prefill + cfg.Decode {
			engines = append(engines, cfg.Engine)
		}
	}
	if len(engines) == 0 {
		if cfg.Count < 1 {
			return res, errors.New("sim: a fleet needs at least one replica")
		}
		for range cfg.Count {
			engines = append(engines, cfg.Engine)
		}
	}
	router := cfg.Router
	if router == "" {
		router = RoundRobin
	}
	if !validRouter(router) {
		return res, fmt.Errorf("sim: unknown router %q (want one of %v)", router, Routers)
	}
	reps := make([]replica, len(engines))
	for i, ec := range engines {
		ec.EdgeEmissionsOnly = !cfg.KeepTokenTimes && !cfg.StreamTokenTimes
		if cfg.OnGaps != nil {
			ec.OnGaps = func(gap int64, n int) { cfg.OnGaps(time.Duration(gap), n) }
		}
		eng, err := simengine.NewEngine(ec)
		if err != nil {
			return res, fmt.Errorf("replica %d: %w", i, err)
		}
		name := "r" + strconv.Itoa(i)
		if pd {
			name = "p" + strconv.Itoa(i)
			if i >= cfg.Prefill {
				name = "d" + strconv.Itoa(i-cfg.Prefill)
			}
		}
		reps[i] = replica{eng: eng, res: ReplicaResult{Name: name}}
	}
	if onRecord == nil {
		onRecord = func(*record.Request) {}
	}

	var (
		q        simengine.EventQueue
		reqs     []fleetReq
		free     []int
		inFlight int
		rec      record.Request
		phases   record.Phases
		runErr   error
		keep     = cfg.KeepTokenTimes || cfg.StreamTokenTimes
		segBuf   []simengine.Segment
		rt       = fleetRouter{policy: router, reps: reps}
		rtDecode fleetRouter
	)
	if pd {
		rt.reps = reps[:cfg.Prefill]
		rtDecode = fleetRouter{policy: router, reps: reps[cfg.Prefill:]}
	}
	contents, _ := cfg.Gen.(Contents)
	rt.sessions, _ = cfg.Gen.(Sessions)
	rtDecode.sessions = rt.sessions
	accepting := func(t time.Duration) bool {
		return (cfg.Requests <= 0 || res.Issued < cfg.Requests) && (cfg.Duration <= 0 || t < cfg.Duration)
	}
	schedule := func(t time.Duration, user int) {
		if accepting(t) {
			q.Push(simengine.Event{Time: int64(t), Kind: evArrival, ID: int64(user)})
		}
	}
	arrivals := cfg.Arrivals
	if arrivals != nil {
		if cfg.Ramp > 0 {
			arrivals = rampArrivals{arrivals, float64(cfg.Ramp)}
		}
		schedule(arrivals.Next(), -1)
	} else {
		for u := 0; u < cfg.Concurrency; u++ {
			schedule(time.Duration(int64(cfg.Ramp)*int64(u)/int64(cfg.Concurrency)), u)
		}
	}
	warm := func(id int64, t time.Duration) bool {
		return id < int64(cfg.WarmupRequests) || t < cfg.Warmup
	}
	// refuse records a request that never reached an engine: rejected by
	// the gateway or a replica's queue (429) or too long (400).
	refuse := func(id int64, sched, sent, now time.Duration, in, out, inFl, user, rep int, err error) {
		rec = record.Request{
			ID: id, Warmup: warm(id, sched), Scheduled: sched, Sent: sent, Done: now, StreamEnd: now,
			TokenSource: record.TokensFromSim, PromptTokensRequested: in, MaxTokens: out,
			InFlightAtSend: inFl, ErrorMessage: err.Error(),
		}
		if cfg.Class != nil {
			rec.Class, _ = cfg.Class(id)
		}
		if rep >= 0 {
			rec.Replica = reps[rep].res.Name
		}
		switch {
		case errors.Is(err, simengine.ErrQueueFull):
			res.Rejected++
			rec.HTTPStatus, rec.Error = 429, record.ErrRejected
		case errors.Is(err, simengine.ErrTooLong) && cfg.TooLongAsErrors:
			res.Failed++
			rec.HTTPStatus, rec.Error = 400, record.ErrHTTP4xx
		default:
			runErr = fmt.Errorf("sim: request %d: %w", id, err)
			return
		}
		onRecord(&rec)
		if user >= 0 {
			// A refused closed-loop user retries a moment later (after the
			// next step of the replica that refused it).
			retry := int64(now) + int64(time.Millisecond)
			if rep >= 0 && rec.Error == record.ErrRejected {
				retry = max(reps[rep].eng.Now(), int64(now)) + 1
			}
			q.Push(simengine.Event{Time: retry, Kind: evArrival, ID: int64(user)})
		}
	}

	submit := func(slot int, now time.Duration) {
		p := &reqs[slot]
		r := &reps[p.replica]
		r.eng.AdvanceTo(int64(now)) // an idle replica's clock catches up
		out, moved := p.out, 0
		switch {
		case pd && p.stage == 0:
			out, p.engineAt = 1, now // the prefill replica computes the prompt and one token
		case pd:
			moved = p.in - 1
		}
		err := r.eng.SubmitRequest(simengine.Request{ID: int64(slot), InputTokens: p.in, OutputTokens: out, At: int64(now),
			Content: p.segs, NoGapStats: warm(p.id, p.sched) || (pd && p.stage == 0), TransferredTokens: moved, Adapter: p.adapter})
		if err == nil {
			return
		}
		inFlight--
		r.outstanding--
		r.unprefilled -= blocksOf(p.in)
		if errors.Is(err, simengine.ErrQueueFull) {
			r.res.Rejected++
		}
		free = append(free, slot)
		refuse(p.id, p.sched, p.sent, now, p.in, p.out, p.inFlight, p.user, p.replica, err)
	}

	send := func(id int64, sched time.Duration, user int) {
		now := sched
		var in, out int
		rt.session = ""
		if rt.sessions != nil && router == SessionAffinity {
			rt.session = rt.sessions.Session(id)
		}
		segBuf = segBuf[:0]
		if contents != nil {
			in, out, segBuf = contents.Content(id, segBuf)
		} else {
			in, out = cfg.Gen.Lengths(id)
		}
		if cfg.GatewayQueueLimit > 0 && rt.waiting() >= cfg.GatewayQueueLimit {
			res.GatewayRejected++
			refuse(id, sched, now, now, in, out, inFlight+1, user, -1,
				fmt.Errorf("%w: gateway: %d requests waiting in the fleet (limit %d)", simengine.ErrQueueFull, rt.waiting(), cfg.GatewayQueueLimit))
			return
		}
		ri := rt.pick(id, in, segBuf)
		var slot int
		if n := len(free); n > 0 {
			slot = free[n-1]
			free = free[:n-1]
		} else {
			reqs = append(reqs, fleetReq{})
			slot = len(reqs) - 1
		}
		inFlight++
		res.PeakInFlight = max(res.PeakInFlight, inFlight)
		r := &reps[ri]
		r.outstanding++
		r.unprefilled += blocksOf(in)
		r.res.Routed++
		p := &reqs[slot]
		*p = fleetReq{id: id, sched: sched, sent: now, in: in, out: out, inFlight: inFlight, user: user, replica: ri,
			times: p.times[:0], segs: append(p.segs[:0], segBuf...), session: rt.session}
		if cfg.Class != nil {
			p.class, p.adapter = cfg.Class(id)
		}
		if c := r.eng.FrontEnd(id, in); !c.Zero() {
			r.frontEnd++
			p.feRest = c
			at, last := r.fe.Next(int64(now), &p.feRest)
			p.feMore = !last
			q.Push(simengine.Event{Time: at, Kind: evSubmit, ID: int64(slot)})
			return
		}
		submit(slot, now)
	}

	// done delivers a finished request's record at its last token's time,
	// so records of all replicas come out in virtual-time order.
	done := func(slot int, t time.Duration) {
		p := &reqs[slot]
		r := &reps[p.replica]
		inFlight--
		r.outstanding--
		r.res.Completed++
		res.Completed++
		ph := &phases
		if cfg.KeepTokenTimes {
			ph = new(record.Phases)
		}
		*ph = record.Phases{Queue: time.Duration(p.phases.Queue), Prefill: time.Duration(p.phases.Prefill), Decode: time.Duration(p.phases.Decode)}
		name := r.res.Name
		if pd {
			// Queued at the prefill replica; "prefill" runs to the first
			// token from the decode replica (the transfer and the decode
			// replica's wait included), so the phases still add up.
			ph.Queue = time.Duration(p.pre.Queue)
			ph.Prefill = p.first - p.engineAt - ph.Queue
			name = reps[p.prefill].res.Name + "/" + name
		}
		rec = record.Request{
			ID: p.id, Warmup: warm(p.id, p.sched), Scheduled: p.sched, Sent: p.sent,
			FirstToken: p.first, Done: t, StreamEnd: t,
			InputTokens: p.in, OutputTokens: p.out, TokenSource: record.TokensFromSim,
			PromptTokensRequested: p.in, MaxTokens: p.out, InFlightAtSend: p.inFlight,
			ServerPhases: ph, FinishReason: "length", Replica: name, Class: p.class,
		}
		switch {
		case cfg.KeepTokenTimes:
			rec.TokenTimes = append([]time.Duration(nil), p.times...)
		case cfg.StreamTokenTimes:
			rec.TokenTimes = p.times
		}
		if cfg.KeepTokenTimes {
			c := rec
			onRecord(&c)
		} else {
			onRecord(&rec)
		}
		free = append(free, slot)
		if p.user >= 0 {
			schedule(t, p.user)
		}
	}

	handle := func(ev simengine.Event) {
		t := time.Duration(ev.Time)
		switch ev.Kind {
		case evSubmit:
			p := &reqs[ev.ID]
			r := &reps[p.replica]
			if p.feMore {
				// Its first turn is done: the rest queues behind every
				// request that joined the lane meanwhile.
				at, last := r.fe.Next(ev.Time, &p.feRest)
				p.feMore = !last
				q.Push(simengine.Event{Time: at, Kind: evSubmit, ID: ev.ID})
				return
			}
			r.frontEnd--
			submit(int(ev.ID), t)
		case evDone:
			done(int(ev.ID), t)
		case evTransfer:
			// The prompt's KV has reached the decode side: the prefill
			// replica is done with it, a decode replica takes it.
			p := &reqs[ev.ID]
			pr := &reps[p.prefill]
			pr.outstanding--
			pr.res.Completed++
			rtDecode.session = p.session
			di := cfg.Prefill + rtDecode.pick(p.id, p.in, p.segs)
			d := &reps[di]
			d.outstanding++
			d.unprefilled += blocksOf(p.in)
			d.res.Routed++
			p.replica, p.stage = di, 1
			submit(int(ev.ID), t)
		case evArrival:
			if !accepting(t) {
				return
			}
			id := res.Issued
			res.Issued++
			res.Events++
			send(id, t, int(ev.ID))
			if arrivals != nil {
				schedule(arrivals.Next(), -1)
			}
		}
	}

	emit := func(em simengine.Emission) {
		p := &reqs[em.ID]
		t := time.Duration(em.Time)
		if em.Index == 0 {
			reps[p.replica].unprefilled -= blocksOf(p.in)
		}
		if pd && p.stage == 0 {
			if em.Finished { // the prefill's one token, not sent: the KV goes to a decode replica
				p.pre, p.prefill = em.Phases, p.replica
				q.Push(simengine.Event{Time: em.Time + link.transferNS(cfg.Engine.Model, cfg.Engine.TP, p.in), Kind: evTransfer, ID: em.ID})
			}
			return
		}
		if em.Index == 0 {
			p.first = t
		}
		if keep {
			p.times = append(p.times, t)
		}
		if em.Finished {
			// Its slot frees at the step end, after any arrival during the
			// step and before any arrival at the same instant.
			p.phases = em.Phases
			q.Push(simengine.Event{Time: em.Time, Priority: -1, Kind: evDone, ID: em.ID})
		}
	}

	for {
		next := -1
		for i := range reps {
			if reps[i].eng.HasWork() && (next < 0 || reps[i].eng.Now() < reps[next].eng.Now()) {
				next = i
			}
		}
		if ev, ok := q.Peek(); ok && (next < 0 || ev.Time <= reps[next].eng.Now()) {
			handle(q.Pop())
			if runErr != nil {
				return finishFleet(&res, reps), runErr
			}
			continue
		}
		if next < 0 {
			break
		}
		r := &reps[next]
		if r.eng.Step(emit) == 0 {
			// A step that preempted everything schedules nothing; the next
			// one admits. Two in a row would never end.
			if r.stalled++; r.stalled > 1 {
				return finishFleet(&res, reps), fmt.Errorf("sim: replica %d made no progress at %v with %+v", next, time.Duration(r.eng.Now()), r.eng.Stats())
			}
			continue
		}
		r.stalled = 0
		if cfg.OnStep != nil {
			cfg.OnStep(fleetKVStats(r.eng.Stats(), reps))
		}
		res.Steps++
		if res.Steps&1023 == 0 && ctx.Err() != nil {
			return finishFleet(&res, reps), ctx.Err()
		}
	}
	return finishFleet(&res, reps), ctx.Err()
}

// evTransfer: ID is a slot whose prompt KV reaches the decode side.
const evTransfer = evSubmit + 1

func blocksOf(tokens int) int { return (tokens + simengine.BlockTokens - 1) / simengine.BlockTokens }

func validRouter(name string) bool {
	for _, r := range Routers {
		if r == name {
			return true
		}
	}
	return false
}

func finishFleet(res *FleetResult, reps []replica) FleetResult {
	res.Replicas = res.Replicas[:0]
	var sum simengine.EngineStats
	for i := range reps {
		s := reps[i].eng.Stats()
		reps[i].res.Engine = s
		res.Replicas = append(res.Replicas, reps[i].res)
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
	}
	if sum.KVBlocksTotal > 0 {
		sum.KVUsage = float64(sum.KVBlocksUsed) / float64(sum.KVBlocksTotal)
	}
	sum.Now = int64(res.End)
	res.Engine = sum
	res.Tokens = sum.OutputTokens
	res.Events += res.Steps + res.Tokens
	return *res
}

// fleetRouter picks a replica for each arrival.
type fleetRouter struct {
	policy   string
	reps     []replica
	next     int // round-robin position; also where ties start, so ties rotate
	sessions Sessions
	session  string // the request being routed's session, when sessions tell
	hasher   simengine.PrefixHasher
	hashes   []uint64
	scores   []float64
}

// waiting is the fleet's requests not yet running: in front ends and queues.
func (f *fleetRouter) waiting() int {
	n := 0
	for i := range f.reps {
		n += f.reps[i].frontEnd + f.reps[i].eng.Stats().Waiting
	}
	return n
}

func (f *fleetRouter) rotate() int {
	i := f.next % len(f.reps)
	f.next++
	return i
}

// best returns the replica with the lowest key, ties going to the first
// from a rotating start.
func (f *fleetRouter) best(less func(a, b int) bool) int {
	n := len(f.reps)
	start := f.rotate()
	bi := start
	for j := 1; j < n; j++ {
		i := (start + j) % n
		if less(i, bi) {
			bi = i
		}
	}
	return bi
}

func (f *fleetRouter) pick(id int64, in int, segs []simengine.Segment) int {
	if len(f.reps) == 1 {
		return 0
	}
	r := f.reps
	switch f.policy {
	case LeastOutstanding:
		return f.best(func(a, b int) bool { return r[a].outstanding < r[b].outstanding })
	case LeastKV:
		return f.best(func(a, b int) bool {
			sa, sb := r[a].eng.Stats(), r[b].eng.Stats()
			ka, kb := sa.KVBlocksUsed+r[a].unprefilled, sb.KVBlocksUsed+r[b].unprefilled
			if ka*sb.KVBlocksTotal != kb*sa.KVBlocksTotal { // compare usage fractions exactly
				return ka*sb.KVBlocksTotal < kb*sa.KVBlocksTotal
			}
			return r[a].outstanding < r[b].outstanding
		})
	case SessionAffinity:
		var key uint64
		switch {
		case f.session != "":
			h := fnv.New64a()
			h.Write([]byte(f.session))
			key = h.Sum64() | 1
		case len(segs) > 0:
			key = segs[0].ID
		}
		if key == 0 {
			return f.rotate()
		}
		return int(splitmixKey(key) % uint64(len(r)))
	case PrefixAffinity:
		return f.prefixPick(in, segs)
	}
	return f.rotate()
}

// Weights of llm-d's inference-scheduling profile: prefix-cache scorer 3,
// queue scorer 2, KV-cache-utilization scorer 2.
const (
	prefixWeight = 3
	queueWeight  = 2
	kvWeight     = 2
)

// prefixPick scores each replica as llm-d's scheduler does — the share of
// the prompt's blocks its cache holds, its waiting queue relative to the
// others' (1 for the shortest, 0 for the longest), and its free KV share —
// and takes the highest weighted sum.
func (f *fleetRouter) prefixPick(in int, segs []simengine.Segment) int {
	f.hashes = f.hasher.Hashes(segs, in, f.hashes[:0])
	r := f.reps
	minQ, maxQ := -1, 0
	for i := range r {
		w := r[i].frontEnd + r[i].eng.Stats().Waiting
		if minQ < 0 || w < minQ {
			minQ = w
		}
		maxQ = max(maxQ, w)
	}
	score := func(i int) float64 {
		s := r[i].eng.Stats()
		v := kvWeight * (1 - s.KVUsage)
		if len(f.hashes) > 0 {
			v += prefixWeight * float64(r[i].eng.CachedPrefixBlocks(f.hashes)) / float64(len(f.hashes))
		}
		if maxQ > minQ {
			v += queueWeight * float64(maxQ-(r[i].frontEnd+s.Waiting)) / float64(maxQ-minQ)
		} else {
			v += queueWeight
		}
		return v
	}
	f.scores = f.scores[:0]
	for i := range r {
		f.scores = append(f.scores, score(i))
	}
	return f.best(func(a, b int) bool { return f.scores[a] > f.scores[b] })
}

// splitmixKey spreads a session key over the replicas.
func splitmixKey(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fleetKVStats is st with its KV figures replaced by the fleet's: the
// blocks of every replica together.
func fleetKVStats(st simengine.EngineStats, reps []replica) simengine.EngineStats {
	used, total := 0, 0
	for i := range reps {
		s := reps[i].eng.Stats()
		used, total = used+s.KVBlocksUsed, total+s.KVBlocksTotal
	}
	st.KVBlocksUsed, st.KVBlocksTotal = used, total
	if total > 0 {
		st.KVUsage = float64(used) / float64(total)
	}
	return st
}
