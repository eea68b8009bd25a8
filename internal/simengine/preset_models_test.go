package simengine

import (
	"math"
	"strings"
	"testing"
)

// The presets added for issue 28 agree with their publishers' sizes, and
// answer to the names users type.
func TestAddedModelPresets(t *testing.T) {
	for _, c := range []struct {
		alias, name    string
		params, active float64 // billions, as published (active: model cards)
	}{
		{"meta-llama/Llama-3.1-405B-Instruct", "Llama-3.1-405B", 405.9, 405.9},
		{"llama-3.1-405b-instruct-fp8", "Llama-3.1-405B-FP8", 405.9, 405.9},
		{"meta-llama/Llama-3.3-70B-Instruct", "Llama-3.3-70B", 70.6, 70.6},
		{"mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B", 7.25, 7.25},
		{"Qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B", 7.62, 7.62},
		{"qwen2.5-32b", "Qwen2.5-32B", 32.8, 32.8},
		{"Qwen/Qwen2.5-72B-Instruct", "Qwen2.5-72B", 72.7, 72.7},
		{"Qwen/Qwen3-32B", "Qwen3-32B", 32.8, 32.8},
		// DeepSeek-V3: 671B, 37B active (36.6B + 0.9B output head).
		{"deepseek-ai/DeepSeek-R1", "DeepSeek-V3", 671, 37.5},
		// gpt-oss: 20.9B/3.61B and 116.8B/5.13B active, without the
		// 0.58B embedding table knee's count keeps.
		{"openai/gpt-oss-20b", "gpt-oss-20b", 20.9, 3.61 + 0.58},
		{"gpt-oss-120b", "gpt-oss-120b", 116.8, 5.13 + 0.58},
		// Llama 4 Scout: 109B, 17B active.
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama-4-Scout", 109, 17},
		// DBRX: 132B, 36B active (databricks/dbrx-instruct's model card).
		{"databricks/dbrx-instruct", "DBRX", 132, 36},
	} {
		m, err := LookupModel(c.alias)
		if err != nil || m.Name != c.name {
			t.Errorf("LookupModel(%q) = %q, %v; want %s", c.alias, m.Name, err, c.name)
			continue
		}
		if got := m.Params() / 1e9; math.Abs(got/c.params-1) > 0.02 {
			t.Errorf("%s: %.2fB parameters, want %.2fB ±2%%", c.name, got, c.params)
		}
		if got := m.ActiveParams() / 1e9; math.Abs(got/c.active-1) > 0.03 {
			t.Errorf("%s: %.2fB active parameters, want %.2fB ±3%%", c.name, got, c.active)
		}
		if m.KVPrecision != "" && m.KVPrecision != m.ActivationPrecision() {
			t.Errorf("%s: KV %s by default; vLLM's auto is the model's dtype", c.name, m.KVPrecision)
		}
	}
	for _, c := range []struct{ alias, name, link string }{
		{"h100-pcie", "H100-PCIe", InterconnectPCIe}, {"GH200", "GH200", InterconnectNVLink}, {"a10g", "A10G", InterconnectPCIe},
		{"h20", "H20", InterconnectNVLink}, {"RTX 4090", "RTX4090", InterconnectPCIe}, {"b300", "B300", InterconnectNVLink},
		{"mi325x", "MI325X", InterconnectInfinityFabric},
	} {
		g, err := LookupGPU(c.alias)
		if err != nil || g.Name != c.name || g.Interconnect != c.link {
			t.Errorf("LookupGPU(%q) = %q (%s), %v; want %s over %s", c.alias, g.Name, g.Interconnect, err, c.name, c.link)
		}
	}
	for _, g := range builtin.GPUs() {
		if g.Interconnect == "" {
			t.Errorf("GPU preset %s does not say its interconnect's kind", g.Name)
		}
	}
}

// --kv-cache-dtype changes the KV cache's capacity in tokens by the byte
// ratio, with the weights unchanged; auto is the model's activation dtype,
// as vLLM's default, so the FP8-weight 70B caches in BF16 unless told.
func TestKVCacheDtypeChangesCapacity(t *testing.T) {
	g, _ := LookupGPU("h100")
	m, _ := LookupModel("llama-3.1-70b-fp8")
	capacity := func(dtype string) (int, float64) {
		t.Helper()
		mm, err := m.WithKVCacheDtype(dtype)
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEngine(DefaultConfig(g, mm, 2))
		if err != nil {
			t.Fatal(err)
		}
		return e.Stats().KVCapacityTokens, mm.WeightBytes()
	}
	auto, wAuto := capacity("auto")
	bf16, _ := capacity("bf16")
	fp8, wFP8 := capacity("fp8")
	t.Logf("Llama-3.1-70B-FP8 TP2 H100 KV capacity: auto %d, bf16 %d, fp8 %d tokens", auto, bf16, fp8)
	if auto != bf16 {
		t.Errorf("auto holds %d tokens, bf16 %d: auto should be BF16 for an FP8-weight checkpoint", auto, bf16)
	}
	// The same KV bytes hold twice the tokens at one byte a value, to
	// within a block's rounding.
	if r := float64(fp8) / float64(bf16); math.Abs(r-2) > 2*float64(BlockTokens)/float64(bf16) {
		t.Errorf("fp8/bf16 KV capacity = %d/%d = %.4f, want 2", fp8, bf16, r)
	}
	if wAuto != wFP8 {
		t.Errorf("weights %v vs %v: the KV dtype must not change them", wAuto, wFP8)
	}
	for _, alias := range []string{"fp8_e4m3", "FP8_E5M2"} {
		if mm, err := m.WithKVCacheDtype(alias); err != nil || mm.KVPrecision != "fp8" {
			t.Errorf("WithKVCacheDtype(%q) = %q, %v", alias, mm.KVPrecision, err)
		}
	}
	if _, err := m.WithKVCacheDtype("int3"); err == nil || !strings.Contains(err.Error(), `"int3"`) || !strings.Contains(err.Error(), "fp8") {
		t.Errorf("bad dtype: %v; want it named with the accepted ones", err)
	}
	// A 16-bit model's auto is its own dtype.
	l2, _ := LookupModel("llama-2-70b")
	if mm, _ := l2.WithKVCacheDtype("auto"); mm.KVPrecision != "fp16" {
		t.Errorf("Llama-2-70B (FP16) auto KV = %s, want fp16", mm.KVPrecision)
	}
}

// A preset file can describe latent attention and mixed layers; a
// malformed one is refused naming the field.
func TestParseModelMLAFields(t *testing.T) {
	_, err := ParseModel([]byte("name: x\nlayers: 2\nhidden_size: 64\nheads: 4\nkv_heads: 1\nhead_dim: 24\nffn_size: 128\nvocab_size: 10\nmax_context: 64\nkv_lora_rank: 32\nv_head_dim: 16\n"))
	if err == nil || !strings.Contains(err.Error(), "qk_rope_head_dim") {
		t.Errorf("MLA without qk_rope_head_dim: %v", err)
	}
	_, err = ParseModel([]byte("name: x\nlayers: 2\nhidden_size: 64\nheads: 4\nkv_heads: 1\nhead_dim: 16\nffn_size: 128\nvocab_size: 10\nmax_context: 64\ndense_layers: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "dense_layers") {
		t.Errorf("dense_layers on a dense model: %v", err)
	}
}
