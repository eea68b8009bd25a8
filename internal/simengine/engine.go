package simengine

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// BlockTokens is the KV cache block size in tokens (vLLM's default).
const BlockTokens = 16

// Errors Submit returns; wrapped with the numbers involved.
var (
	ErrQueueFull = errors.New("waiting queue full")
	ErrTooLong   = errors.New("request longer than the context limit")
	// ErrPromptOverBudget is a prompt longer than the step's token budget
	// on an engine that refuses those (Config.RefuseLongPrompts); it is an
	// ErrTooLong too (errors.Is), with a message of its own.
	ErrPromptOverBudget error = promptOverBudget{}
	ErrDuplicateID            = errors.New("request id already in the engine")
	ErrBadRequest             = errors.New("bad request shape")
	ErrDoesNotFit             = errors.New("model does not fit")
	ErrBadEngineCfg           = errors.New("bad engine configuration")
)

type promptOverBudget struct{}

func (promptOverBudget) Error() string        { return "prompt longer than the step's token budget" }
func (promptOverBudget) Is(target error) bool { return target == ErrTooLong }

// Config configures an Engine. Zero fields take the defaults noted; use
// DefaultConfig for vLLM's defaults including chunked prefill.
type Config struct {
	GPU   GPU
	Model Model
	TP    int // tensor-parallel degree; 0 = 1

	// MaxNumSeqs bounds running requests; MaxNumBatchedTokens is the token
	// budget of one step. 0 = vLLM V1's OpenAI-server defaults: 1024 and
	// 8192 on GPUs with at least 70 GiB other than A100s, else 256 and 2048 (without
	// chunked prefill the budget defaults to max(MaxModelLen, 2048)).
	MaxNumSeqs, MaxNumBatchedTokens int
	GPUMemoryUtilization            float64 // 0 = 0.9
	MaxModelLen                     int     // prompt + output limit; 0 = the model's max context, lowered to what the KV cache holds
	QueueLimit                      int     // waiting requests beyond which Submit rejects; 0 = unbounded
	ChunkedPrefill                  bool    // split long prompts over steps (vLLM V1 always does)
	StepTimeScale                   float64 // multiplies every step time; 0 = 1 (>1 slows steps: faults, labs)
	Cost                            *CostParams
	// NoPrefixCaching turns automatic prefix caching off (vLLM's
	// --no-enable-prefix-caching); it is on by default, as in vLLM V1.
	NoPrefixCaching bool
	// NoAsyncScheduling schedules each step only after the previous one
	// ends (vLLM's --no-async-scheduling). By default, as in vLLM since
	// async scheduling became its default (vllm-project/vllm#27614), a
	// step is scheduled while the one before it runs, so a request that
	// arrives during a step cannot join the next one while requests are
	// running: it waits one step more. An idle engine admits at once. A
	// linear (CPU server) profile keeps synchronous scheduling: llama.cpp
	// adds sequences between batches.
	NoAsyncScheduling bool
	// SeparatePrefill runs prompt work and decodes in separate steps,
	// prompt work first: a step that can start or continue a prefill
	// runs only prefills, and the running decodes wait for it. SGLang's
	// default scheduler does this (its --enable-mixed-chunk, off by
	// default, mixes them as vLLM's chunked prefill always does).
	SeparatePrefill bool
	// RunningCapFromKV sizes a MaxNumSeqs left at 0 from the KV cache as
	// SGLang sizes max_running_requests: half the KV tokens, and at most
	// its request pool, max(KV tokens / context length × 512, 2048) up
	// to 4096 (and never above MaxNumBatchedTokens).
	RunningCapFromKV bool
	// RefuseLongPrompts: without chunked prefill, a prompt longer than the
	// step's token budget is refused when submitted (ErrPromptOverBudget),
	// and the engine starts whatever its max model len. TensorRT-LLM does
	// this ("prompt length should not exceed max_num_tokens"; its input
	// limit is min(max_seq_len - 1, max_num_tokens)); vLLM without chunked
	// prefill refuses to start instead, a budget under the max model len
	// being an error (a budget of 0 then defaults to 8192, TensorRT-LLM's
	// max_num_tokens, in place of max(MaxModelLen, 2048)). With chunked
	// prefill it means nothing and Config() reads false.
	RefuseLongPrompts bool
	// NoSamplerWarmup: the engine sizes its KV cache without vLLM V1's
	// start-up sampler run (CostParams.SamplerWarmupBytesPerLogit), as
	// TensorRT-LLM and SGLang do.
	NoSamplerWarmup bool
	// Seed seeds the per-request front-end jitter (FrontEnd).
	Seed int64
	// EdgeEmissionsOnly makes Step emit only each request's first token
	// and its last (Finished) one: for batch simulations that keep no
	// per-token times, it saves a callback per token.
	EdgeEmissionsOnly bool
	// OnGaps, when set, is called at the end of every step with the
	// inter-token gaps of the tokens it emitted (each one after a
	// request's first), grouped by value: all requests that also decoded
	// in the previous step share one gap, the step's duration. A batch
	// simulation keeps exact ITL statistics with it at a few calls per
	// step instead of one emission per token (EdgeEmissionsOnly).
	OnGaps func(gapNS int64, count int)
	// LoRA serves adapters beside the base model (lora.go).
	LoRA LoRAConfig
}

// DefaultConfig returns vLLM-like defaults for a model on tp GPUs.
func DefaultConfig(gpu GPU, model Model, tp int) Config {
	return Config{GPU: gpu, Model: model, TP: tp, ChunkedPrefill: true}
}

// Phases are the server-side phase times of one request, in ns.
type Phases struct {
	Queue   int64 // arrival → first scheduled
	Prefill int64 // first scheduled → first token
	Decode  int64 // first token → last token
}

// Emission is one output token, emitted at the end of the step that made it.
type Emission struct {
	ID       int64
	Index    int   // 0-based output token index
	Time     int64 // virtual ns (the step end; equals Now() during the callback)
	Finished bool  // last token: the request has left the engine
	// Phases are filled when Finished (all three), and on the first token
	// (Index 0: Queue and Prefill, Decode 0).
	Phases Phases
}

// EngineStats is a snapshot of the engine's state and counters.
type EngineStats struct {
	Now                   int64
	Running, Waiting      int
	KVBlocksTotal         int
	KVBlocksUsed          int
	KVUsage               float64 // KVBlocksUsed / KVBlocksTotal
	Preemptions           int64
	Submitted, Rejected   int64
	Finished, Canceled    int64
	Steps                 int64
	PrefillTokens         int64 // prompt (and recomputed) tokens processed
	OutputTokens          int64 // tokens emitted
	BusyNS, LastStepNS    int64
	MaxNumSeqs            int
	MaxNumBatchedTokens   int
	MaxModelLen           int
	KVCapacityTokens      int
	LastStepBatch         int // requests scheduled in the last step
	LastStepNewTokens     int // tokens computed in the last step
	LastStepPrefillTokens int // of those, prefill tokens

	// Prefix cache, in tokens as vLLM counts them: each first admission
	// queries the request's tokens and hits those found cached (full
	// blocks); re-admissions after preemption are not counted.
	PrefixCacheQueries, PrefixCacheHits int64
	LastStepPrefixQueries               int // admissions of the last step
	LastStepPrefixHits                  int
	PrefixCachedBlocks                  int // blocks holding a cached hash (in use or free)

	// Power (power.go), when the GPU has a power model (IdlePowerW > 0).
	// GPUs is the TP degree; the step figures are per GPU, all alike.
	GPUs        int
	IdlePowerW  float64 // one GPU's draw between steps
	StepEnergyJ float64 // one GPU's energy during steps
	// SMActiveNS, ComputeActiveNS, DRAMActiveNS: Σ over steps of the
	// step's Activity shares × its time (ns), the integrals DCGM's
	// activity ratios average.
	SMActiveNS, ComputeActiveNS, DRAMActiveNS float64
	LastStepPowerW                            float64
	LastStepActivity                          Activity
	// EnergyJ is all GPUs' energy from time 0 to Now, steps and idle
	// time between them (0 without a power model).
	EnergyJ float64
}

// req is the engine's state of one request, kept in a slice for locality.
type req struct {
	id          int64
	prompt      int32
	output      int32
	generated   int32 // tokens emitted
	computed    int32 // tokens whose KV is in the cache
	blocks      int32 // KV blocks held
	newTokens   int32 // scheduled this step
	live        bool
	arrival     int64
	firstSched  int64 // -1 until first scheduled
	firstToken  int64
	preemptions int32
	winBlocks   int32 // pool blocks its sliding-window layers hold (Engine.windowBlocks); beside preemptions, in what was padding
	lastToken   int64 // when its last token was emitted
	noGapStats  bool
	transferred int32 // leading prompt tokens whose KV came with the request
	adapter     int32 // LoRA adapter (0: the base model); loraHeld while it counts in a slot
	loraHeld    bool

	// Prefix caching: the content, the blocks hashed so far (the leading
	// hashedBlocks), and the cached blocks held (a subset of blocks).
	segs         []Segment
	cur          cursor
	hashedBlocks int32
	cached       []int32
	ownID        uint64 // names its unique content once preempted (keepForRecompute)
}

func (r *req) numTokens() int32 { return r.prompt + r.generated }

// Engine is a vLLM-V1-like continuous-batching engine in virtual time. It is
// not safe for concurrent use.
type Engine struct {
	cfg   Config
	async bool // Config.AsyncScheduling
	cost  costModel
	fe    frontEnd
	sn    stepNoise
	mem   memoryPlan
	now   int64

	reqs    []req
	free    []int32 // free slots of reqs
	byID    map[int64]int32
	running []int32 // admission order; the newest is last
	waiting deque

	// lastStart and lastEnd bound the last step run (async scheduling:
	// what arrived after lastStart was not there when the step that
	// follows it was scheduled).
	lastStart, lastEnd int64

	freeBlocks int // blocks neither used nor cached
	pc         prefixCache
	hits       []int32 // scratch of lookup
	st         EngineStats
	gaps       gapGroups
	// streamRate is the streamed-token rate (float64 bits) FrontEnd
	// prices under CostParams.FrontEndLoadNS; atomic because the
	// simulated server calls FrontEnd from its request goroutines.
	streamRate atomic.Uint64
	lora       loraState
	// A model with both sliding-window and full-attention layers: the
	// pool's blocks hold the full layers' KV (poolKVBytesPerToken), and a
	// request's windowed layers hold windowBlocks more (0: none).
	window         int32 // Model.SlidingWindow
	winNum, winDen int32 // windowed : full layers, the cost of a windowed block in pool blocks
	// power: the GPU has a power model and the cost is the roofline (a
	// linear cost models a CPU server, whose GPU preset draws nothing).
	power bool
}

// NewEngine validates cfg, fills defaults and plans memory. Errors name the
// numbers (a model that does not fit, a KV cache smaller than one context).
// AsyncScheduling says whether the engine schedules a step while the one
// before it runs: unless NoAsyncScheduling, and never for a linear (CPU
// server) cost, whose llama.cpp adds sequences between batches.
func (c Config) AsyncScheduling() bool {
	return !c.NoAsyncScheduling && (c.Cost == nil || c.Cost.Linear == nil)
}

func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.GPU.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Model.Validate(); err != nil {
		return nil, err
	}
	if cfg.TP == 0 {
		cfg.TP = 1
	}
	if cfg.TP < 0 || cfg.TP > 64 {
		return nil, fmt.Errorf("%w: tensor parallelism %d (want 1..64)", ErrBadEngineCfg, cfg.TP)
	}
	if cfg.Model.Heads%cfg.TP != 0 {
		return nil, fmt.Errorf("%w: %d attention heads of %s do not divide over tp %d", ErrBadEngineCfg, cfg.Model.Heads, cfg.Model.Name, cfg.TP)
	}
	if cfg.GPUMemoryUtilization == 0 {
		cfg.GPUMemoryUtilization = 0.9
	}
	if cfg.GPUMemoryUtilization < 0 || cfg.GPUMemoryUtilization > 1 {
		return nil, fmt.Errorf("%w: gpu memory utilization %v (want 0 < u <= 1)", ErrBadEngineCfg, cfg.GPUMemoryUtilization)
	}
	// A chunked prefill runs any prompt, so there is nothing to refuse.
	cfg.RefuseLongPrompts = cfg.RefuseLongPrompts && !cfg.ChunkedPrefill
	autoLen := cfg.MaxModelLen == 0
	if autoLen {
		cfg.MaxModelLen = cfg.Model.MaxContext
	}
	if cfg.MaxModelLen < 1 {
		return nil, fmt.Errorf("%w: max model len %d (want >= 1)", ErrBadEngineCfg, cfg.MaxModelLen)
	}
	// vLLM keeps A100s on the small defaults whatever their memory: a
	// larger budget lowered their throughput (EngineArgs.get_batch_defaults,
	// vLLM PR #17885).
	big := cfg.GPU.MemoryGiB >= 70 && !strings.Contains(strings.ToLower(cfg.GPU.Name), "a100")
	capFromKV := cfg.RunningCapFromKV && cfg.MaxNumSeqs == 0
	if cfg.MaxNumSeqs == 0 {
		cfg.MaxNumSeqs = 256
		if big {
			cfg.MaxNumSeqs = 1024
		}
	}
	if cfg.MaxNumBatchedTokens == 0 {
		switch {
		case cfg.RefuseLongPrompts:
			cfg.MaxNumBatchedTokens = 8192
		case !cfg.ChunkedPrefill:
			cfg.MaxNumBatchedTokens = max(cfg.MaxModelLen, 2048)
		case big:
			cfg.MaxNumBatchedTokens = 8192
		default:
			cfg.MaxNumBatchedTokens = 2048
		}
	}
	if cfg.MaxNumSeqs < 1 || cfg.MaxNumBatchedTokens < 1 {
		return nil, fmt.Errorf("%w: max num seqs %d and max num batched tokens %d must be >= 1", ErrBadEngineCfg, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens)
	}
	if !cfg.ChunkedPrefill && !cfg.RefuseLongPrompts && cfg.MaxNumBatchedTokens < cfg.MaxModelLen {
		return nil, fmt.Errorf("%w: without chunked prefill max num batched tokens (%d) must be >= max model len (%d)", ErrBadEngineCfg, cfg.MaxNumBatchedTokens, cfg.MaxModelLen)
	}
	if cfg.MaxNumBatchedTokens < cfg.MaxNumSeqs {
		// vLLM requires this too: every running request must be able to decode.
		return nil, fmt.Errorf("%w: max num batched tokens (%d) must be >= max num seqs (%d)", ErrBadEngineCfg, cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs)
	}
	if cfg.QueueLimit < 0 {
		return nil, fmt.Errorf("%w: queue limit %d (want >= 0; 0 = unbounded)", ErrBadEngineCfg, cfg.QueueLimit)
	}
	if cfg.StepTimeScale == 0 {
		cfg.StepTimeScale = 1
	}
	if cfg.StepTimeScale < 0 {
		return nil, fmt.Errorf("%w: step time scale %v (want > 0)", ErrBadEngineCfg, cfg.StepTimeScale)
	}
	p := DefaultCost
	if cfg.Cost != nil {
		p = *cfg.Cost
	}
	mem := planMemory(cfg.GPU, cfg.Model, cfg.TP, cfg.GPUMemoryUtilization, cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs, cfg.NoSamplerWarmup, p)
	if mem.kvBlocks <= 0 {
		return nil, fmt.Errorf("%w: %s needs %.1f GiB of weights per GPU at tp %d, but %s offers %.1f GiB (%.0f%% of %.1f GiB) minus %.1f GiB activations and %.1f GiB reserved; use more GPUs (--tp) or a larger GPU",
			ErrDoesNotFit, cfg.Model.Name, mem.weightBytes/(1<<30), cfg.TP, cfg.GPU.Name, mem.usableBytes/(1<<30),
			cfg.GPUMemoryUtilization*100, cfg.GPU.MemoryGiB, mem.profilePeak()/(1<<30), mem.reserveBytes/(1<<30))
	}
	if capFromKV {
		kv := mem.kvBlocks * BlockTokens
		pool := min(max(int(float64(kv)/float64(max(cfg.Model.MaxContext, 1))*512), 2048), 4096)
		cfg.MaxNumSeqs = max(1, min(kv/2, pool, cfg.MaxNumBatchedTokens))
	}
	// A context's windowed layers hold at most winReserve blocks beside
	// its full-attention ones: a window and a step's chunk.
	winReserve := 0
	if m := cfg.Model; m.SlidingLayers > 0 && m.SlidingLayers < m.Layers {
		w := int32(m.SlidingWindow)
		winReserve = int(windowBlocksFor(w, int32(min(cfg.MaxNumBatchedTokens, cfg.MaxModelLen)), w, int32(m.SlidingLayers), int32(m.Layers-m.SlidingLayers)))
	}
	if capTok := (mem.kvBlocks - winReserve) * BlockTokens; capTok < cfg.MaxModelLen && autoLen {
		// vLLM refuses to start here; a simulator is more useful if it
		// serves the contexts that fit (Config().MaxModelLen tells).
		cfg.MaxModelLen = max(capTok, 0)
		if !cfg.ChunkedPrefill && !cfg.RefuseLongPrompts && cfg.MaxNumBatchedTokens < cfg.MaxModelLen {
			cfg.MaxNumBatchedTokens = cfg.MaxModelLen
		}
	}
	if capTok := (mem.kvBlocks - winReserve) * BlockTokens; capTok < cfg.MaxModelLen {
		return nil, fmt.Errorf("%w: the KV cache holds %d tokens (%.2f GiB) but max model len is %d; lower the max model len to at most %d, or add memory (--tp, --gpu-memory-utilization)",
			ErrDoesNotFit, capTok, mem.kvBytes/(1<<30), cfg.MaxModelLen, capTok)
	}
	var window, winNum, winDen int32
	if m := cfg.Model; m.SlidingLayers > 0 && m.SlidingLayers < m.Layers {
		window, winNum, winDen = int32(m.SlidingWindow), int32(m.SlidingLayers), int32(m.Layers-m.SlidingLayers)
	}
	e := &Engine{
		window:     window,
		winNum:     winNum,
		winDen:     winDen,
		cfg:        cfg,
		async:      cfg.AsyncScheduling(),
		cost:       newCostModel(cfg.GPU, cfg.Model, cfg.TP, p, cfg.StepTimeScale),
		fe:         newFrontEnd(p, cfg.Seed),
		sn:         newStepNoise(p.StepTimeCV, cfg.Seed),
		mem:        mem,
		byID:       make(map[int64]int32),
		freeBlocks: mem.kvBlocks,
	}
	lora, err := newLoRAState(cfg.LoRA, cfg.Model)
	if err != nil {
		return nil, err
	}
	e.lora = lora
	e.waiting.init(64)
	e.pc.init()
	e.st.KVBlocksTotal = mem.kvBlocks
	e.st.MaxNumSeqs, e.st.MaxNumBatchedTokens, e.st.MaxModelLen = cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens, cfg.MaxModelLen
	e.st.KVCapacityTokens = mem.kvBlocks * BlockTokens
	e.st.GPUs = cfg.TP
	if cfg.GPU.HasPower() && !e.cost.useLinear {
		e.power = true
		e.st.IdlePowerW = cfg.GPU.IdlePowerW()
	}
	return e, nil
}

// Config returns the configuration with defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// PromptLimit is the longest prompt the engine accepts short of its max
// model len: the step's budget on an engine that refuses longer prompts
// (Config.RefuseLongPrompts), else 0 (none).
func (e *Engine) PromptLimit() int {
	if e.cfg.RefuseLongPrompts {
		return e.cfg.MaxNumBatchedTokens
	}
	return 0
}

// MemoryPlan describes how GPU memory was split (for reports).
func (e *Engine) MemoryPlan() string { return e.mem.String() }

// Now is the virtual time in ns.
func (e *Engine) Now() int64 { return e.now }

// AdvanceTo lets idle time pass; t before Now is ignored.
func (e *Engine) AdvanceTo(t int64) {
	if t > e.now {
		e.now = t
	}
}

// HasWork reports whether a step would do anything.
func (e *Engine) HasWork() bool { return len(e.running) > 0 || e.waiting.len() > 0 }

// Submit adds a request arriving now.
func (e *Engine) Submit(id int64, inputTokens, outputTokens int) error {
	return e.SubmitAt(id, inputTokens, outputTokens, e.now)
}

// Errors name the numbers but not the id: callers add it.

// SubmitAt adds a request that arrived at virtual time at <= Now (it arrived
// during the step that just ran and is seen by the next one); its queue time
// counts from at.
func (e *Engine) SubmitAt(id int64, inputTokens, outputTokens int, at int64) error {
	return e.SubmitRequest(Request{ID: id, InputTokens: inputTokens, OutputTokens: outputTokens, At: at})
}

// SubmitRequest adds a request with its content (for prefix caching); a
// Request without Content segments is all unique content, as SubmitAt's.
func (e *Engine) SubmitRequest(rq Request) error {
	id, inputTokens, outputTokens, at := rq.ID, rq.InputTokens, rq.OutputTokens, rq.At
	if inputTokens < 1 || outputTokens < 1 {
		return fmt.Errorf("%w: %d input and %d output tokens (want >= 1 each)", ErrBadRequest, inputTokens, outputTokens)
	}
	if rq.TransferredTokens < 0 || rq.TransferredTokens >= inputTokens {
		return fmt.Errorf("%w: %d transferred of %d prompt tokens (want 0 to %d)", ErrBadRequest, rq.TransferredTokens, inputTokens, inputTokens-1)
	}
	if total := inputTokens + outputTokens; total > e.cfg.MaxModelLen {
		return fmt.Errorf("%w: %d prompt + %d output = %d tokens, over the max model len %d of %s",
			ErrTooLong, inputTokens, outputTokens, total, e.cfg.MaxModelLen, e.cfg.Model.Name)
	}
	if limit := e.PromptLimit(); limit > 0 && inputTokens > limit {
		return fmt.Errorf("%w: %d prompt tokens, over the %d an engine without chunked prefill runs in one step (max num batched tokens)",
			ErrPromptOverBudget, inputTokens, limit)
	}
	if rq.Adapter < 0 || rq.Adapter > 0 && e.lora.max == 0 {
		return fmt.Errorf("%w: LoRA adapter %d, but the engine serves %d adapters", ErrBadRequest, rq.Adapter, e.lora.max)
	}
	if _, dup := e.byID[id]; dup {
		return fmt.Errorf("%w: %d", ErrDuplicateID, id)
	}
	if e.cfg.QueueLimit > 0 && e.waiting.len() >= e.cfg.QueueLimit {
		e.st.Rejected++
		return fmt.Errorf("%w: %d requests waiting (limit %d)", ErrQueueFull, e.waiting.len(), e.cfg.QueueLimit)
	}
	if at > e.now {
		at = e.now
	}
	slot := takeSlot(&e.reqs, &e.free)
	r := &e.reqs[slot]
	*r = req{id: id, prompt: int32(inputTokens), output: int32(outputTokens), live: true, arrival: at, firstSched: -1, noGapStats: rq.NoGapStats,
		transferred: int32(rq.TransferredTokens), adapter: rq.Adapter, segs: r.segs[:0], cached: r.cached[:0], cur: cursor{ended: e.cfg.NoPrefixCaching}}
	if !e.cfg.NoPrefixCaching {
		r.setContent(rq.Content, rq.OutputID)
		// All unique (no content named): nothing to look up or register.
		r.cur.ended = len(rq.Content) == 0 && rq.OutputID == 0
	}
	e.byID[id] = slot
	e.waiting.pushBack(slot)
	e.st.Submitted++
	return nil
}

// Cancel removes a request (the client went away), freeing its sequence slot
// and KV blocks. Unknown ids are ignored.
func (e *Engine) Cancel(id int64) {
	slot, ok := e.byID[id]
	if !ok {
		return
	}
	if !e.waiting.remove(slot) {
		for i, s := range e.running {
			if s == slot {
				e.running = append(e.running[:i], e.running[i+1:]...)
				break
			}
		}
	}
	e.release(slot)
	e.st.Canceled++
}

func (e *Engine) release(slot int32) {
	r := &e.reqs[slot]
	e.dropBlocks(r)
	delete(e.byID, r.id)
	*r = req{segs: r.segs[:0], cached: r.cached[:0]}
	e.free = append(e.free, slot)
}

// add counts request r computing n new tokens this step.
func (l *stepLoad) add(r *req, n int32) {
	c := int64(r.computed)
	n64 := int64(n)
	l.seqs++
	l.newTokens += n64
	l.ctxTokens += c + n64
	l.attnPairs += n64*c + n64*(n64+1)/2
	if l.window > 0 {
		l.winCtxTokens += min(c+n64, l.window-1+n64)
		l.winAttnPairs += windowPairs(c, n64, l.window)
	}
	left := r.numTokens() - r.computed
	if n == left {
		l.sampled++
	}
	if c == 0 || left > 1 {
		l.prefillTokens += n64
	}
}

// windowPairs is the (query, key) pairs of n new tokens after c computed
// ones in a layer whose queries see at most the last window keys:
// Σ min(p, window) over positions p = c+1 … c+n.
func windowPairs(c, n, window int64) int64 {
	hi := min(c+n, window) // positions up to hi see all their keys
	var pairs int64
	if hi > c {
		pairs = (hi*(hi+1) - c*(c+1)) / 2
	}
	return pairs + (c+n-max(c, hi))*window
}

func blocksFor(tokens int32) int32 { return (tokens + BlockTokens - 1) / BlockTokens }

// windowBlocks is the pool blocks request r's sliding-window layers hold
// while a step computes n tokens after its computed ones (0 without them).
func (e *Engine) windowBlocks(computed, n int32) int32 {
	if e.window == 0 {
		return 0
	}
	return windowBlocksFor(computed, n, e.window, e.winNum, e.winDen)
}

// windowBlocksFor: the blocks from the one holding the first new token's
// window start (computed − window + 1) to the last new token, as vLLM's
// SlidingWindowManager keeps them (remove_skipped_blocks frees those
// wholly before the window; a chunk's new tokens all need slots), in
// pool blocks: num windowed layers to den full ones, rounded up.
func windowBlocksFor(computed, n, window, num, den int32) int32 {
	first := max(computed-window+1, 0) / BlockTokens
	blocks := blocksFor(computed+n) - first
	return (blocks*num + den - 1) / den
}

// takeWindowBlocks moves r's windowed-layer blocks to want, freeing or
// taking the difference; the caller checked a rise fits.
func (e *Engine) takeWindowBlocks(r *req, want int32) {
	d := int(want - r.winBlocks)
	if d < 0 {
		e.freeBlocks -= d
	} else if d > 0 {
		from := min(d, e.freeBlocks)
		e.freeBlocks -= from
		for range d - from {
			e.pc.evictHead()
		}
	}
	r.winBlocks = want
}

// Step runs one scheduler step starting at Now: it schedules (running
// requests first, then FCFS admission), prices the step, advances Now to the
// step end and calls emit once per token produced, in running order. It
// returns the step duration in ns (0 when there was nothing to do). emit must
// not call back into the engine except Now and Stats.
func (e *Engine) Step(emit func(Emission)) int64 {
	// With SeparatePrefill (SGLang's default scheduler) the first pass
	// schedules prompt work only, and the running decodes make no
	// progress this step; when no prompt work can start, a second pass
	// schedules as usual (a decode step).
	prefillOnly := e.cfg.SeparatePrefill
schedule:
	budget := int32(e.cfg.MaxNumBatchedTokens)
	preempted := false
	// window is hoisted out of the loop below, run for every decode of
	// every step: 0 for a model without sliding-window layers.
	window := e.window
	load := stepLoad{window: int64(window)}

	// 1. Running requests: decodes and unfinished (or recomputing) prefills.
	i := 0
	for i < len(e.running) && budget > 0 {
		r := &e.reqs[e.running[i]]
		left := r.numTokens() - r.computed
		if left == 1 && (r.computed&(BlockTokens-1) != 0 || e.freeBlocks > 0) && (window == 0 || e.windowBlocks(r.computed, 1) == r.winBlocks) {
			// Fast path for the common case, a decode that fits: one
			// token, a new block only when the last one is full.
			if prefillOnly {
				i++
				continue
			}
			if r.computed&(BlockTokens-1) == 0 {
				e.freeBlocks--
				r.blocks++
			}
			r.newTokens = 1
			c := int64(r.computed)
			load.seqs++
			load.newTokens++
			load.ctxTokens += c + 1
			load.attnPairs += c + 1
			if window > 0 {
				w := min(c+1, int64(window))
				load.winCtxTokens += w
				load.winAttnPairs += w
			}
			load.sampled++
			budget--
			i++
			continue
		}
		if left == 1 && prefillOnly {
			i++
			continue
		}
		n := min(left, budget)
		ok := true
		for {
			want := int(blocksFor(r.computed+n) - r.blocks)
			win := e.windowBlocks(r.computed, n)
			if want+int(win-r.winBlocks) <= e.available() {
				if win < r.winBlocks {
					e.takeWindowBlocks(r, win) // frees first
				}
				e.takeBlocks(r, want)
				e.takeWindowBlocks(r, win)
				break
			}
			// Out of blocks: preempt the newest running request by recompute.
			last := len(e.running) - 1
			victim := e.running[last]
			e.running = e.running[:last]
			v := &e.reqs[victim]
			e.keepForRecompute(v)
			e.dropBlocks(v)
			v.computed, v.newTokens = 0, 0
			v.preemptions++
			e.waiting.pushFront(victim)
			e.st.Preemptions++
			preempted = true
			if last == i {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		r.newTokens = n
		load.add(r, n)
		budget -= n
		i++
	}
	scheduled := i
	e.st.LastStepPrefixQueries, e.st.LastStepPrefixHits = 0, 0

	// 2. Admission, first come first served, unless this step preempted.
	// With async scheduling this step was scheduled while the last one
	// ran: a request that arrived after the last step started waits for
	// the next, unless nothing runs (an idle engine schedules at once) or
	// it is a preempted request coming back.
	cutoff := e.now
	if e.async && scheduled > 0 && e.lastEnd == e.now {
		cutoff = e.lastStart
	}
	var loraSkipped []int32 // waiting requests whose adapter has no slot this step
	// SGLang admits a request only when its whole prompt fits beside the
	// prompts already running (PrefillAdder's token budget), so a chunked
	// prefill never runs out of blocks mid-prompt.
	promptReserve := 0
	if e.cfg.SeparatePrefill && e.waiting.len() > 0 { // only admission reads it
		for _, slot := range e.running {
			r := &e.reqs[slot]
			promptReserve += max(0, int(blocksFor(r.prompt+r.generated)-r.blocks))
		}
	}
	if !preempted && scheduled == len(e.running) {
		for e.waiting.len() > 0 && budget > 0 && len(e.running) < e.cfg.MaxNumSeqs {
			slot := e.waiting.front()
			r := &e.reqs[slot]
			if r.arrival > cutoff && r.preemptions == 0 {
				break
			}
			if !e.lora.fits(r.adapter) {
				loraSkipped = append(loraSkipped, e.waiting.popFront())
				continue
			}
			need := r.numTokens() // computed is 0 while waiting
			var cur cursor
			freeHits := 0
			e.hits = e.hits[:0]
			transfer := r.transferred > 0 && r.preemptions == 0
			if !e.cfg.NoPrefixCaching && !transfer {
				cur, freeHits = e.lookup(r)
			}
			hitTokens := int32(len(e.hits)) * BlockTokens
			if transfer {
				hitTokens = r.transferred // fresh blocks, filled by the transfer
			}
			// An unchunked prompt waits for a step with room for all of it.
			// A preempted request whose prompt and output together exceed
			// the whole budget (possible only with RefuseLongPrompts) is
			// recomputed in chunks, or it would never run again.
			if !e.cfg.ChunkedPrefill && need-hitTokens > budget && int(need-hitTokens) <= e.cfg.MaxNumBatchedTokens {
				break
			}
			n := min(need-hitTokens, budget)
			want := int(blocksFor(hitTokens+n)) - len(e.hits)
			win := e.windowBlocks(hitTokens, n)
			if want+int(win) > e.available()-freeHits {
				break
			}
			if e.cfg.SeparatePrefill {
				whole := int(blocksFor(need)) - len(e.hits)
				if promptReserve+whole > e.available()-freeHits {
					break
				}
				promptReserve += whole - want
			}
			e.waiting.popFront()
			if !e.cfg.NoPrefixCaching {
				for _, k := range e.hits {
					if e.pc.ent[k].ref == 0 {
						e.pc.unlink(k)
					}
					e.pc.ent[k].ref++
				}
				r.cached = append(r.cached, e.hits...)
				r.blocks = int32(len(e.hits))
				r.hashedBlocks = int32(len(e.hits))
				r.cur = cur
				r.computed = hitTokens
				if r.preemptions == 0 && !transfer {
					// vLLM keeps re-admissions out of these counters.
					e.st.LastStepPrefixQueries += int(need)
					e.st.LastStepPrefixHits += int(hitTokens)
				}
			}
			e.takeBlocks(r, want)
			e.takeWindowBlocks(r, win)
			if transfer {
				r.computed = hitTokens
			}
			r.newTokens = n
			load.add(r, n)
			if r.firstSched < 0 {
				r.firstSched = e.now
			}
			budget -= n
			e.running = append(e.running, slot)
			if r.adapter != 0 {
				e.lora.acquire(r.adapter, e.now)
				r.loraHeld = true
			}
		}
		scheduled = len(e.running)
	}
	for j := len(loraSkipped) - 1; j >= 0; j-- {
		e.waiting.pushFront(loraSkipped[j])
	}
	if prefillOnly && load.newTokens == 0 {
		prefillOnly = false
		goto schedule
	}
	if scheduled == 0 {
		return 0
	}

	// 3. Price the step.
	// With a power model the step's terms price it and its power both:
	// computed once (power implies the roofline cost).
	var terms StepTerms
	var dt int64
	if e.power {
		terms = e.cost.terms(&load)
		dt = e.cost.termsNS(terms)
	} else {
		dt = e.cost.stepNS(&load)
	}
	dt += e.lora.takeLoadNS()
	if e.sn.sigma > 0 {
		dt = max(int64(float64(dt)*e.sn.scale(e.st.Steps)), 1)
	}
	if e.fe.loadNS > 0 {
		e.noteStream(e.now-e.lastEnd, dt, load.sampled)
	}
	e.lastStart = e.now
	e.now += dt
	e.lastEnd = e.now
	e.st.Steps++
	e.st.BusyNS += dt
	e.st.LastStepNS = dt
	e.st.LastStepBatch = int(load.seqs) // with prefillOnly, not the decodes passed over
	e.st.LastStepNewTokens = int(load.newTokens)
	e.st.LastStepPrefillTokens = int(load.prefillTokens)
	e.st.PrefillTokens += load.prefillTokens
	e.st.PrefixCacheQueries += int64(e.st.LastStepPrefixQueries)
	e.st.PrefixCacheHits += int64(e.st.LastStepPrefixHits)
	if e.power {
		e.notePower(terms, dt)
	}

	// 4. Apply progress and emit tokens at the step end; drop finished
	// requests from running while keeping the order of the rest.
	k := 0
	for j, slot := range e.running {
		r := &e.reqs[slot]
		if j < scheduled {
			r.computed += r.newTokens
			r.newTokens = 0
			if !r.cur.ended {
				e.register(r)
			}
			if r.computed == r.numTokens() {
				idx := r.generated
				r.generated++
				e.st.OutputTokens++
				if idx == 0 {
					r.firstToken = e.now
				} else if e.cfg.OnGaps != nil && !r.noGapStats {
					e.gaps.add(e.now-r.lastToken, e.cfg.OnGaps)
				}
				r.lastToken = e.now
				if r.generated == r.output {
					em := Emission{ID: r.id, Index: int(idx), Time: e.now, Finished: true, Phases: Phases{
						Queue: r.firstSched - r.arrival, Prefill: r.firstToken - r.firstSched, Decode: e.now - r.firstToken,
					}}
					e.release(slot)
					e.st.Finished++
					if emit != nil {
						emit(em)
					}
					continue
				}
				if emit != nil && (idx == 0 || !e.cfg.EdgeEmissionsOnly) {
					em := Emission{ID: r.id, Index: int(idx), Time: e.now}
					if idx == 0 {
						// Queue and prefill are final at the first token: a
						// server sends them with it (response headers).
						em.Phases = Phases{Queue: r.firstSched - r.arrival, Prefill: r.firstToken - r.firstSched}
					}
					emit(em)
				}
			}
		}
		e.running[k] = slot
		k++
	}
	e.running = e.running[:k]
	if e.cfg.OnGaps != nil {
		e.gaps.flush(e.cfg.OnGaps)
	}
	return dt
}

// gapGroups collects one step's inter-token gaps by value; a step has few
// distinct ones (the step's own duration for every continuing decode).
type gapGroups struct {
	vals   [4]int64
	counts [4]int
	n      int
}

func (g *gapGroups) add(v int64, out func(int64, int)) {
	for i := range g.n {
		if g.vals[i] == v {
			g.counts[i]++
			return
		}
	}
	if g.n == len(g.vals) {
		out(v, 1)
		return
	}
	g.vals[g.n], g.counts[g.n] = v, 1
	g.n++
}

func (g *gapGroups) flush(out func(int64, int)) {
	for i := range g.n {
		out(g.vals[i], g.counts[i])
	}
	g.n = 0
}

// notePower adds one step of dt ns to the power figures.
func (e *Engine) notePower(terms StepTerms, dt int64) {
	a := e.cost.activity(terms)
	w := e.cfg.GPU.PowerW(a)
	d := float64(dt)
	e.st.StepEnergyJ += w * d / 1e9
	e.st.SMActiveNS += a.SM * d
	e.st.ComputeActiveNS += a.Compute * d
	e.st.DRAMActiveNS += a.DRAM * d
	e.st.LastStepPowerW, e.st.LastStepActivity = w, a
}

// Stats returns a snapshot of the engine's state and counters.
func (e *Engine) Stats() EngineStats {
	s := e.st
	s.Now = e.now
	if e.power {
		s.EnergyJ = float64(s.GPUs) * (s.StepEnergyJ + s.IdlePowerW*float64(e.now-s.BusyNS)/1e9)
	}
	s.Running = len(e.running)
	s.Waiting = e.waiting.len()
	// Cached free blocks are free memory, as vLLM's usage gauge counts them.
	s.KVBlocksUsed = s.KVBlocksTotal - e.freeBlocks - e.pc.evictable
	s.PrefixCachedBlocks = len(e.pc.byHash)
	if s.KVBlocksTotal > 0 {
		s.KVUsage = float64(s.KVBlocksUsed) / float64(s.KVBlocksTotal)
	}
	return s
}

// deque is a ring buffer of request slots: the waiting queue, with pushes at
// the front for preempted requests.
type deque struct {
	buf        []int32
	head, size int
}

func (d *deque) init(n int) { d.buf = make([]int32, n) }
func (d *deque) len() int   { return d.size }

func (d *deque) grow() {
	nb := make([]int32, 2*len(d.buf))
	for i := 0; i < d.size; i++ {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(v int32) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.size)%len(d.buf)] = v
	d.size++
}

func (d *deque) pushFront(v int32) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = v
	d.size++
}

func (d *deque) front() int32 { return d.buf[d.head] }

func (d *deque) popFront() int32 {
	v := d.buf[d.head]
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return v
}

// remove deletes v (O(n); only Cancel uses it).
func (d *deque) remove(v int32) bool {
	for i := 0; i < d.size; i++ {
		if d.buf[(d.head+i)%len(d.buf)] == v {
			for j := i; j < d.size-1; j++ {
				d.buf[(d.head+j)%len(d.buf)] = d.buf[(d.head+j+1)%len(d.buf)]
			}
			d.size--
			return true
		}
	}
	return false
}
