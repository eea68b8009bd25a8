package simengine

import (
	"math"
	"strings"
	"testing"
)

// stepMS prices one step of shape s under cost p, in ms.
func stepMS(t *testing.T, gpu, model string, tp int, p CostParams, s StepShape) float64 {
	t.Helper()
	c := newCostModel(mustGPU(t, gpu), mustModel(t, model), tp, p, 1)
	return float64(c.stepNS(&stepLoad{seqs: s.Seqs, newTokens: s.NewTokens, sampled: s.Sampled, ctxTokens: s.CtxTokens, attnPairs: s.AttnPairs})) / 1e6
}

// Block-scaled FP8 weights (DeepSeek-V3/R1's weight_block_size [128, 128])
// pay CostParams.BlockFP8Efficiency on their linear layers, memory- and
// compute-bound alike; a BF16 model and a per-tensor FP8 one do not.
func TestBlockFP8Efficiency(t *testing.T) {
	if m := mustModel(t, "deepseek-r1"); m.WeightBlockSize != 128 {
		t.Fatalf("DeepSeek-R1's preset: weight_block_size %d, want 128 (its quantization_config)", m.WeightBlockSize)
	}
	none, half := DefaultCost, DefaultCost
	none.BlockFP8Efficiency, half.BlockFP8Efficiency = 1, 0.5
	for _, m := range []struct {
		name string
		tp   int
	}{{"llama-3.1-70b", 4}, {"llama-3.1-70b-fp8", 4}, {"qwen3-235b-a22b", 8}} {
		for _, s := range []StepShape{DecodeShape(4, 500), PrefillShape(4096)} {
			if a, b := stepMS(t, "h200", m.name, m.tp, none, s), stepMS(t, "h200", m.name, m.tp, half, s); a != b {
				t.Errorf("%s (no block scales), %d new tokens: step %.3f ms without the block-FP8 term, %.3f with it", m.name, s.NewTokens, a, b)
			}
		}
	}
	// DeepSeek-R1: a small decode batch is bound by its weight reads, a
	// long prompt by the linear layers' arithmetic; both slow.
	for _, s := range []StepShape{DecodeShape(4, 500), PrefillShape(8192)} {
		a, b := stepMS(t, "h200", "deepseek-r1", 8, none, s), stepMS(t, "h200", "deepseek-r1", 8, half, s)
		t.Logf("DeepSeek-R1 TP8 on H200, %d new tokens: %.2f ms at block-FP8 efficiency 1, %.2f at 0.5", s.NewTokens, a, b)
		if b < 1.3*a {
			t.Errorf("DeepSeek-R1, %d new tokens: %.2f ms at block-FP8 efficiency 0.5, want at least 1.3× the %.2f at 1", s.NewTokens, b, a)
		}
	}
	// The shipped default at four users, 500 tokens of context: between
	// the step without the term (10.6 ms: weights 6.4 ms at the dense
	// read rate, all-reduce 2.7, T0 1.2) and GPUStack's measured TPOT at
	// 4 users on vLLM 0.11 (19.4 ms, which also holds sampling and
	// scheduling that knee does not price in the step).
	if got := stepMS(t, "h200", "deepseek-r1", 8, DefaultCost, DecodeShape(4, 500)); got < 14 || got > 19.4 {
		t.Errorf("DeepSeek-R1 TP8 on H200, 4 users: step %.2f ms under DefaultCost, want 14-19.4 ms", got)
	}
	_, err := ParseModel([]byte("name: x\nlayers: 2\nhidden_size: 64\nheads: 4\nkv_heads: 1\nhead_dim: 16\nffn_size: 128\nvocab_size: 10\nmax_context: 64\nweight_block_size: 128\n"))
	if err == nil || !strings.Contains(err.Error(), "weight_block_size") {
		t.Errorf("block scales on BF16 weights: %v, want an error naming weight_block_size", err)
	}
}

// Latent attention's down-projections (q_a_proj, kv_a_proj_with_mqa) are
// replicated on every GPU of a tensor-parallel group, as vLLM and SGLang
// load them: DeepSeek-R1 at TP8 reads 61 × 7,168 × (1,536 + 576) of
// them whole on each GPU, not an eighth; a grouped-query model's dense
// weights shard exactly.
func TestMLAReplicatedProjections(t *testing.T) {
	p := DefaultCost
	p.BlockFP8Efficiency = 1
	dense := func(model string, tp int) float64 {
		m := mustModel(t, model)
		c := newCostModel(mustGPU(t, "h200"), m, tp, p, 1)
		return c.weightBytes
	}
	r1, r8 := dense("deepseek-r1", 1), dense("deepseek-r1", 8)
	want := 61 * 7168 * (1536 + 576) * (1 - 1.0/8) // FP8: a byte a weight
	if got := r8 - r1/8; math.Abs(got-want) > 1 {
		t.Errorf("DeepSeek-R1 at TP8: %.0f bytes a GPU beyond an eighth of TP1's dense weights, want %.0f (the replicated projections)", got, want)
	}
	if l1, l8 := dense("llama-3.1-70b", 1), dense("llama-3.1-70b", 8); math.Abs(l8-l1/8) > 1 {
		t.Errorf("Llama-3.1-70B at TP8: %.0f bytes of dense weights a GPU, want an eighth of TP1's %.0f", l8, l1)
	}
}

// A quantized checkpoint's LM head stays in 16 bits: Llama-3.1-8B-FP8
// reads its 4,096 × 128,256 head at 2 bytes a weight, its layers at 1.
func TestQuantizedLMHeadIn16Bits(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b-fp8")
	c := newCostModel(mustGPU(t, "h100"), m, 1, DefaultCost, 1)
	want := float64(m.Layers)*m.denseLayerParams() + 2*4096*128256
	if math.Abs(c.weightBytes-want) > 1 {
		t.Errorf("Llama-3.1-8B-FP8: %.4g bytes read a step, want %.4g (layers in FP8, LM head in BF16)", c.weightBytes, want)
	}
}
