package sim

import (
	"context"
	"hash/fnv"
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
// of tp GPUs (sliding-window layers send only their window).
func (l KVLink) transferNS(m simengine.Model, tp, tokens int) int64 {
	return int64(l.Latency) + int64(m.KVBytes(int64(tokens), tp)/(l.GBps*1e9)*1e9)
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

// RunFleet simulates cfg against a fleet, calling onRecord once per
// finished or rejected request in virtual-time order, each record naming
// its replica (Replica "r0", "r1", …; empty for a gateway rejection). The
// record is reused unless KeepTokenTimes is set. Config.MaxConcurrency caps
// the requests in flight across the fleet; Config.OnStep sees, after each
// replica's step, that replica's stats with the KV usage of the whole
// fleet (every replica's blocks together). A client model has one thread
// for the whole fleet; a server loop model is one loop per replica.
func RunFleet(ctx context.Context, cfg FleetConfig, onRecord func(*record.Request)) (FleetResult, error) {
	l, err := newLoop(cfg, onRecord)
	if err != nil {
		return FleetResult{}, err
	}
	l.names = true
	err = l.run(ctx)
	return l.finish(), err
}

func blocksOf(tokens int) int { return (tokens + simengine.BlockTokens - 1) / simengine.BlockTokens }

func validRouter(name string) bool {
	for _, r := range Routers {
		if r == name {
			return true
		}
	}
	return false
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
