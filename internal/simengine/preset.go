package simengine

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// GPU is one accelerator: the physical numbers the cost model needs.
// The yaml tags are the file format of presets (presets/gpus/*.yaml) and of
// user-supplied GPU files.
type GPU struct {
	Name             string   `yaml:"name"`
	Aliases          []string `yaml:"aliases,omitempty"`
	MemoryGiB        float64  `yaml:"memory_gib"`        // device memory as the driver reports it
	BandwidthGBps    float64  `yaml:"bandwidth_gbps"`    // peak memory bandwidth, 1e9 bytes/s
	BF16TFLOPS       float64  `yaml:"bf16_tflops"`       // peak dense BF16 tensor FLOP/s, 1e12
	InterconnectGBps float64  `yaml:"interconnect_gbps"` // GPU-to-GPU bandwidth per direction (NVLink or PCIe), 1e9 bytes/s
	// Interconnect is the kind of GPU-to-GPU link InterconnectGBps
	// measures: nvlink (NVLink/NVSwitch), pcie, or infinity-fabric
	// (AMD's xGMI); "" when unstated.
	Interconnect string `yaml:"interconnect,omitempty"`
	// FP8TFLOPS is peak dense FP8 tensor FLOP/s, 1e12; 0 = no FP8 tensor
	// cores (FP8 weights then compute at the BF16 rate, as on Ampere).
	FP8TFLOPS float64 `yaml:"fp8_tflops,omitempty"`
	// BF16MatmulTFLOPS and FP8MatmulTFLOPS are the measured maximum
	// achievable matmul rates (MAMF: the best large GEMM the vendor's BLAS
	// reaches, 1e12 FLOP/s), which is what prefill GEMMs can approach; the
	// datasheet peak is not reachable, and by how much differs per GPU
	// (A100 87%, H100 80%, MI300X 51%). 0 = unmeasured: the datasheet peak
	// times DefaultMatmulFraction.
	BF16MatmulTFLOPS float64 `yaml:"bf16_matmul_tflops,omitempty"`
	FP8MatmulTFLOPS  float64 `yaml:"fp8_matmul_tflops,omitempty"`
	// KernelEfficiency is the share of the cost model's memory and compute
	// efficiencies (CostParams, fitted on NVIDIA GPUs under CUDA) that the
	// serving engine's kernels reach on this GPU: its attention, GEMV and
	// fused kernels are another vendor's code, which a matmul benchmark
	// does not measure. 0 = 1. Set for AMD Instinct presets, fitted across
	// the MI300X sources of the validation table (docs/validation.md).
	KernelEfficiency float64 `yaml:"kernel_efficiency,omitempty"`
	// TDPWatts and IdleWatts bound the power model (power.go): a GPU's
	// draw at full load (the datasheet's maximum board power) and with a
	// model loaded and nothing to do. 0 TDP: no power model (energy is
	// left out); 0 idle: a tenth of the TDP.
	TDPWatts  float64 `yaml:"tdp_watts,omitempty"`
	IdleWatts float64 `yaml:"idle_watts,omitempty"`
	// BoostClockMHz is the SM clock under load (0: not stated); knee
	// serve's simulated dcgm-exporter reports it while steps run.
	BoostClockMHz float64 `yaml:"boost_clock_mhz,omitempty"`
}

// kernelEfficiency is KernelEfficiency with its default.
func (g GPU) kernelEfficiency() float64 {
	if g.KernelEfficiency <= 0 {
		return 1
	}
	return g.KernelEfficiency
}

// The kinds of GPU-to-GPU link (GPU.Interconnect).
const (
	InterconnectNVLink         = "nvlink"
	InterconnectPCIe           = "pcie"
	InterconnectInfinityFabric = "infinity-fabric"
)

// DefaultMatmulFraction is the share of the datasheet peak a GPU without a
// measured achievable matmul rate is taken to reach: the H100's measured
// share (794.5 of 989 TFLOP/s, Bekman's MAMF table). Assumed.
const DefaultMatmulFraction = 0.80

// AchievableBF16TFLOPS is the achievable dense BF16 matmul rate, 1e12 FLOP/s.
func (g GPU) AchievableBF16TFLOPS() float64 {
	if g.BF16MatmulTFLOPS > 0 {
		return g.BF16MatmulTFLOPS
	}
	return g.BF16TFLOPS * DefaultMatmulFraction
}

// AchievableFP8TFLOPS is the achievable dense FP8 matmul rate, 1e12 FLOP/s (0
// without FP8 tensor cores). A GPU whose FP8 rate was never measured but
// whose BF16 rate was takes the BF16 share of its peak: the same matrix
// units, clocks and software stack set both (the MI300X reaches 51% of its
// BF16 peak in Bekman's MAMF table, so 1,337 TFLOP/s of FP8, not the 2,092
// the H100's 80% would give).
func (g GPU) AchievableFP8TFLOPS() float64 {
	if g.FP8MatmulTFLOPS > 0 {
		return g.FP8MatmulTFLOPS
	}
	if g.BF16MatmulTFLOPS > 0 && g.BF16TFLOPS > 0 {
		return g.FP8TFLOPS * g.BF16MatmulTFLOPS / g.BF16TFLOPS
	}
	return g.FP8TFLOPS * DefaultMatmulFraction
}

// Model is a decoder-only transformer (Llama-style: grouped-query attention,
// gated SwiGLU MLP), dense or a mixture of experts (Experts > 0: every
// layer's MLP is Experts gated MLPs of ExpertFFNSize, of which each token
// uses ExpertsPerToken).
//
// Mixtures of experts may also have an always-active shared expert
// (SharedExpertFFNSize: DeepSeek, Llama 4, Qwen2-MoE) and leading dense
// layers (DenseLayers of the Layers have a dense MLP of FFNSize instead
// of experts: DeepSeek-V3's first three, Llama 4 Maverick's every other).
// Attention is grouped-query unless KVLoRARank > 0: multi-head latent
// attention (DeepSeek-V2/V3), whose cache holds one compressed latent of
// KVLoRARank + QKRopeHeadDim per token and layer, shared by all heads.
type Model struct {
	Name            string   `yaml:"name"`
	Aliases         []string `yaml:"aliases,omitempty"`
	Layers          int      `yaml:"layers"`
	HiddenSize      int      `yaml:"hidden_size"`
	Heads           int      `yaml:"heads"`
	KVHeads         int      `yaml:"kv_heads"`
	HeadDim         int      `yaml:"head_dim"`
	FFNSize         int      `yaml:"ffn_size"`
	VocabSize       int      `yaml:"vocab_size"`
	MaxContext      int      `yaml:"max_context"`
	WeightPrecision string   `yaml:"weight_precision"` // bf16, fp16, fp8, int8, int4, fp4, mxfp4
	// DenseWeightPrecision is the precision of a mixture of experts'
	// weights outside its routed experts (attention, router, shared
	// experts, dense layers, embeddings, LM head) where it differs from
	// WeightPrecision: gpt-oss ships MXFP4 experts and BF16 everything
	// else, and vLLM's MXFP4 method quantizes only the fused-MoE layers
	// (mxfp4.py, Mxfp4Config.get_quant_method: linear layers fall back to
	// UnquantizedLinearMethod). "" = WeightPrecision.
	DenseWeightPrecision string `yaml:"dense_weight_precision,omitempty"`
	KVPrecision          string `yaml:"kv_precision,omitempty"` // KV cache dtype; default bf16
	TiedEmbeddings       bool   `yaml:"tied_embeddings,omitempty"`
	Experts              int    `yaml:"experts,omitempty"`
	ExpertsPerToken      int    `yaml:"experts_per_token,omitempty"`
	ExpertFFNSize        int    `yaml:"expert_ffn_size,omitempty"`
	// SharedExpertFFNSize is the width of the gated MLP every token runs
	// in each MoE layer beside its routed experts (0: none).
	SharedExpertFFNSize int `yaml:"shared_expert_ffn_size,omitempty"`
	// DenseLayers is how many of Layers have a dense MLP of FFNSize in a
	// mixture of experts (0: every layer has experts).
	DenseLayers int `yaml:"dense_layers,omitempty"`
	// Multi-head latent attention (KVLoRARank > 0). HeadDim is then the
	// query/key head size (the no-RoPE part plus QKRopeHeadDim), VHeadDim
	// the value head size, QLoRARank the query compression (0: none).
	KVLoRARank    int `yaml:"kv_lora_rank,omitempty"`
	QLoRARank     int `yaml:"q_lora_rank,omitempty"`
	QKRopeHeadDim int `yaml:"qk_rope_head_dim,omitempty"`
	VHeadDim      int `yaml:"v_head_dim,omitempty"`
	// WeightBlockSize is the side of the square blocks of weights that
	// share one scale in a block-scaled FP8 checkpoint (quantization_config
	// weight_block_size [128, 128] of DeepSeek-V3/R1 and Qwen3's FP8
	// checkpoints); 0: one scale per tensor or channel. vLLM runs such
	// weights with kernels of their own (CostParams.BlockFP8Efficiency).
	WeightBlockSize int `yaml:"weight_block_size,omitempty"`
	// Sliding-window attention: SlidingLayers of the Layers attend only
	// to the last SlidingWindow tokens (gpt-oss: every other layer, 128;
	// Gemma 2: every other, 4,096; Gemma 3: five of six, 1,024), the rest
	// to the whole context. A windowed layer's attention reads at most its
	// window, and vLLM's hybrid KV cache manager (vllm/v1/core/
	// single_type_kv_cache_manager.py, SlidingWindowManager) frees its
	// blocks once they leave the window, so it caches a bounded number of
	// tokens a request. Both 0: every layer attends fully.
	SlidingWindow int `yaml:"sliding_window,omitempty"`
	SlidingLayers int `yaml:"sliding_layers,omitempty"`
}

// IsMLA reports whether the model uses multi-head latent attention.
func (m Model) IsMLA() bool { return m.KVLoRARank > 0 }

// precisionBytes maps a precision name to bytes per element.
var precisionBytes = map[string]float64{
	"bf16": 2, "fp16": 2, "float16": 2, "bfloat16": 2, "half": 2,
	"fp32": 4, "float32": 4,
	"fp8": 1, "int8": 1,
	"int4": 0.5, "fp4": 0.5,
	// OCP microscaling FP4: 32 4-bit values share one 8-bit (E8M0)
	// scale, 4.25 bits a weight.
	"mxfp4": 0.53125,
}

func precision(name, dflt string) (float64, error) {
	if name == "" {
		name = dflt
	}
	b, ok := precisionBytes[strings.ToLower(name)]
	if !ok {
		return 0, fmt.Errorf("unknown precision %q (want bf16, fp16, fp32, fp8, int8, int4, fp4 or mxfp4)", name)
	}
	return b, nil
}

// Validate reports the first field that is missing or out of range.
func (g GPU) Validate() error {
	if g.Name == "" {
		return errors.New("gpu: name is missing")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"memory_gib", g.MemoryGiB}, {"bandwidth_gbps", g.BandwidthGBps}, {"bf16_tflops", g.BF16TFLOPS}, {"interconnect_gbps", g.InterconnectGBps}} {
		if !(f.v > 0) {
			return fmt.Errorf("gpu %s: %s must be > 0, got %v", g.Name, f.name, f.v)
		}
	}
	switch g.Interconnect {
	case "", InterconnectNVLink, InterconnectPCIe, InterconnectInfinityFabric:
	default:
		return fmt.Errorf("gpu %s: interconnect %q: want %s, %s or %s", g.Name, g.Interconnect, InterconnectNVLink, InterconnectPCIe, InterconnectInfinityFabric)
	}
	for _, f := range []struct {
		name, peakName string
		v, peak        float64
	}{{"bf16_matmul_tflops", "bf16_tflops", g.BF16MatmulTFLOPS, g.BF16TFLOPS}, {"fp8_matmul_tflops", "fp8_tflops", g.FP8MatmulTFLOPS, g.FP8TFLOPS}} {
		if f.v < 0 || f.v > f.peak {
			return fmt.Errorf("gpu %s: %s (a measured matmul rate) must be between 0 and %s (%v), got %v", g.Name, f.name, f.peakName, f.peak, f.v)
		}
	}
	if g.TDPWatts < 0 || g.IdleWatts < 0 || (g.TDPWatts > 0 && g.IdleWatts >= g.TDPWatts) {
		return fmt.Errorf("gpu %s: tdp_watts (%v) and idle_watts (%v) must be ≥ 0, idle below the TDP", g.Name, g.TDPWatts, g.IdleWatts)
	}
	if !(g.KernelEfficiency >= 0 && g.KernelEfficiency <= 1) {
		return fmt.Errorf("gpu %s: kernel_efficiency must be a share from 0 (unset) to 1, got %v", g.Name, g.KernelEfficiency)
	}
	return nil
}

// Validate reports the first field that is missing or out of range.
func (m Model) Validate() error {
	if m.Name == "" {
		return errors.New("model: name is missing")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", m.Layers}, {"hidden_size", m.HiddenSize}, {"heads", m.Heads}, {"kv_heads", m.KVHeads},
		{"head_dim", m.HeadDim}, {"ffn_size", m.FFNSize}, {"vocab_size", m.VocabSize}, {"max_context", m.MaxContext}} {
		if f.v <= 0 {
			return fmt.Errorf("model %s: %s must be > 0, got %d", m.Name, f.name, f.v)
		}
	}
	if m.Experts < 0 || m.ExpertsPerToken < 0 || m.ExpertFFNSize < 0 {
		return fmt.Errorf("model %s: experts, experts_per_token and expert_ffn_size must not be negative", m.Name)
	}
	if m.Experts > 0 && (m.ExpertsPerToken < 1 || m.ExpertsPerToken > m.Experts || m.ExpertFFNSize < 1) {
		return fmt.Errorf("model %s: a mixture of experts needs 1 <= experts_per_token (%d) <= experts (%d) and expert_ffn_size > 0 (got %d)",
			m.Name, m.ExpertsPerToken, m.Experts, m.ExpertFFNSize)
	}
	if m.Experts == 0 && (m.ExpertsPerToken > 0 || m.ExpertFFNSize > 0) {
		return fmt.Errorf("model %s: experts_per_token and expert_ffn_size need experts > 0", m.Name)
	}
	if m.SharedExpertFFNSize < 0 || m.DenseLayers < 0 || m.KVLoRARank < 0 || m.QLoRARank < 0 || m.QKRopeHeadDim < 0 || m.VHeadDim < 0 {
		return fmt.Errorf("model %s: shared_expert_ffn_size, dense_layers, kv_lora_rank, q_lora_rank, qk_rope_head_dim and v_head_dim must not be negative", m.Name)
	}
	if m.Experts == 0 && (m.SharedExpertFFNSize > 0 || m.DenseLayers > 0) {
		return fmt.Errorf("model %s: shared_expert_ffn_size and dense_layers describe a mixture of experts: they need experts > 0", m.Name)
	}
	if m.DenseLayers >= m.Layers {
		return fmt.Errorf("model %s: dense_layers (%d) must be fewer than layers (%d): a mixture of experts needs at least one layer with experts", m.Name, m.DenseLayers, m.Layers)
	}
	if m.IsMLA() && (m.QKRopeHeadDim < 1 || m.QKRopeHeadDim >= m.HeadDim || m.VHeadDim < 1) {
		return fmt.Errorf("model %s: latent attention (kv_lora_rank %d) needs 0 < qk_rope_head_dim (%d) < head_dim (%d) and v_head_dim > 0 (got %d)",
			m.Name, m.KVLoRARank, m.QKRopeHeadDim, m.HeadDim, m.VHeadDim)
	}
	if !m.IsMLA() && (m.QLoRARank > 0 || m.QKRopeHeadDim > 0 || m.VHeadDim > 0) {
		return fmt.Errorf("model %s: q_lora_rank, qk_rope_head_dim and v_head_dim describe latent attention: they need kv_lora_rank > 0", m.Name)
	}
	if m.WeightBlockSize < 0 || (m.WeightBlockSize > 0 && !isFP8(m.WeightPrecision)) {
		return fmt.Errorf("model %s: weight_block_size %d: want 0, or a block side for fp8 weights (weight_precision %q)", m.Name, m.WeightBlockSize, m.WeightPrecision)
	}
	if m.SlidingWindow < 0 || m.SlidingLayers < 0 || m.SlidingLayers > m.Layers || (m.SlidingWindow > 0) != (m.SlidingLayers > 0) {
		return fmt.Errorf("model %s: sliding_window (%d) and sliding_layers (%d) go together: a window > 0 and 1 to layers (%d) windowed layers, or neither",
			m.Name, m.SlidingWindow, m.SlidingLayers, m.Layers)
	}
	if m.IsMLA() && m.SlidingLayers > 0 {
		return fmt.Errorf("model %s: sliding-window layers with latent attention are not modelled", m.Name)
	}
	if m.Heads%m.KVHeads != 0 {
		return fmt.Errorf("model %s: heads (%d) must be a multiple of kv_heads (%d)", m.Name, m.Heads, m.KVHeads)
	}
	if _, err := precision(m.WeightPrecision, "bf16"); err != nil {
		return fmt.Errorf("model %s: weight_precision: %w", m.Name, err)
	}
	if _, err := precision(m.KVPrecision, "bf16"); err != nil {
		return fmt.Errorf("model %s: kv_precision: %w", m.Name, err)
	}
	if m.DenseWeightPrecision != "" {
		if m.Experts == 0 {
			return fmt.Errorf("model %s: dense_weight_precision is the precision outside a mixture's experts: it needs experts > 0", m.Name)
		}
		if _, err := precision(m.DenseWeightPrecision, "bf16"); err != nil {
			return fmt.Errorf("model %s: dense_weight_precision: %w", m.Name, err)
		}
	}
	return nil
}

// LayerParams is the number of linear-layer weights in one transformer layer:
// Q, K, V, O projections and the gated MLP (gate, up, down) — for a mixture
// of experts, every expert and the router.
func (m Model) LayerParams() float64 {
	return m.denseLayerParams() + float64(m.Experts)*m.expertParams()
}

// ActiveLayerParams is the number of linear weights one token runs through
// in a layer: all of a dense layer; attention, router and ExpertsPerToken
// experts of a mixture of experts.
func (m Model) ActiveLayerParams() float64 {
	return m.denseLayerParams() + float64(m.ExpertsPerToken)*m.expertParams()
}

// denseLayerParams is a layer's weights outside the routed experts:
// attention, and the MLP of a dense model or the router and shared expert
// of a mixture of experts. With dense layers among the MoE ones it is the
// mean over all layers, so that Layers times it is the model's total and
// every sum over layers stays exact.
func (m Model) denseLayerParams() float64 {
	h := float64(m.HiddenSize)
	attn := m.attentionParams()
	denseMLP := 3 * h * float64(m.FFNSize)
	if m.Experts == 0 {
		return attn + denseMLP
	}
	moe := m.moeLayerShare()
	return attn + moe*(h*float64(m.Experts)+3*h*float64(m.SharedExpertFFNSize)) + (1-moe)*denseMLP
}

// attentionParams is one layer's attention projections.
func (m Model) attentionParams() float64 {
	h, heads := float64(m.HiddenSize), float64(m.Heads)
	if !m.IsMLA() {
		q, kv := heads*float64(m.HeadDim), float64(m.KVHeads*m.HeadDim)
		return h*q + 2*h*kv + q*h
	}
	// Latent attention: the query, optionally through a low-rank
	// bottleneck; one joint down-projection of keys and values to the
	// latent plus the shared RoPE key; their up-projection to every head's
	// no-RoPE key and value; the output projection.
	qkHead, rope, vHead := float64(m.HeadDim), float64(m.QKRopeHeadDim), float64(m.VHeadDim)
	kvRank, qRank := float64(m.KVLoRARank), float64(m.QLoRARank)
	q := h * heads * qkHead
	if qRank > 0 {
		q = h*qRank + qRank*heads*qkHead
	}
	return q + h*(kvRank+rope) + kvRank*heads*(qkHead-rope+vHead) + heads*vHead*h
}

// replicatedLayerParams is the part of denseLayerParams that every GPU
// of a tensor-parallel group holds and runs whole: latent attention's
// down-projections of the query (to QLoRARank) and of the keys and values
// (to KVLoRARank + QKRopeHeadDim), which vLLM and SGLang replicate
// (ReplicatedLinear) rather than shard, as their outputs are small and
// every head needs all of them. 0 for grouped-query attention.
func (m Model) replicatedLayerParams() float64 {
	if !m.IsMLA() {
		return 0
	}
	return float64(m.HiddenSize) * float64(m.QLoRARank+m.KVLoRARank+m.QKRopeHeadDim)
}

// denseLayerParamsPerGPU is the share of denseLayerParams one GPU of tp
// holds and runs: the sharded weights over tp, the replicated ones whole.
func (m Model) denseLayerParamsPerGPU(tp int) float64 {
	r := m.replicatedLayerParams()
	return (m.denseLayerParams()-r)/float64(tp) + r
}

// moeLayerShare is the fraction of layers that have experts.
func (m Model) moeLayerShare() float64 {
	return float64(m.Layers-m.DenseLayers) / float64(m.Layers)
}

// expertParams is one routed expert's gated MLP, as a mean over all layers
// (layers without experts count 0); 0 for a dense model.
func (m Model) expertParams() float64 {
	if m.Experts == 0 {
		return 0
	}
	return 3 * float64(m.HiddenSize) * float64(m.ExpertFFNSize) * m.moeLayerShare()
}

// ActiveParams is the parameter count one token uses (Params for a dense
// model).
func (m Model) ActiveParams() float64 {
	return m.Params() - float64(m.Layers)*float64(m.Experts-m.ExpertsPerToken)*m.expertParams()
}

// isFP8 reports whether a weight precision is an 8-bit float format.
func isFP8(p string) bool { return strings.EqualFold(p, "fp8") }

// Params is the total parameter count (norms ignored: under 0.01%).
func (m Model) Params() float64 {
	emb := float64(m.VocabSize * m.HiddenSize)
	head := emb
	if m.TiedEmbeddings {
		head = 0
	}
	return float64(m.Layers)*m.LayerParams() + emb + head
}

// WeightBytes is the memory the weights occupy: the routed experts at
// their precision, the embedding table and LM head at
// embeddingPrecisionBytes, the rest at the dense layers' precision.
func (m Model) WeightBytes() float64 {
	eb, db := m.weightPrecisionBytes()
	experts := float64(m.Layers) * float64(m.Experts) * m.expertParams()
	emb := float64(m.VocabSize) * float64(m.HiddenSize)
	embHead := emb
	if !m.TiedEmbeddings {
		embHead += emb
	}
	return experts*eb + (m.Params()-experts-embHead)*db + embHead*m.embeddingPrecisionBytes()
}

// embeddingPrecisionBytes is the bytes of an embedding or LM-head weight:
// a quantized checkpoint keeps both in 16 bits (vLLM's quantization
// methods quantize linear layers, and FP8, AWQ, GPTQ and MXFP4
// checkpoints leave embed_tokens and lm_head out), so the step reads the
// head, and memory holds both, at no less than 2 bytes a weight.
func (m Model) embeddingPrecisionBytes() float64 {
	_, db := m.weightPrecisionBytes()
	return max(db, 2)
}

// weightPrecisionBytes is the bytes of a routed expert's weight and of
// every other weight (the same unless DenseWeightPrecision is set).
func (m Model) weightPrecisionBytes() (expert, dense float64) {
	expert, _ = precision(m.WeightPrecision, "bf16")
	dense = expert
	if m.DenseWeightPrecision != "" {
		dense, _ = precision(m.DenseWeightPrecision, "bf16")
	}
	return expert, dense
}

// expertStorageScale is how much more memory, and how many more bytes a
// step reads, a mixture of experts' routed experts take on one GPU of tp
// than their checkpoint shapes: vLLM's MXFP4 MoE method pads every
// expert's weights to its kernel's tile sizes when it creates them
// (vllm/model_executor/layers/quantization/mxfp4.py,
// Mxfp4MoEMethod.create_weights), the zeros stored and streamed like
// weights. gpt-oss's 2,880-wide experts on an H100 become 3,072 × 2,944:
// 65.8 GiB for the 120b where its checkpoint holds 60.7 (vLLM 0.10.1
// logs 65.97, vllm-project/vllm#23278; kvcap_published_test.go). 1 for every
// other precision: their fused-MoE weights keep the checkpoint's shapes.
func (m Model) expertStorageScale(gpu GPU, tp int) float64 {
	if m.Experts == 0 || !strings.EqualFold(m.WeightPrecision, "mxfp4") || tp < 1 {
		return 1
	}
	inter, hidden := mxfp4Alignment(gpu)
	i := m.ExpertFFNSize / tp // vLLM's intermediate_size_per_partition
	if i <= 0 {
		return 1
	}
	padded := float64(roundUp(m.HiddenSize, hidden)) * float64(roundUp(i, inter))
	return padded / (float64(m.HiddenSize) * float64(i))
}

// mxfp4Alignment is the multiple vLLM pads an MXFP4 expert's intermediate
// (per GPU) and hidden sizes to on gpu, by the MoE kernel it runs there
// (mxfp4.py, get_mxfp4_backend and create_weights): the Marlin kernel on
// GPUs without FP4 tensor cores (Ampere, Ada, Hopper: 128 and 256;
// Hopper's Triton path, the default of later vLLM, stores about as much:
// 64.38 GiB for the 120b, vllm-project/vllm#33155), FlashInfer on
// Blackwell (256 and 256), and on ROCm 128 and 128 (MI300X/MI325X).
func mxfp4Alignment(gpu GPU) (inter, hidden int) {
	name := strings.ToUpper(gpu.Name)
	switch {
	case gpu.Interconnect == InterconnectInfinityFabric:
		return 128, 128
	case strings.HasPrefix(name, "B2") || strings.HasPrefix(name, "B3") || strings.HasPrefix(name, "GB2") || strings.HasPrefix(name, "GB3"):
		return 256, 256
	default:
		return 128, 256
	}
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }

// KVBytesPerToken is the KV cache one token of context needs on one GPU of
// tp: K and V for every layer and KV head (heads are replicated when tp
// exceeds the KV head count, as vLLM does). Latent attention caches one
// latent and RoPE key per layer, which every GPU of tp holds whole (vLLM's
// MLA backends do not shard it). Sliding-window layers are counted too:
// per token of a context within their window (KVBytes bounds them).
func (m Model) KVBytesPerToken(tp int) float64 {
	if m.IsMLA() {
		b, _ := precision(m.KVPrecision, "bf16")
		return float64(m.Layers) * float64(m.KVLoRARank+m.QKRopeHeadDim) * b
	}
	return float64(m.Layers) * m.layerKVBytesPerToken(tp)
}

// layerKVBytesPerToken is one grouped-query layer's KV per token, per GPU.
func (m Model) layerKVBytesPerToken(tp int) float64 {
	b, _ := precision(m.KVPrecision, "bf16")
	kvHeads := float64(m.KVHeads) / float64(tp)
	if kvHeads < 1 {
		kvHeads = 1
	}
	return 2 * kvHeads * float64(m.HeadDim) * b
}

// FullKVBytesPerToken is the KV per token of the layers that attend to the
// whole context (all of them without a sliding window), per GPU of tp.
func (m Model) FullKVBytesPerToken(tp int) float64 {
	if m.SlidingLayers == 0 {
		return m.KVBytesPerToken(tp)
	}
	return float64(m.Layers-m.SlidingLayers) * m.layerKVBytesPerToken(tp)
}

// WindowKVBytesPerToken is the KV per token of the sliding-window layers,
// per GPU of tp (0 without them): they hold at most SlidingWindow tokens.
func (m Model) WindowKVBytesPerToken(tp int) float64 {
	return float64(m.SlidingLayers) * m.layerKVBytesPerToken(tp)
}

// poolKVBytesPerToken is what a block of the engine's KV pool holds per
// token: the full-attention layers' KV when the model also has windowed
// layers (their blocks, bounded per request, are charged beside: see
// Engine.windowBlocks); every layer's when all or none are windowed (an
// all-windowed model's cache is then taken as full attention's, an upper
// bound).
func (m Model) poolKVBytesPerToken(tp int) float64 {
	if m.SlidingLayers > 0 && m.SlidingLayers < m.Layers {
		return m.FullKVBytesPerToken(tp)
	}
	return m.KVBytesPerToken(tp)
}

// KVBytes is the KV cache a context of tokens holds on one GPU of tp:
// the full-attention layers' for every token, the windowed layers' for
// the last SlidingWindow (what a KV transfer moves, and attention reads).
func (m Model) KVBytes(tokens int64, tp int) float64 {
	return float64(tokens)*m.FullKVBytesPerToken(tp) + float64(min(tokens, int64(m.SlidingWindow)))*m.WindowKVBytesPerToken(tp)
}

//go:embed presets
var presetFS embed.FS

// Catalog holds GPU and model presets, looked up by name or alias
// case-insensitively, ignoring punctuation ("h100", "H100-SXM", "h100_sxm").
type Catalog struct {
	gpus   map[string]GPU
	models map[string]Model
	// names in the order of addition, for listing.
	gpuNames, modelNames []string
}

// NewCatalog returns a catalog with the built-in presets.
func NewCatalog() *Catalog {
	c := &Catalog{gpus: map[string]GPU{}, models: map[string]Model{}}
	for _, dir := range []string{"presets/gpus", "presets/models"} {
		entries, err := fs.ReadDir(presetFS, dir)
		if err != nil {
			panic(err) // embedded at build time
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			b, err := presetFS.ReadFile(p)
			if err != nil {
				panic(err)
			}
			if strings.HasSuffix(dir, "gpus") {
				g, err := ParseGPU(b)
				if err == nil {
					err = c.AddGPU(g)
				}
				if err != nil {
					panic(fmt.Sprintf("built-in preset %s: %v", p, err))
				}
			} else {
				m, err := ParseModel(b)
				if err == nil {
					err = c.AddModel(m)
				}
				if err != nil {
					panic(fmt.Sprintf("built-in preset %s: %v", p, err))
				}
			}
		}
	}
	return c
}

var builtin = NewCatalog()

// normalize folds case and drops punctuation so aliases match loosely.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// AddGPU adds (or replaces) a GPU preset after validating it.
func (c *Catalog) AddGPU(g GPU) error {
	if err := g.Validate(); err != nil {
		return err
	}
	if _, ok := c.gpus[normalize(g.Name)]; !ok {
		c.gpuNames = append(c.gpuNames, g.Name)
	}
	for _, n := range append([]string{g.Name}, g.Aliases...) {
		c.gpus[normalize(n)] = g
	}
	return nil
}

// AddModel adds (or replaces) a model preset after validating it.
func (c *Catalog) AddModel(m Model) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if _, ok := c.models[normalize(m.Name)]; !ok {
		c.modelNames = append(c.modelNames, m.Name)
	}
	for _, n := range append([]string{m.Name}, m.Aliases...) {
		c.models[normalize(n)] = m
	}
	return nil
}

// LookupGPU finds a GPU by name or alias.
func (c *Catalog) LookupGPU(name string) (GPU, error) {
	if g, ok := c.gpus[normalize(name)]; ok {
		return g, nil
	}
	return GPU{}, fmt.Errorf("unknown GPU %q (known: %s)", name, strings.Join(sorted(c.gpuNames), ", "))
}

// LookupModel finds a model by name or alias.
func (c *Catalog) LookupModel(name string) (Model, error) {
	if m, ok := c.models[normalize(name)]; ok {
		return m, nil
	}
	return Model{}, fmt.Errorf("unknown model %q (known: %s)", name, strings.Join(sorted(c.modelNames), ", "))
}

// GPUs lists the GPU presets sorted by name.
func (c *Catalog) GPUs() []GPU {
	out := make([]GPU, 0, len(c.gpuNames))
	for _, n := range sorted(c.gpuNames) {
		out = append(out, c.gpus[normalize(n)])
	}
	return out
}

// Models lists the model presets sorted by name.
func (c *Catalog) Models() []Model {
	out := make([]Model, 0, len(c.modelNames))
	for _, n := range sorted(c.modelNames) {
		out = append(out, c.models[normalize(n)])
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// LookupGPU finds a built-in GPU preset by name or alias.
func LookupGPU(name string) (GPU, error) { return builtin.LookupGPU(name) }

// LookupModel finds a built-in model preset by name or alias.
func LookupModel(name string) (Model, error) { return builtin.LookupModel(name) }

// Presets returns the names of the built-in GPU and model presets.
func Presets() (gpus, models []string) { return sorted(builtin.gpuNames), sorted(builtin.modelNames) }

// ParseGPU reads a GPU from the flat "key: value" preset format (a subset of
// YAML: one key per line, # comments, [a, b] lists).
func ParseGPU(b []byte) (GPU, error) {
	var g GPU
	err := parseFlat(b, func(k, v string) error {
		var err error
		switch k {
		case "name":
			g.Name = v
		case "aliases":
			g.Aliases = parseList(v)
		case "memory_gib":
			g.MemoryGiB, err = strconv.ParseFloat(v, 64)
		case "bandwidth_gbps":
			g.BandwidthGBps, err = strconv.ParseFloat(v, 64)
		case "bf16_tflops":
			g.BF16TFLOPS, err = strconv.ParseFloat(v, 64)
		case "interconnect_gbps":
			g.InterconnectGBps, err = strconv.ParseFloat(v, 64)
		case "interconnect":
			g.Interconnect = strings.ToLower(v)
		case "fp8_tflops":
			g.FP8TFLOPS, err = strconv.ParseFloat(v, 64)
		case "bf16_matmul_tflops":
			g.BF16MatmulTFLOPS, err = strconv.ParseFloat(v, 64)
		case "fp8_matmul_tflops":
			g.FP8MatmulTFLOPS, err = strconv.ParseFloat(v, 64)
		case "kernel_efficiency":
			g.KernelEfficiency, err = strconv.ParseFloat(v, 64)
		case "tdp_watts":
			g.TDPWatts, err = strconv.ParseFloat(v, 64)
		case "idle_watts":
			g.IdleWatts, err = strconv.ParseFloat(v, 64)
		case "boost_clock_mhz":
			g.BoostClockMHz, err = strconv.ParseFloat(v, 64)
		default:
			return fmt.Errorf("unknown key %q", k)
		}
		return err
	})
	if err != nil {
		return GPU{}, err
	}
	return g, g.Validate()
}

// ParseModel reads a Model from the flat preset format (see ParseGPU).
func ParseModel(b []byte) (Model, error) {
	var m Model
	err := parseFlat(b, func(k, v string) error {
		var err error
		atoi := func(p *int) { *p, err = strconv.Atoi(v) }
		switch k {
		case "name":
			m.Name = v
		case "aliases":
			m.Aliases = parseList(v)
		case "layers":
			atoi(&m.Layers)
		case "hidden_size":
			atoi(&m.HiddenSize)
		case "heads":
			atoi(&m.Heads)
		case "kv_heads":
			atoi(&m.KVHeads)
		case "head_dim":
			atoi(&m.HeadDim)
		case "ffn_size":
			atoi(&m.FFNSize)
		case "vocab_size":
			atoi(&m.VocabSize)
		case "max_context":
			atoi(&m.MaxContext)
		case "weight_precision":
			m.WeightPrecision = v
		case "kv_precision":
			m.KVPrecision = v
		case "dense_weight_precision":
			m.DenseWeightPrecision = v
		case "tied_embeddings":
			m.TiedEmbeddings, err = strconv.ParseBool(v)
		case "experts":
			atoi(&m.Experts)
		case "experts_per_token":
			atoi(&m.ExpertsPerToken)
		case "expert_ffn_size":
			atoi(&m.ExpertFFNSize)
		case "shared_expert_ffn_size":
			atoi(&m.SharedExpertFFNSize)
		case "dense_layers":
			atoi(&m.DenseLayers)
		case "kv_lora_rank":
			atoi(&m.KVLoRARank)
		case "q_lora_rank":
			atoi(&m.QLoRARank)
		case "qk_rope_head_dim":
			atoi(&m.QKRopeHeadDim)
		case "v_head_dim":
			atoi(&m.VHeadDim)
		case "weight_block_size":
			atoi(&m.WeightBlockSize)
		case "sliding_window":
			atoi(&m.SlidingWindow)
		case "sliding_layers":
			atoi(&m.SlidingLayers)
		default:
			return fmt.Errorf("unknown key %q", k)
		}
		return err
	})
	if err != nil {
		return Model{}, err
	}
	return m, m.Validate()
}

func parseFlat(b []byte, set func(k, v string) error) error {
	for i, line := range strings.Split(string(b), "\n") {
		if j := strings.Index(line, "#"); j >= 0 && (j == 0 || line[j-1] == ' ' || line[j-1] == '\t') {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("line %d: want \"key: value\", got %q", i+1, line)
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		if err := set(strings.TrimSpace(k), v); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return nil
}

func parseList(v string) []string {
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.Trim(strings.TrimSpace(s), `"'`); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// KVCacheDtypes lists what WithKVCacheDtype accepts, as vLLM's
// --kv-cache-dtype spells them.
var KVCacheDtypes = []string{"auto", "bf16", "bfloat16", "fp16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"}

// ActivationPrecision is the dtype the model computes and, by default,
// caches KV in: its weights' when they are 16-bit, else BF16 (a quantized
// checkpoint still runs its activations in 16-bit).
func (m Model) ActivationPrecision() string {
	if strings.EqualFold(m.WeightPrecision, "fp16") || strings.EqualFold(m.WeightPrecision, "float16") {
		return "fp16"
	}
	return "bf16"
}

// WithKVCacheDtype returns the model with its KV cache in dtype. "auto"
// (or "") is vLLM's default: the model's own KV precision if its preset
// names one, else its activation dtype — never FP8 unless asked for.
func (m Model) WithKVCacheDtype(dtype string) (Model, error) {
	switch strings.ToLower(dtype) {
	case "", "auto":
		if m.KVPrecision == "" {
			m.KVPrecision = m.ActivationPrecision()
		}
	case "bf16", "bfloat16":
		m.KVPrecision = "bf16"
	case "fp16", "float16":
		m.KVPrecision = "fp16"
	case "fp8", "fp8_e4m3", "fp8_e5m2":
		m.KVPrecision = "fp8"
	default:
		return m, fmt.Errorf("unknown KV cache dtype %q (want auto, bf16, fp16 or fp8)", dtype)
	}
	return m, nil
}
