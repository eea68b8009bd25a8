package sim

import (
	"context"
	"fmt"
	"math"
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
	// MaxConcurrency caps an open loop's requests in flight (across a
	// fleet's replicas): an arrival beyond it waits in the client (sent
	// later than scheduled: lag) instead of being dropped. 0 = no cap.
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
	// not be set with it. A fleet's client is one, for all replicas.
	Client Client
	// ServerLoop is the server's streaming loop; the zero value keeps up
	// with the engine. With a chunk cost tokens leave the server later than
	// the engine makes them, and several to a chunk, so OnGaps must not be
	// set with it; a client chunk cost is not supported with it yet. Each
	// replica of a fleet has its own loop.
	ServerLoop ServerLoop

	// Class, when set, names request i's traffic class (copied to its
	// record) and the LoRA adapter it runs with (0: the base model; the
	// engine's Config.LoRA must serve adapters).
	Class func(i int64) (name string, adapter int32)

	// Pools are closed-loop user pools beside Concurrency's (which may then
	// be 0): a mix's classes with their own concurrency, Pools[p] users
	// each. Users are numbered across pools, Concurrency's first, as
	// loadgen numbers them, and Requests bounds all pools together. Pool,
	// when set, learns each request's pool (0: Concurrency's, p+1:
	// Pools[p]) as it is issued, before Gen or Class is asked about it, so
	// the workload can make it that pool's class.
	Pools []int
	Pool  func(id int64, pool int)

	// Probes are short requests beside the main load, as knee bench's
	// --probe-rate sends them: what the load does to an unrelated user.
	Probes Probes
}

// Probes is a constant stream of short requests from the run's start
// while the main load is issued (loadgen's probeLoop): they count neither
// towards Requests nor under MaxConcurrency, take no closed-loop user,
// and their records have Class record.ProbeClass and IDs from
// ProbeIDBase up. Gen gives probe k's lengths (its prompt shares no
// content with any other request's).
type Probes struct {
	RateRPS float64
	Gen     Lengths
}

// ProbeIDBase is the ID of the first probe, as loadgen.ProbeIDBase: far
// above any main request's, so IDs stay unique.
const ProbeIDBase int64 = 1 << 40

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
	Issued, Completed, Rejected int64 // Issued and Completed: the main load's, probes apart
	// Capped says why the run stopped issuing before its Requests or
	// Duration: "" (it did not), CappedRequests or CappedInFlight.
	Capped       string
	Probes       int64 // probes sent
	Failed       int64 // too long for the context (TooLongAsErrors)
	PeakInFlight int
	End          time.Duration // virtual time of the last event
	Steps        int64         // engine steps
	Tokens       int64         // output tokens emitted
	Events       int64         // arrivals + steps + token emissions
	Engine       simengine.EngineStats
}

// A run's own size is bounded, whatever it is asked: its memory grows with
// the requests it issues (the summary keeps every send and end time, 16
// bytes a request) and, far more, with the requests in flight (each holds
// its state in the loop and the engine, about 1 KB). An open loop offered
// more than the engine completes queues without bound: a --rate 1000 run
// died of memory at 1.57 GB. Variables so tests can lower them.
var (
	// MaxRequests bounds the requests one run issues (about 100 MB of
	// summary at the bound).
	MaxRequests int64 = 5_000_000
	// MaxInFlight bounds the requests in flight (sent or held in the client
	// by MaxConcurrency): past it an overloaded run stops issuing, lets
	// what it issued finish, and says so; its latencies described no steady
	// state already.
	MaxInFlight = 100_000
)

// Why a run stopped issuing early (Result.Capped).
const (
	CappedRequests = "requests"
	CappedInFlight = "in flight"
)

// CheckSize refuses a run asked for more than MaxRequests, before it
// starts: requests given, or an open loop's rate over its duration
// (rateRPS 0: not known, as a closed loop's). The message names the
// flags to change.
func CheckSize(requests int64, duration time.Duration, rateRPS float64) error {
	if requests > MaxRequests {
		return fmt.Errorf("--requests %d: a simulation issues at most %d requests (its summary keeps each one's send and end time); lower --requests, or simulate a shorter window of the same load",
			requests, MaxRequests)
	}
	if requests <= 0 && duration > 0 && rateRPS > 0 {
		if n := rateRPS * duration.Seconds(); n > float64(MaxRequests) {
			return fmt.Errorf("--rate %g over --duration %s is about %.3g requests: a simulation issues at most %d; shorten --duration (the summary of a steady load does not need more), or give --requests",
				rateRPS, duration, n, MaxRequests)
		}
	}
	return nil
}

// cappedNote says why a capped run stopped early ("" when it was not).
func cappedNote(res Result) string {
	switch res.Capped {
	case CappedRequests:
		return fmt.Sprintf("stopped issuing at %d requests, the bound on one simulation's size (sim.MaxRequests); the report covers those", res.Issued)
	case CappedInFlight:
		return fmt.Sprintf("stopped issuing at %d requests in flight, the bound on one simulation's queue: the load is more than the engine completes, so the queue grows without bound; the report covers the %d requests issued before, all finished", MaxInFlight, res.Issued)
	}
	return ""
}

// Run simulates cfg, calling onRecord once per finished or rejected request
// in virtual-time order. Unless KeepTokenTimes is set, the record passed to
// onRecord is reused: copy what you keep. A request longer than the model's
// context stops the run with an error wrapping simengine.ErrTooLong (the
// records before it have been delivered). Cancelling ctx stops the run early
// with ctx's error.
//
// Run is RunFleet with one replica whose records name no replica, each
// handed over at its last token.
func Run(ctx context.Context, cfg Config, onRecord func(*record.Request)) (Result, error) {
	l, err := newLoop(FleetConfig{Config: cfg, Count: 1}, onRecord)
	if err != nil {
		return Result{}, err
	}
	l.direct = true
	err = l.run(ctx)
	return l.finish().Result, err
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
