package simengine

import "math"

// FittedFrontEndNS is the front-end cost per request of DefaultCost: fitted
// to the TTFT of vLLM serving Llama-2-7B on one H100 at 5 requests/s
// (docs/simulator.md, validation table). Short prompts at low load are
// dominated by it: without it a 200-token prompt on an 8B model would see
// its first token after one ~7 ms step.
const FittedFrontEndNS = 7_300_000

// frontEnd prices the time between a request's arrival and the moment the
// scheduler can see it. It is immutable after construction, so
// FrontEndDelay may be called from any goroutine.
type frontEnd struct {
	baseNS, perTokenNS, jitter float64
	serialNS                   int64
	loadNS                     float64 // CostParams.FrontEndLoadNS
	seed                       uint64
}

func newFrontEnd(p CostParams, seed int64) frontEnd {
	return frontEnd{baseNS: float64(p.FrontEndNS), perTokenNS: p.FrontEndPerTokenNS, jitter: p.FrontEndJitter,
		serialNS: max(p.FrontEndSerialNS, 0), loadNS: float64(max(p.FrontEndLoadNS, 0)), seed: uint64(seed)}
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

// FrontEnd is request id's front-end cost in ns, in two parts. serialNS is
// the work the server's front end does one request at a time: the
// per-prompt-token cost (tokenization: vLLM's API server tokenizes every
// prompt on one thread, the single worker of AsyncMicrobatchTokenizer in
// vllm/utils/async_utils.py) plus CostParams.FrontEndSerialNS. latencyNS is the rest, which overlaps between
// requests (chat template, hand-off to the engine process, scheduling
// delays): the base cost spread by the jitter, a deterministic function of
// id and Config.Seed. Callers pass a request to the engine once it has had
// its turn at the serial part and the latency has passed (sim.Run in
// virtual time, the simulated server in wall time); TTFT and E2E include
// it. With CostParams.FrontEndLoadNS the latency also grows with the
// tokens a second the engine streams as of its last step. It reads only
// immutable state and that rate (atomic), and is safe for concurrent use.
func (e *Engine) FrontEnd(id int64, inputTokens int) (serialNS, latencyNS int64) {
	f := &e.fe
	if f.baseNS == 0 && f.perTokenNS == 0 && f.serialNS == 0 && f.loadNS == 0 {
		return 0, 0
	}
	u := float64(splitmix64(f.seed^uint64(id)*0x9e3779b97f4a7c15)>>11) / (1 << 53) // [0, 1)
	latency := max(f.baseNS*(1+f.jitter*(2*u-1)), 0)
	if f.loadNS > 0 {
		latency += f.loadNS * e.StreamRate() / 1000
	}
	return f.serialNS + int64(f.perTokenNS*float64(inputTokens)), int64(latency)
}

// FrontEndQueue serializes the serial part of the front end: Admit says when
// a request that reached the front end at arrival is handed to the engine.
// The zero value is ready; it is not safe for concurrent use.
type FrontEndQueue struct{ busyUntil int64 }

// Admit returns the engine arrival time of a request that reached the front
// end at arrival with the given cost parts.
func (q *FrontEndQueue) Admit(arrival, serialNS, latencyNS int64) int64 {
	start := max(arrival, q.busyUntil)
	q.busyUntil = start + serialNS
	return q.busyUntil + latencyNS
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
