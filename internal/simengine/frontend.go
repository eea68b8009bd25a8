package simengine

import "math"

// FittedFrontEndNS is the front-end cost per request of DefaultCost,
// fitted with its other constants across every source of the validation
// table at once (docs/validation.md, leave one source out). Short prompts
// at low load are dominated by it: without it a 200-token prompt on an 8B
// model would see its first token after one ~7 ms step.
const FittedFrontEndNS = 3_500_000

// frontEnd prices the time between a request's arrival and the moment the
// scheduler can see it. It is immutable after construction, so
// FrontEndDelay may be called from any goroutine.
type frontEnd struct {
	baseNS, perTokenNS, jitter float64
	serialNS                   int64
	split                      float64 // CostParams.FrontEndSerialSplit
	loadNS                     float64 // CostParams.FrontEndLoadNS
	seed                       uint64
}

func newFrontEnd(p CostParams, seed int64) frontEnd {
	return frontEnd{baseNS: float64(p.FrontEndNS), perTokenNS: p.FrontEndPerTokenNS, jitter: p.FrontEndJitter,
		serialNS: max(p.FrontEndSerialNS, 0), split: min(max(p.FrontEndSerialSplit, 0), 1), loadNS: float64(max(p.FrontEndLoadNS, 0)), seed: uint64(seed)}
}

// streamRateWindowNS is the time constant of the streamed-token rate that
// FrontEndLoadNS prices: long enough to smooth prefill-only steps out of
// it, short against a load sweep's steady state.
const streamRateWindowNS = 200e6

// noteStream folds a step of dt ns that sampled tokens, after idle ns
// without one, into the streamed-token rate FrontEnd reads.
func (e *Engine) noteStream(idle, dt int64, sampled int64) {
	r := math.Float64frombits(e.streamRate.Load())
	if idle > 0 {
		r *= math.Exp(-float64(idle) / streamRateWindowNS)
	}
	a := 1 - math.Exp(-float64(dt)/streamRateWindowNS)
	r += a * (float64(sampled)*1e9/float64(dt) - r)
	e.streamRate.Store(math.Float64bits(r))
}

// StreamRate is the output tokens a second the engine has been streaming
// (the exponential average FrontEndLoadNS prices; 0 unless it is set).
func (e *Engine) StreamRate() float64 { return math.Float64frombits(e.streamRate.Load()) }

// FrontEndCost is one request's front-end cost (Engine.FrontEnd), in ns.
type FrontEndCost struct {
	// FirstNS is serial work done before the request's handler first
	// yields (CostParams.FrontEndSerialSplit): after it the request joins
	// the serial lane again, at its back (FrontEndQueue.Next).
	FirstNS int64
	// SerialNS is the serial work of its (last) turn: the per-prompt-token
	// cost (tokenization: vLLM's API server tokenizes every prompt on one
	// thread, the single worker of AsyncMicrobatchTokenizer in
	// vllm/utils/async_utils.py) plus the rest of CostParams.FrontEndSerialNS.
	SerialNS int64
	// LatencyNS is the rest, which overlaps between requests (chat
	// template, hand-off to the engine process, scheduling delays).
	LatencyNS int64
}

// Zero reports whether the request reaches the engine as it arrives.
func (c FrontEndCost) Zero() bool { return c.FirstNS+c.SerialNS+c.LatencyNS == 0 }

// FrontEnd is request id's front-end cost: its latency is the base cost
// spread by the jitter, a deterministic function of id and Config.Seed.
// Callers pass a request to the engine once it has had its turns at the
// serial lane (FrontEndQueue) and the latency has passed (sim.Run in
// virtual time, the simulated server in wall time); TTFT and E2E include
// it. With CostParams.FrontEndLoadNS the latency also grows with the
// tokens a second the engine streams as of its last step. It reads only
// immutable state and that rate (atomic), and is safe for concurrent use.
func (e *Engine) FrontEnd(id int64, inputTokens int) FrontEndCost {
	f := &e.fe
	if f.baseNS == 0 && f.perTokenNS == 0 && f.serialNS == 0 && f.loadNS == 0 {
		return FrontEndCost{}
	}
	u := float64(splitmix64(f.seed^uint64(id)*0x9e3779b97f4a7c15)>>11) / (1 << 53) // [0, 1)
	latency := max(f.baseNS*(1+f.jitter*(2*u-1)), 0)
	if f.loadNS > 0 {
		latency += f.loadNS * e.StreamRate() / 1000
	}
	first := int64(f.split * float64(f.serialNS))
	return FrontEndCost{FirstNS: first, SerialNS: f.serialNS - first + int64(f.perTokenNS*float64(inputTokens)), LatencyNS: int64(latency)}
}

// FrontEndQueue is the front end's serial lane, one request's turn at a
// time in the order they join it. The zero value is ready; it is not safe
// for concurrent use.
type FrontEndQueue struct{ busyUntil int64 }

// Next serves c's next turn at the lane, joining it at at, and returns when
// that turn is done and whether it was the last. The last turn is c's
// SerialNS, and its done time includes the latency: the request's engine
// arrival. A request with a first part (c.FirstNS, cleared here) takes a
// turn for it first; the caller calls Next again at the time returned, once
// every request that arrived before then has joined, so the rest queues
// behind them.
func (q *FrontEndQueue) Next(at int64, c *FrontEndCost) (done int64, last bool) {
	if c.FirstNS > 0 {
		done = q.turn(at, c.FirstNS)
		c.FirstNS = 0
		return done, false
	}
	return q.turn(at, c.SerialNS) + c.LatencyNS, true
}

func (q *FrontEndQueue) turn(at, ns int64) int64 {
	q.busyUntil = max(at, q.busyUntil) + ns
	return q.busyUntil
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
