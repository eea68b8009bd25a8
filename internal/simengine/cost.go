package simengine

import (
	"fmt"
	"math"
)

// CostParams are the constants of the roofline step-cost model that are not
// physical properties of a GPU or a model. docs/simulator.md says where each
// comes from; the fitted ones were fitted to the published measurements in
// its validation table.
type CostParams struct {
	// StepOverheadNS is T0: the fixed cost of one engine step (scheduler,
	// sampling, kernel launches, CPU-GPU sync). Fitted.
	StepOverheadNS int64
	// StepPerSeqNS is the cost of a step per sequence it runs, on top of
	// T0: the engine's own work for each request of the batch (scheduling,
	// input preparation, sampling and output processing in Python, or one
	// kernel launch per sequence in an engine without CUDA graphs). 0 in
	// DefaultCost: on the vLLM V1 hosts of the validation table whose CPU
	// keeps up it is not seen beside the roofline (docs/simulator.md,
	// "The step's cost per sequence"); knee calibrate fits it from decode
	// steps at several batch sizes, and CPU-bound hosts need it.
	StepPerSeqNS int64
	// MemEfficiency is the fraction of peak memory bandwidth that weight and
	// KV reads achieve. Fitted.
	MemEfficiency float64
	// ComputeEfficiency is the fraction of the GPU's achievable matmul
	// rate (GPU.AchievableBF16TFLOPS: measured, not the datasheet peak) that the
	// GEMMs and attention achieve. Assumed 1 for vLLM; a calibrated
	// profile fits it.
	ComputeEfficiency float64
	// KVMemEfficiency is the fraction of peak memory bandwidth at which
	// attention streams the KV cache (paged decode-attention kernels read
	// long contiguous blocks, closer to peak than small-batch weight
	// GEMVs). 0 = MemEfficiency. Fitted.
	KVMemEfficiency float64
	// AllReduceLatencyNS is the fixed cost of one tensor-parallel all-reduce
	// (two per layer per step). vLLM's custom all-reduce sends small
	// messages in one shot over NVLink/NVSwitch, so the cost hardly grows
	// with tp. Assumed, from NCCL/custom all-reduce latencies.
	AllReduceLatencyNS int64
	// AllReducePerPeerNS is the latency an all-reduce adds per GPU beyond
	// the first (tp − 1 peers): a one-shot all-reduce reads every peer's
	// buffer and a ring passes tp − 1 hops each way, and the slowest GPU of
	// the group sets the pace, so small-message all-reduces slow as tp
	// grows (NCCL's and vLLM's custom all-reduce small-message times grow
	// from ~10 µs at 2 GPUs to ~20 µs at 8 on NVSwitch). Assumed.
	AllReducePerPeerNS int64
	// PCIeAllReduceLatencyScale multiplies the all-reduce latency
	// (AllReduceLatencyNS and AllReducePerPeerNS) on GPUs whose link is
	// PCIe: each hop crosses the host's PCIe switches (~µs, against NVLink's
	// sub-µs), and vLLM's custom all-reduce needs peer access that PCIe
	// servers of more than two cards often lack, so NCCL's slower path
	// runs. Assumed. 0 = 1.
	PCIeAllReduceLatencyScale float64
	// ExpertSmallBatchEfficiency is the share of the weight reads' memory
	// efficiency that a mixture of experts' expert GEMMs reach when each
	// expert a step touches serves one token: the fused MoE kernel runs
	// one small GEMV per touched expert, launching and synchronising far
	// more blocks than bytes read warrant, so a small batch reads the
	// experts well below the dense layers' rate. With m tokens per touched
	// expert the share is 1 − (1 − this)/m², the dense rate once a few
	// tokens share an expert.
	// 0 = 1 (no penalty). Fitted (the grid of TestLeaveOneSourceOut).
	ExpertSmallBatchEfficiency float64
	// ExpertComputeEfficiency is the share of the linear layers' compute
	// rate that a mixture of experts' expert GEMMs reach: vLLM's fused MoE
	// kernels (Triton fused_moe) sort and gather each expert's tokens,
	// run many narrow grouped GEMMs (under TP an expert is 192-256 columns
	// wide per GPU for Qwen3-235B and DeepSeek-R1 at TP8) and scatter and
	// sum their outputs, far below the dense layers' cuBLAS rate once the
	// experts are compute-bound (docs/simulator.md, "Expert GEMMs at large
	// batch"). Only the experts' FLOPs pay it; attention, the dense
	// layers, router and shared experts keep the dense rate.
	// 0 = 1 (no penalty). Fitted (the grid of TestLeaveOneSourceOut).
	ExpertComputeEfficiency float64
	// BlockFP8Efficiency is the share of the linear layers' rate, their
	// weight reads and their arithmetic alike, that block-scaled FP8
	// weights (Model.WeightBlockSize) reach beside per-tensor FP8: vLLM
	// quantizes the activations per token and 128-wide group before each
	// GEMM, in a kernel of its own, and its block-FP8 GEMMs (Triton or
	// CUTLASS) apply a scale per 128×128 block, well below the per-tensor
	// FP8 rate at every batch (docs/simulator.md, "Block-scaled FP8
	// weights"). The dense layers and the experts pay it; attention and
	// the LM head keep their rates. 0 = 1 (no penalty). Fitted (the grid
	// of TestLeaveOneSourceOut).
	BlockFP8Efficiency float64
	// AllReduceBWEfficiency is the fraction of the GPU link's per-direction
	// bandwidth that an all-reduce achieves (NCCL's "bus bandwidth").
	// Assumed. 0 = 1.
	AllReduceBWEfficiency float64
	// FrontEndNS is the per-request cost outside the engine's steps before
	// the scheduler sees a request: HTTP parsing, chat template, handing the
	// request to the engine process. It is in TTFT and E2E, not in any
	// engine step. Fitted.
	FrontEndNS int64
	// FrontEndPerTokenNS is the front end's cost per prompt token
	// (tokenization). Assumed.
	FrontEndPerTokenNS float64
	// FrontEndSerialNS is front-end work per request done one request at a
	// time, as the per-token part is (see Engine.FrontEnd): on a host whose
	// front end paces admissions, a burst of requests reaches the engine
	// one every FrontEndSerialNS. 0 by default (docs/simulator.md, "The
	// front end").
	FrontEndSerialNS int64
	// FrontEndSerialSplit is the share of FrontEndSerialNS a request's
	// handler does before it first yields (vLLM's API server: request
	// parsing and the chat template, then an await on the tokenizer
	// thread); the rest waits its turn again, behind the work of every
	// request that arrived meanwhile. In a burst every first part then
	// runs before any second one, so first tokens start a share of the
	// burst's admission time in (0: one turn, as a separate serial lane;
	// 1: all the work in the first turn). It changes nothing for requests
	// that find the lane idle. 0 by default; fitted per host
	// (docs/simulator.md, "Hosts whose CPU does not keep up").
	FrontEndSerialSplit float64
	// FrontEndLoadNS is front-end latency added per 1,000 output tokens a
	// second that the server streams when a request arrives: on a host
	// whose API server both admits requests and streams every answer from
	// one event loop on a few slow cores, admission slows as the streaming
	// grows (the wmx L4 sweep: TTFT grows ~26-34 ms per 1,000 tok/s
	// streamed). The rate is an exponential average over
	// streamRateWindowNS of engine time. 0 by default (a host whose front
	// end keeps up); fitted per host (docs/simulator.md, "The front end").
	FrontEndLoadNS int64
	// FrontEndJitter spreads each request's front-end cost uniformly over
	// ±this fraction (deterministic per request and seed), as scheduling,
	// tokenization and network times vary: it is what lets identical
	// requests of a closed loop fall out of step, as they do on real
	// servers. Assumed.
	FrontEndJitter float64
	// StepTimeCV is the coefficient of variation of step times around
	// their price: each step takes a lognormal multiple of mean 1 (see
	// stepNoise). Measured by knee calibrate --step-model linear on a CPU
	// server; 0 (GPU presets) keeps steps exact.
	StepTimeCV float64
	// FrontEndRateInSteps is how fast front-end work proceeds while the
	// engine runs a step, against an idle machine: below 1 on a CPU server
	// whose compute threads take every core, so the HTTP server and
	// tokenizer wait for them (knee sim; fitted by knee calibrate
	// --step-model linear). 0 or 1: the front end has cores of its own, as
	// a GPU server's does.
	FrontEndRateInSteps float64
	// ReserveFixedBytes is memory held outside weights and KV cache: CUDA
	// context, CUDA graphs, NCCL and allocator slack. Assumed.
	ReserveFixedBytes float64
	// SamplerWarmupBytesPerLogit is the memory a logit holds at the peak
	// of vLLM V1's start-up sampler run, which samples max_num_seqs
	// requests over the whole vocabulary and whose peak is taken from the
	// KV cache (planMemory). VLLMSamplerWarmupBytesPerLogit sizes it; 0
	// (the default): no such charge. Engines without that run
	// (Config.NoSamplerWarmup) never pay it.
	SamplerWarmupBytesPerLogit float64
	// MXFP4ExpertPadding holds and streams an MXFP4 mixture of experts'
	// routed experts at the padded shapes vLLM's MXFP4 MoE kernels give
	// them (Model.expertStorageScale: gpt-oss-120b on an H100 65.8 GiB,
	// as vLLM 0.10.1 logs 65.97, where the checkpoint holds 60.7;
	// kvcap_published_test.go). Off in DefaultCost, which says why.
	MXFP4ExpertPadding bool
	// Linear, when set, prices every step with an empirical linear model
	// instead of the roofline: for servers whose step time is no GPU's
	// (a CPU server such as Ollama), fitted by knee calibrate --step-model
	// linear. The roofline fields above are then unused for step times.
	Linear *LinearStepCost
}

// LinearStepCost is a step time linear in what the step computes:
//
//	BaseNS + PerPrefillTokenNS × prompt tokens + PerDecodeSeqNS × decoding
//	sequences + PerAttentionPairNS × new tokens × context tokens
//
// where a decoding sequence makes one token over its context and the
// context counts every sequence's tokens so far (prompt tokens included).
// The last term is llama.cpp's attention: its KV cache is one array of
// cells shared by all sequences, and every token of a batch attends over
// every cell in use (masked), so attention grows with the batch's tokens
// times all sequences' context, quadratic in a lone prompt's length.
//
// PromptCurve, when set, prices the prompt tokens of a step that has any:
// the step then takes PromptCurve(prompt tokens) + PerDecodeSeqNS ×
// decoding sequences + attention, the curve interpolated linearly between
// measured prompt lengths (a lone prompt's step time, base included). A CPU
// server's matrix kernels change tiling and threading with the batch, so
// the time of a prompt is far from one line in its length (Ollama's
// runner on 2 cores: 64 tokens and 96 differ by 2x, 96 and 128 hardly).
// Beyond the last point the last segment's slope goes on.
//
// DecodeCurve, when set, prices a decode-only step the same way by its
// decoding sequences (a CurvePoint's Tokens: one new token each), base
// included, attention on top: the same kernels make Ollama's batch of 3
// cost about 0.9 of its batch of 4 on 2 cores, where a line through 1, 2
// and 4 gives 0.8. A step with prompt tokens keeps PerDecodeSeqNS for its
// decoding sequences.
type LinearStepCost struct {
	BaseNS             float64
	PerPrefillTokenNS  float64
	PerDecodeSeqNS     float64
	PerAttentionPairNS float64
	PromptCurve        []CurvePoint
	DecodeCurve        []CurvePoint
}

// CurvePoint is a step's time without attention with Tokens prompt tokens
// (PromptCurve) or decoding sequences (DecodeCurve).
type CurvePoint struct {
	Tokens int64
	NS     float64
}

// LinearStepNS prices one step of the given shape: its prompt tokens are
// NewTokens − decode, its decoding sequences decode.
func (l LinearStepCost) LinearStepNS(s StepShape, decode int64) float64 {
	attn := l.PerAttentionPairNS * float64(s.NewTokens) * float64(s.CtxTokens)
	prompt := s.NewTokens - decode
	if prompt > 0 && len(l.PromptCurve) > 0 {
		return curveAt(l.PromptCurve, prompt) + l.PerDecodeSeqNS*float64(decode) + attn
	}
	if prompt <= 0 && decode > 0 && len(l.DecodeCurve) > 0 {
		return curveAt(l.DecodeCurve, decode) + attn
	}
	return l.BaseNS + l.PerPrefillTokenNS*float64(prompt) + l.PerDecodeSeqNS*float64(decode) + attn
}

// curveAt interpolates a curve sorted by Tokens (at least one point)
// linearly, holding the first point's value below it and going on with
// the last segment's slope above the last.
func curveAt(c []CurvePoint, n int64) float64 {
	if n <= c[0].Tokens || len(c) == 1 {
		return c[0].NS
	}
	i := 1
	for i < len(c)-1 && c[i].Tokens < n {
		i++
	}
	a, b := c[i-1], c[i]
	return a.NS + (b.NS-a.NS)*float64(n-a.Tokens)/float64(b.Tokens-a.Tokens)
}

// DefaultCost is the cost model of a host knee has not seen. Its T0,
// cost per sequence, front end (per request and serial admission),
// compute efficiencies and block-FP8 efficiency are fitted across every
// source of the validation table at once, each metric's rows weighing
// the same (TestLeaveOneSourceOut holds them to that fit, and
// docs/validation.md gives their error on sources they were not fitted
// to); the rest are assumed or measured as each field says.
var DefaultCost = CostParams{
	StepOverheadNS:    1_200_000, // 1.2 ms: fitted
	StepPerSeqNS:      0,         // fitted (0 and 20 µs tried)
	MemEfficiency:     0.76,
	ComputeEfficiency: 0.7,       // fitted (1 and 0.7 tried)
	FrontEndSerialNS:  8_000_000, // 8 ms: fitted (0, 4 and 8 ms tried)
	// Half of the serial admission before the handler first yields:
	// fitted (0 and 0.5 tried with 4 and 8 ms)
	FrontEndSerialSplit: 0.5,
	KVMemEfficiency:     0.83,
	AllReduceLatencyNS:  8_000, // 8 µs
	// 2 µs a peer: 10 µs at TP2, 14 µs at TP4, 22 µs at TP8 per all-reduce
	AllReducePerPeerNS:         2_000,
	PCIeAllReduceLatencyScale:  3,
	ExpertSmallBatchEfficiency: 0.4, // fitted (1 and 0.4 tried): DeepSeek-R1 and gpt-oss at a few users choose 0.4
	// Fitted (1, 0.5, 0.3, 0.2 and 0.12 tried): every fold of
	// TestLeaveOneSourceOut chooses 0.3 from 1, 0.5 and 0.3, as GPUStack's
	// DeepSeek-R1, Qwen3-235B-A22B and gpt-oss bursts want.
	ExpertComputeEfficiency: 0.3,
	// Fitted (1, 0.7, 0.5 and 0.35 tried): 20 folds of 21 choose 0.5, the
	// fold without SkyPilot's vLLM 0.8.4 source 0.7 (also with expert
	// compute efficiency 0.5 offered beside 0.3: every fold keeps 0.3). It reaches only
	// block-scaled FP8 weights (DeepSeek-R1 of the table); vLLM's own
	// kernel benchmarks put block-FP8 GEMMs below half the per-tensor FP8
	// rate (docs/simulator.md, "Block-scaled FP8 weights").
	BlockFP8Efficiency:    0.5,
	AllReduceBWEfficiency: 0.75,
	ReserveFixedBytes:     1.5 * (1 << 30),
	// vLLM V1's start-up sampler run is not charged by default: at
	// VLLMSamplerWarmupBytesPerLogit it fixed GPUStack's gpt-oss bursts'
	// TPOT, but the held-out TTFT and throughput medians got worse
	// (docs/simulator.md, "vLLM's start-up sampler run: tried, not shipped").
	SamplerWarmupBytesPerLogit: 0,
	// vLLM's padded MXFP4 experts are not charged by default: they bring
	// knee's gpt-oss weights to vLLM's logged 65.97 GiB (within 0.2%), but
	// held out (median / p90) TTFT went 20.0%/60.2% -> 21.9%/60.2%,
	// TPOT 9.5%/35.1% -> 9.8%/31.1%, throughput 9.7%/26.4% ->
	// 10.1%/27.5%: GPUStack's gpt-oss-120b bursts on one H100 then decode
	// at the right pace (TPOT +96/+113/+199% -> +11/+14/-33%) but queue
	// too long (TTFT -4/+2/+16% -> +26/+29/+29%).
	MXFP4ExpertPadding: false,
	FrontEndNS:         FittedFrontEndNS,
	FrontEndPerTokenNS: 1_000, // 1 µs per prompt token
	FrontEndJitter:     0.5,
}

// VLLMV0StepPerSeqNS is the step work per sequence of vLLM's V0 engine on
// top of CostParams.StepPerSeqNS: V0 scheduled, prepared each step's
// inputs, sampled and turned every sequence's output into Python objects
// between steps, on the step's critical path (vLLM's multi-step RFC,
// vllm-project/vllm issue 6854: "5-13ms of GPU bubble" a decode step), so
// its steps grow with the batch beyond the roofline where V1's overlap.
// Fitted leave one source out on the V0 sources of the validation table
// (docs/validation.md); the vllm-v0 server profile carries it.
const VLLMV0StepPerSeqNS = 100_000 // 100 µs: fitted (0, 50, 100, 200 and 400 µs tried; every fold chose 100)

// costModel holds per-GPU (one of TP) derived quantities so that pricing a
// step is a few multiplications.
type costModel struct {
	t0NS        float64
	perSeqNS    float64 // CostParams.StepPerSeqNS
	nsPerByte   float64 // 1 / (bandwidth × efficiency), ns: weights
	nsPerKVByte float64 // the same for KV cache reads
	nsPerFLOP   float64 // 1 / (achievable matmul rate × efficiency), ns: attention and LM head
	weightBytes float64 // weights read every step, per GPU (for MoE: all but the experts)
	// linearNSPerToken is a new token's arithmetic in the linear layers,
	// per GPU: the dense part at the linear rate (FP8 tensor cores for FP8
	// weights), the routed experts it runs through at that rate times
	// CostParams.ExpertComputeEfficiency. Priced once, not every step.
	linearNSPerToken float64
	lmHeadFLOPs      float64 // 2 × hidden × vocab per sampled token, per GPU
	kvBytesTok       float64 // KV bytes read per token of context, per GPU: full-attention layers
	// FLOPs per (query, key) pair: QKᵀ and AV, per GPU: full-attention layers
	attnFLOPsPair float64
	// The same for the sliding-window layers, whose context is bounded by
	// the window (stepLoad.winCtxTokens, winAttnPairs); 0 without them.
	winKVBytesTok, winAttnFLOPsPair float64
	// Mixture of experts: each layer's router sends every token to topK of
	// experts; a step reads the weights of every expert that at least one of
	// its tokens chose. With n tokens routed uniformly at random that is
	// experts × (1 − (1 − topK/experts)^n) per layer.
	experts, topK  float64
	expertBytesAll float64 // bytes of one expert in every MoE layer, per GPU
	expertSmallEff float64 // CostParams.ExpertSmallBatchEfficiency (1 = none)
	// All-reduce (tp > 1): 2 per layer; each moves 2(tp−1)/tp × tokens ×
	// hidden × 2 bytes over the link.
	arCount      float64
	arLatencyNS  float64
	arNSPerToken float64
	scale        float64
	// linear replaces the roofline when set (CostParams.Linear).
	linear    LinearStepCost
	useLinear bool
}

func newCostModel(gpu GPU, m Model, tp int, p CostParams, scale float64) costModel {
	wb, db := m.weightPrecisionBytes()
	fTP := float64(tp)
	h, v := float64(m.HiddenSize), float64(m.VocabSize)
	layers := float64(m.Layers)
	// The GPU's own kernels reach a share of the efficiencies (GPU.KernelEfficiency).
	k := gpu.kernelEfficiency()
	// blk is the block-scaled FP8 share of the linear layers' rate.
	blk := 1.0
	if m.WeightBlockSize > 0 && isFP8(m.WeightPrecision) {
		blk = share(p.BlockFP8Efficiency)
	}
	c := costModel{
		t0NS:      float64(p.StepOverheadNS),
		perSeqNS:  float64(p.StepPerSeqNS),
		nsPerByte: 1e9 / (gpu.BandwidthGBps * 1e9 * p.MemEfficiency * k),
		nsPerFLOP: 1e9 / (gpu.AchievableBF16TFLOPS() * 1e12 * p.ComputeEfficiency * k),
		// Every dense linear weight and the LM head are read once per
		// step; of the embedding table only the looked-up rows are read
		// (negligible). The LM head is read at embeddingPrecisionBytes
		// (16 bits in a quantized checkpoint); db is the dense layers' own
		// precision (gpt-oss: BF16 beside MXFP4 experts).
		weightBytes:      layers*m.denseLayerParamsPerGPU(tp)/blk*db + h*v/fTP*m.embeddingPrecisionBytes(),
		lmHeadFLOPs:      2 * h * v / fTP,
		kvBytesTok:       m.FullKVBytesPerToken(tp),
		attnFLOPsPair:    4 * float64((m.Layers-m.SlidingLayers)*m.Heads*m.HeadDim) / fTP,
		winKVBytesTok:    m.WindowKVBytesPerToken(tp),
		winAttnFLOPsPair: 4 * float64(m.SlidingLayers*m.Heads*m.HeadDim) / fTP,
		scale:            scale,
	}
	if p.Linear != nil {
		c.linear, c.useLinear = *p.Linear, true
	}
	nsPerLinear := c.nsPerFLOP
	c.nsPerKVByte = c.nsPerByte
	if p.KVMemEfficiency > 0 {
		c.nsPerKVByte = 1e9 / (gpu.BandwidthGBps * 1e9 * p.KVMemEfficiency * k)
	}
	if wb <= 1 && gpu.FP8TFLOPS > 0 && isFP8(m.WeightPrecision) {
		// FP8 weights with FP8 activations (W8A8, as vLLM's FP8
		// checkpoints run on Hopper and later) use the FP8 tensor cores.
		nsPerLinear = 1e9 / (gpu.AchievableFP8TFLOPS() * 1e12 * p.ComputeEfficiency * k)
	}
	nsPerLinear /= blk
	nsPerExpert := nsPerLinear / share(p.ExpertComputeEfficiency)
	denseFLOPs := 2 * layers * m.denseLayerParamsPerGPU(tp)
	expertFLOPs := 2 * layers * float64(m.ExpertsPerToken) * m.expertParams() / fTP // 0 for a dense model
	c.linearNSPerToken = denseFLOPs*nsPerLinear + expertFLOPs*nsPerExpert
	if m.Experts > 0 {
		c.experts, c.topK = float64(m.Experts), float64(m.ExpertsPerToken)
		// Padded MXFP4 experts are streamed whole, padding included
		// (CostParams.MXFP4ExpertPadding).
		c.expertBytesAll = layers * m.expertParams() * wb / fTP / blk * p.expertStorage(gpu, m, tp)
		c.expertSmallEff = share(p.ExpertSmallBatchEfficiency)
	}
	if tp > 1 {
		c.arCount = 2 * layers
		c.arLatencyNS = float64(p.AllReduceLatencyNS) + float64(p.AllReducePerPeerNS)*(fTP-1)
		if gpu.Interconnect == InterconnectPCIe && p.PCIeAllReduceLatencyScale > 0 {
			c.arLatencyNS *= p.PCIeAllReduceLatencyScale
		}
		c.arNSPerToken = 2 * (fTP - 1) / fTP * h * 2 * 1e9 / (gpu.InterconnectGBps * 1e9 * share(p.AllReduceBWEfficiency))
	}
	return c
}

// share is an efficiency with 0 (unset) and anything outside (0, 1] read
// as 1.
func share(e float64) float64 {
	if e <= 0 || e > 1 {
		return 1
	}
	return e
}

// stepLoad is what one step computes, summed over its scheduled requests.
type stepLoad struct {
	newTokens     int64 // tokens run through the model this step
	sampled       int64 // sequences that produce a token (LM head rows)
	ctxTokens     int64 // tokens of KV read by attention (context + new)
	attnPairs     int64 // (query, key) pairs attention computes
	prefillTokens int64 // of newTokens, those of prompts (or recomputation)
	seqs          int64 // requests the step runs (decodes and prompt chunks)
	// Sliding-window layers (window > 0): the keys they read and the
	// pairs they compute, each query seeing at most window keys.
	window                     int64
	winCtxTokens, winAttnPairs int64
}

// StepTerms are the times of one step's parts, in ns. A step runs its
// linear layers (the GEMMs, LM head included) and its attention as
// separate kernels, one after the other, and each is bound by its own
// memory traffic or its own arithmetic: a large decode batch can be
// compute-bound in its GEMMs and memory-bound in attention (every
// sequence's KV is read once) in the same step, and then takes the sum of
// the two, not the larger.
type StepTerms struct {
	Seqs        float64 // sequences the step runs (not a time: CostParams.StepPerSeqNS prices them)
	WeightNS    float64 // reading the linear layers' and LM head's weights
	LinearNS    float64 // their arithmetic
	KVNS        float64 // attention reading the KV cache
	AttnNS      float64 // attention's arithmetic (QKᵀ and AV)
	AllReduceNS float64 // tensor-parallel all-reduces
}

// NS is the step's time with fixed overhead t0, perSeq per sequence, the
// memory terms at efficiency em and the arithmetic at ec (1, 1 for terms
// already priced at their efficiencies). The one formula the engine, knee
// calibrate's fit and the diagnosis's reference all price steps by.
func (s StepTerms) NS(t0, perSeq, em, ec float64) float64 {
	return t0 + perSeq*s.Seqs + math.Max(s.WeightNS/em, s.LinearNS/ec) + math.Max(s.KVNS/em, s.AttnNS/ec) + s.AllReduceNS
}

// MemNS is the step's memory traffic (weights and KV), CmpNS its
// arithmetic: the two sides of the roofline, for reports.
func (s StepTerms) MemNS() float64 { return s.WeightNS + s.KVNS }

// CmpNS: see MemNS.
func (s StepTerms) CmpNS() float64 { return s.LinearNS + s.AttnNS }

// Bound is, at efficiencies em and ec, the time of the step's kernels
// that are compute-bound and of those that are memory-bound: a point
// informs a fit of ec only where cmpNS > 0, of em where memNS > 0.
func (s StepTerms) Bound(em, ec float64) (cmpNS, memNS float64) {
	for _, k := range [2][2]float64{{s.WeightNS / em, s.LinearNS / ec}, {s.KVNS / em, s.AttnNS / ec}} {
		if k[1] > k[0] {
			cmpNS += k[1]
		} else {
			memNS += k[0]
		}
	}
	return cmpNS, memNS
}

// terms prices a step's parts in ns at the model's efficiencies.
func (c *costModel) terms(l *stepLoad) StepTerms {
	weights := c.weightBytes
	if c.experts > 0 && l.newTokens > 0 {
		touched := c.experts * (1 - math.Pow(1-c.topK/c.experts, float64(l.newTokens)))
		// Tokens per touched expert: the expert GEMMs' M dimension.
		perExpert := float64(l.newTokens) * c.topK / touched
		m := max(perExpert, 1)
		eff := 1 - (1-c.expertSmallEff)/(m*m)
		weights += touched * c.expertBytesAll / eff
	}
	t := StepTerms{
		Seqs:     float64(l.seqs),
		WeightNS: weights * c.nsPerByte,
		LinearNS: float64(l.newTokens)*c.linearNSPerToken + float64(l.sampled)*c.lmHeadFLOPs*c.nsPerFLOP,
		KVNS:     (float64(l.ctxTokens)*c.kvBytesTok + float64(l.winCtxTokens)*c.winKVBytesTok) * c.nsPerKVByte,
		AttnNS:   (float64(l.attnPairs)*c.attnFLOPsPair + float64(l.winAttnPairs)*c.winAttnFLOPsPair) * c.nsPerFLOP,
	}
	if c.arCount > 0 {
		t.AllReduceNS = c.arCount * (c.arLatencyNS + float64(l.newTokens)*c.arNSPerToken)
	}
	return t
}

// stepNS prices one step: T0 + the linear layers' time + attention's time
// + all-reduce, scaled (or the linear model, when the cost has one).
func (c *costModel) stepNS(l *stepLoad) int64 {
	var t float64
	if c.useLinear {
		decode := l.newTokens - l.prefillTokens
		t = c.linear.LinearStepNS(StepShape{NewTokens: l.newTokens, CtxTokens: l.ctxTokens}, decode) * c.scale
	} else {
		return c.termsNS(c.terms(l))
	}
	if t < 1 {
		t = 1
	}
	return int64(t)
}

// termsNS prices a step of the roofline cost from its terms (stepNS, for
// a caller that needs the terms too).
func (c *costModel) termsNS(terms StepTerms) int64 {
	return int64(max(terms.NS(c.t0NS, c.perSeqNS, 1, 1)*c.scale, 1))
}

// KVToWeightEfficiency is DefaultCost's KV-read efficiency relative to its
// weight-read efficiency (1 when KV reads have no efficiency of their own).
func KVToWeightEfficiency() float64 {
	if DefaultCost.KVMemEfficiency <= 0 {
		return 1
	}
	return DefaultCost.KVMemEfficiency / DefaultCost.MemEfficiency
}

// expertStorage is Model.expertStorageScale when the padding is charged,
// else 1.
func (p CostParams) expertStorage(gpu GPU, m Model, tp int) float64 {
	if !p.MXFP4ExpertPadding {
		return 1
	}
	return m.expertStorageScale(gpu, tp)
}

// VLLMSamplerWarmupBytesPerLogit is what one logit holds at the peak of
// vLLM V1's start-up sampler run (vllm/v1/worker/gpu_model_runner.py,
// profile_run → _dummy_sampler_run: one row per request, min(max_num_seqs,
// max_num_batched_tokens) rows over the whole vocabulary, temperature 0.5,
// top-p 0.9 and top-k vocab−1, so the sort path runs). Live at once in
// vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p: the model's
// 16-bit logits (2 bytes, still held by the caller), the sampler's fp32
// copy (4, Sampler.forward), the sorted values (4) and their int64 indices
// (8), the sorted softmax (4), its cumsum (4), the top-p mask (1) and the
// scatter's fp32 output (4): 31 bytes. gpt-oss-120b on one H100 (vocabulary
// 201,088, 1,024 sequences) then holds 5.9 GiB, which with the 1.5 GiB
// reserve is the 7.4–7.6 GiB vLLM's own start-up logs leave beside the
// weights (vllm-project/vllm issues 23278 and 27508; samplerwarmup_test.go).
const VLLMSamplerWarmupBytesPerLogit = 31

// memoryPlan is how GPU memory is split, per GPU of tp.
type memoryPlan struct {
	usableBytes, weightBytes, activationBytes, reserveBytes, kvBytes float64
	// samplerBytes is the start-up sampler run's peak (0: none); it
	// and the forward pass's activations peak at different times, so the
	// KV cache loses the larger of the two.
	samplerBytes float64
	kvBlocks     int
}

// planMemory follows vLLM's accounting: gpu_memory_utilization × total,
// minus weights, minus the peak of the start-up profile run (the larger
// of a max_num_batched_tokens forward pass's activations and, unless
// noSampler, the sampler run over min(maxSeqs, maxBatched) requests), minus
// fixed non-torch memory; the rest is KV cache.
func planMemory(gpu GPU, m Model, tp int, util float64, maxBatched, maxSeqs int, noSampler bool, p CostParams) memoryPlan {
	// Every GPU holds the replicated weights whole.
	pb, _ := precision(m.WeightPrecision, "bf16")
	wb := m.WeightBytes()/float64(tp) + float64(m.Layers)*m.replicatedLayerParams()*(1-1/float64(tp))*pb
	// An MXFP4 mixture of experts holds its routed experts padded to the
	// kernel's tiles (CostParams.MXFP4ExpertPadding).
	eb, _ := m.weightPrecisionBytes()
	wb += float64(m.Layers) * float64(m.Experts) * m.expertParams() * eb / float64(tp) * (p.expertStorage(gpu, m, tp) - 1)
	h, f := float64(m.HiddenSize), float64(m.FFNSize)/float64(tp)
	// Peak activations of one layer: the residual stream, QKV and the gated
	// MLP's gate+up output, in 16-bit, kept twice (input and output buffers).
	act := float64(maxBatched) * 2 * (2*h + 2*f) * 2
	plan := memoryPlan{
		usableBytes:     gpu.MemoryGiB * (1 << 30) * util,
		weightBytes:     wb,
		activationBytes: act,
		reserveBytes:    p.ReserveFixedBytes,
	}
	if !noSampler {
		// Every GPU of tp samples the whole vocabulary (V1 runs the
		// sampler on each rank).
		plan.samplerBytes = float64(min(maxSeqs, maxBatched)) * float64(m.VocabSize) * p.SamplerWarmupBytesPerLogit
	}
	plan.kvBytes = plan.usableBytes - wb - max(act, plan.samplerBytes) - p.ReserveFixedBytes
	if plan.kvBytes > 0 {
		plan.kvBlocks = int(plan.kvBytes / (m.poolKVBytesPerToken(tp) * BlockTokens))
	}
	return plan
}

func (p memoryPlan) String() string {
	return fmt.Sprintf("%.1f GiB usable = %.1f GiB weights + %.1f GiB activations + %.1f GiB reserved + %.1f GiB KV cache",
		p.usableBytes/(1<<30), p.weightBytes/(1<<30), p.profilePeak()/(1<<30), p.reserveBytes/(1<<30), p.kvBytes/(1<<30))
}

// profilePeak is what the start-up profile run takes from the KV cache.
func (p memoryPlan) profilePeak() float64 {
	return max(p.activationBytes, p.samplerBytes)
}

// StepShape is what one engine step computes, summed over its requests.
// CtxTokens and AttnPairs are the full-attention layers'; a model with
// sliding-window layers reads WinCtxTokens and computes WinAttnPairs in
// those (both 0: taken as CtxTokens and AttnPairs, an upper bound).
type StepShape struct {
	Seqs         int64 // requests the step runs
	NewTokens    int64 // tokens run through the model
	Sampled      int64 // sequences that produce a token
	CtxTokens    int64 // tokens of KV read by attention (context + new)
	AttnPairs    int64 // (query, key) pairs attention computes
	WinCtxTokens int64
	WinAttnPairs int64
}

// PrefillShape is one prompt of n tokens prefilled in a single step.
func PrefillShape(n int64) StepShape {
	return StepShape{Seqs: 1, NewTokens: n, Sampled: 1, CtxTokens: n, AttnPairs: n * (n + 1) / 2}
}

// DecodeShape is b sequences decoding one token each over ctx tokens of
// context apiece.
func DecodeShape(b, ctx int64) StepShape {
	return StepShape{Seqs: b, NewTokens: b, Sampled: b, CtxTokens: b * (ctx + 1), AttnPairs: b * (ctx + 1)}
}

// StepCostTerms prices the parts of one step at full efficiency: the time
// its memory traffic and its arithmetic would take at the GPU's peak
// bandwidth and achievable matmul rate (GPU.AchievableBF16TFLOPS), and its
// tensor-parallel all-reduce time. Under CostParams p the step takes
//
//	terms.NS(p.StepOverheadNS, p.StepPerSeqNS, p.MemEfficiency, p.ComputeEfficiency)
//
// which is what fitting p to measurements (knee calibrate) needs. KV reads
// are priced at KVToWeightEfficiency of the weights' rate, so one memory
// efficiency fits both: a fitted η_mem implies η_kv = η_mem ×
// KVToWeightEfficiency.
func StepCostTerms(gpu GPU, m Model, tp int, s StepShape) StepTerms {
	if tp < 1 {
		tp = 1
	}
	p := DefaultCost
	p.MemEfficiency, p.ComputeEfficiency, p.KVMemEfficiency = 1, 1, KVToWeightEfficiency()
	c := newCostModel(gpu, m, tp, p, 1)
	if s.WinCtxTokens == 0 && s.WinAttnPairs == 0 {
		s.WinCtxTokens, s.WinAttnPairs = s.CtxTokens, s.AttnPairs
	}
	return c.terms(&stepLoad{seqs: s.Seqs, newTokens: s.NewTokens, sampled: s.Sampled, ctxTokens: s.CtxTokens, attnPairs: s.AttnPairs,
		winCtxTokens: s.WinCtxTokens, winAttnPairs: s.WinAttnPairs})
}
