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
	// MemEfficiency is the fraction of peak memory bandwidth that weight and
	// KV reads achieve. Fitted.
	MemEfficiency float64
	// ComputeEfficiency is the fraction of peak dense BF16 FLOP/s that the
	// GEMMs and attention achieve. Fitted.
	ComputeEfficiency float64
	// AllReduceLatencyNS is the fixed cost of one tensor-parallel all-reduce
	// (two per layer per step). Assumed, from NCCL/custom all-reduce latencies.
	AllReduceLatencyNS int64
	// ReserveFixedBytes is memory held outside weights and KV cache: CUDA
	// context, CUDA graphs, NCCL and allocator slack. Assumed.
	ReserveFixedBytes float64
}

// DefaultCost is the calibrated cost model.
var DefaultCost = CostParams{
	StepOverheadNS:     600_000, // 0.6 ms
	MemEfficiency:      0.76,
	ComputeEfficiency:  0.47,
	AllReduceLatencyNS: 8_000, // 8 µs
	ReserveFixedBytes:  1.5 * (1 << 30),
}

// costModel holds per-GPU (one of TP) derived quantities so that pricing a
// step is a few multiplications.
type costModel struct {
	t0NS          float64
	nsPerByte     float64 // 1 / (bandwidth × efficiency), ns
	nsPerFLOP     float64 // 1 / (peak × efficiency), ns
	weightBytes   float64 // weights read once per step, per GPU
	linearFLOPs   float64 // 2 × linear params per new token, per GPU
	lmHeadFLOPs   float64 // 2 × hidden × vocab per sampled token, per GPU
	kvBytesTok    float64 // KV bytes read per token of context, per GPU
	attnFLOPsPair float64 // FLOPs per (query, key) pair: QKᵀ and AV, per GPU
	// All-reduce (tp > 1): 2 per layer; each moves 2(tp−1)/tp × tokens ×
	// hidden × 2 bytes over the link.
	arCount      float64
	arLatencyNS  float64
	arNSPerToken float64
	scale        float64
}

func newCostModel(gpu GPU, m Model, tp int, p CostParams, scale float64) costModel {
	wb, _ := precision(m.WeightPrecision, "bf16")
	fTP := float64(tp)
	h, v := float64(m.HiddenSize), float64(m.VocabSize)
	linear := float64(m.Layers) * m.LayerParams()
	c := costModel{
		t0NS:      float64(p.StepOverheadNS),
		nsPerByte: 1e9 / (gpu.BandwidthGBps * 1e9 * p.MemEfficiency),
		nsPerFLOP: 1e9 / (gpu.BF16TFLOPS * 1e12 * p.ComputeEfficiency),
		// Every linear weight and the LM head are read once per step; of
		// the embedding table only the looked-up rows are read (negligible).
		weightBytes:   (linear + h*v) * wb / fTP,
		linearFLOPs:   2 * linear / fTP,
		lmHeadFLOPs:   2 * h * v / fTP,
		kvBytesTok:    m.KVBytesPerToken(tp),
		attnFLOPsPair: 4 * float64(m.Layers*m.Heads*m.HeadDim) / fTP,
		scale:         scale,
	}
	if tp > 1 {
		c.arCount = 2 * float64(m.Layers)
		c.arLatencyNS = float64(p.AllReduceLatencyNS)
		c.arNSPerToken = 2 * (fTP - 1) / fTP * h * 2 * 1e9 / (gpu.InterconnectGBps * 1e9)
	}
	return c
}

// stepLoad is what one step computes, summed over its scheduled requests.
type stepLoad struct {
	newTokens     int64 // tokens run through the model this step
	sampled       int64 // sequences that produce a token (LM head rows)
	ctxTokens     int64 // tokens of KV read by attention (context + new)
	attnPairs     int64 // (query, key) pairs attention computes
	prefillTokens int64 // of newTokens, those of prompts (or recomputation)
}

// stepNS prices one step: T0 + max(T_mem, T_cmp) + all-reduce, scaled.
func (c *costModel) stepNS(l *stepLoad) int64 {
	mem := (c.weightBytes + float64(l.ctxTokens)*c.kvBytesTok) * c.nsPerByte
	cmp := (float64(l.newTokens)*c.linearFLOPs + float64(l.sampled)*c.lmHeadFLOPs + float64(l.attnPairs)*c.attnFLOPsPair) * c.nsPerFLOP
	t := c.t0NS + math.Max(mem, cmp)
	if c.arCount > 0 {
		t += c.arCount * (c.arLatencyNS + float64(l.newTokens)*c.arNSPerToken)
	}
	t *= c.scale
	if t < 1 {
		t = 1
	}
	return int64(t)
}

// memoryPlan is how GPU memory is split, per GPU of tp.
type memoryPlan struct {
	usableBytes, weightBytes, activationBytes, reserveBytes, kvBytes float64
	kvBlocks                                                         int
}

// planMemory follows vLLM's accounting: gpu_memory_utilization × total,
// minus weights, minus the peak activation memory of a max_num_batched_tokens
// forward pass, minus fixed non-torch memory; the rest is KV cache.
func planMemory(gpu GPU, m Model, tp int, util float64, maxBatched int, p CostParams) memoryPlan {
	wb := m.WeightBytes() / float64(tp)
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
	plan.kvBytes = plan.usableBytes - wb - act - p.ReserveFixedBytes
	if plan.kvBytes > 0 {
		plan.kvBlocks = int(plan.kvBytes / (m.KVBytesPerToken(tp) * BlockTokens))
	}
	return plan
}

func (p memoryPlan) String() string {
	return fmt.Sprintf("%.1f GiB usable = %.1f GiB weights + %.1f GiB activations + %.1f GiB reserved + %.1f GiB KV cache",
		p.usableBytes/(1<<30), p.weightBytes/(1<<30), p.activationBytes/(1<<30), p.reserveBytes/(1<<30), p.kvBytes/(1<<30))
}

// StepShape is what one engine step computes, summed over its requests.
type StepShape struct {
	NewTokens int64 // tokens run through the model
	Sampled   int64 // sequences that produce a token
	CtxTokens int64 // tokens of KV read by attention (context + new)
	AttnPairs int64 // (query, key) pairs attention computes
}

// PrefillShape is one prompt of n tokens prefilled in a single step.
func PrefillShape(n int64) StepShape {
	return StepShape{NewTokens: n, Sampled: 1, CtxTokens: n, AttnPairs: n * (n + 1) / 2}
}

// DecodeShape is b sequences decoding one token each over ctx tokens of
// context apiece.
func DecodeShape(b, ctx int64) StepShape {
	return StepShape{NewTokens: b, Sampled: b, CtxTokens: b * (ctx + 1), AttnPairs: b * (ctx + 1)}
}

// StepCostTerms prices the terms of one step's cost at full efficiency:
// the time its memory traffic (weights and KV) and its arithmetic would
// take at the GPU's peak, and its tensor-parallel all-reduce time. Under
// CostParams p the step takes
//
//	p.StepOverheadNS + max(memNS/p.MemEfficiency, cmpNS/p.ComputeEfficiency) + arNS
//
// which is what fitting p to measurements (knee calibrate) needs.
func StepCostTerms(gpu GPU, m Model, tp int, s StepShape) (memNS, cmpNS, arNS float64) {
	if tp < 1 {
		tp = 1
	}
	c := newCostModel(gpu, m, tp, CostParams{MemEfficiency: 1, ComputeEfficiency: 1, AllReduceLatencyNS: DefaultCost.AllReduceLatencyNS}, 1)
	memNS = (c.weightBytes + float64(s.CtxTokens)*c.kvBytesTok) * c.nsPerByte
	cmpNS = (float64(s.NewTokens)*c.linearFLOPs + float64(s.Sampled)*c.lmHeadFLOPs + float64(s.AttnPairs)*c.attnFLOPsPair) * c.nsPerFLOP
	if c.arCount > 0 {
		arNS = c.arCount * (c.arLatencyNS + float64(s.NewTokens)*c.arNSPerToken)
	}
	return memNS, cmpNS, arNS
}
