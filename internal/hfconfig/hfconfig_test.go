package hfconfig

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
)

// Each real config builds a model whose sizes agree with what its
// publisher states (model cards and papers), and whose KV cache per token
// follows from its attention.
func TestRealConfigs(t *testing.T) {
	for _, c := range []struct {
		file              string
		params, active    float64 // billions, as published
		kvKiB             float64 // KV cache per token at tp 1, KiB
		weight, kv        string
		experts, dense    int
		mla, hasNotes     bool
		name, layersHeads string
	}{
		// Llama 3.3 70B: 70.6B; GQA 8 KV heads of 128 over 80 layers.
		{file: "llama-3.3-70b-instruct.json", params: 70.6, active: 70.6, kvKiB: 320, weight: "bf16", kv: "bf16"},
		// Llama 4 Scout: 109B total, 17B active (model card); 48 layers,
		// 8 KV heads of 128.
		{file: "llama-4-scout-17b-16e-instruct.json", params: 108.6, active: 17.2, kvKiB: 192, weight: "bf16", kv: "bf16", experts: 16, hasNotes: true},
		// DeepSeek-V3: 671B main model, 37B active (README; 36.6B + 0.9B
		// head); MLA caches 512 + 64 values per layer: 61 × 576 × 2 bytes.
		{file: "deepseek-v3.json", params: 671, active: 37.5, kvKiB: 61 * 576 * 2 / 1024.0, weight: "fp8", kv: "bf16", experts: 256, dense: 3, mla: true, hasNotes: true},
		// gpt-oss-120b: 116.8B total, 5.13B active (model card), which
		// leaves out the 0.58B embedding table that knee's count keeps;
		// 36 layers of 8 KV heads of 64.
		{file: "gpt-oss-120b.json", params: 116.8, active: 5.13 + 201088*2880/1e9, kvKiB: 72, weight: "mxfp4", kv: "bf16", experts: 128, hasNotes: true},
		{file: "mistral-7b-instruct-v0.3.json", params: 7.25, active: 7.25, kvKiB: 128, weight: "bf16", kv: "bf16"},
		{file: "qwen2.5-7b-instruct.json", params: 7.62, active: 7.62, kvKiB: 56, weight: "bf16", kv: "bf16"},
		{file: "qwen3-32b.json", params: 32.8, active: 32.8, kvKiB: 256, weight: "bf16", kv: "bf16"},
		{file: "phi-4.json", params: 14.7, active: 14.7, kvKiB: 200, weight: "bf16", kv: "bf16"},
	} {
		t.Run(c.file, func(t *testing.T) {
			m, notes, err := Load("testdata/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Params() / 1e9; got < c.params*0.98 || got > c.params*1.02 {
				t.Errorf("%.2fB parameters, want %.2fB ±2%%", got, c.params)
			}
			if got := m.ActiveParams() / 1e9; got < c.active*0.97 || got > c.active*1.03 {
				t.Errorf("%.2fB active parameters, want %.2fB ±3%%", got, c.active)
			}
			if got := m.KVBytesPerToken(1) / 1024; got != c.kvKiB {
				t.Errorf("%.2f KiB KV per token, want %.2f", got, c.kvKiB)
			}
			if m.WeightPrecision != c.weight || m.KVPrecision != c.kv {
				t.Errorf("weights %s, KV %s; want %s, %s", m.WeightPrecision, m.KVPrecision, c.weight, c.kv)
			}
			if m.Experts != c.experts || m.DenseLayers != c.dense || m.IsMLA() != c.mla {
				t.Errorf("experts %d, dense layers %d, MLA %v; want %d, %d, %v", m.Experts, m.DenseLayers, m.IsMLA(), c.experts, c.dense, c.mla)
			}
			if (len(notes) > 0) != c.hasNotes {
				t.Errorf("notes %q; want some: %v", notes, c.hasNotes)
			}
		})
	}
	// gpt-oss: MXFP4 experts (4.25 bits), every other weight BF16; the
	// model card gives a 60.8 GiB checkpoint.
	o, _, _ := Load("testdata/gpt-oss-120b.json")
	if gib := o.WeightBytes() / (1 << 30); o.DenseWeightPrecision != "bf16" || gib < 60.8*0.98 || gib > 60.8*1.02 {
		t.Errorf("gpt-oss-120b: weights outside the experts %q, %.1f GiB in all; want bf16 and 60.8 GiB ±2%%", o.DenseWeightPrecision, gib)
	}
	// MLA's latent is not sharded: the same bytes per GPU at TP8.
	m, _, _ := Load("testdata/deepseek-v3.json")
	if m.KVBytesPerToken(8) != m.KVBytesPerToken(1) {
		t.Errorf("DeepSeek-V3 KV per token at TP8 %v, at TP1 %v: the latent is replicated", m.KVBytesPerToken(8), m.KVBytesPerToken(1))
	}
	// Its FP8 weights are block-scaled (weight_block_size [128, 128]), as
	// the built-in preset says; a BF16 checkpoint has no blocks.
	if p, err := simengine.LookupModel("deepseek-v3"); err != nil || m.WeightBlockSize != 128 || p.WeightBlockSize != m.WeightBlockSize {
		t.Errorf("DeepSeek-V3 weight block size %d from its config, %d in the preset (%v); want 128 in both", m.WeightBlockSize, p.WeightBlockSize, err)
	}
	if l, _, _ := Load("testdata/llama-3.3-70b-instruct.json"); l.WeightBlockSize != 0 {
		t.Errorf("Llama-3.3-70B (BF16) weight block size %d, want 0", l.WeightBlockSize)
	}
	// The name comes from the file where it does not name itself.
	if q, _, _ := Load("testdata/qwen3-32b.json"); q.Name != "qwen3-32b" {
		t.Errorf("name %q, want qwen3-32b", q.Name)
	}
	if q, _, _ := Load("testdata/mistral-7b-instruct-v0.3.json"); q.Name != "mistralai/Mistral-7B-Instruct-v0.3" {
		t.Errorf("name %q, want _name_or_path's", q.Name)
	}
}

// A config knee cannot model, or cannot read, is refused naming the field.
func TestRefusesNamingTheField(t *testing.T) {
	for _, c := range []struct {
		name, json, field string
	}{
		{"unknown family", `{"model_type":"mamba","hidden_size":768}`, "model_type"},
		{"no family", `{"hidden_size":768}`, "model_type"},
		{"hybrid attention", `{"model_type":"qwen3","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128,"layer_types":["linear_attention","full_attention"]}`, "layer_types"},
		{"missing layers", `{"model_type":"llama","hidden_size":64,"num_attention_heads":4,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128}`, "num_hidden_layers"},
		{"string where a number goes", `{"model_type":"llama","hidden_size":"big"}`, "hidden_size"},
		{"zero heads", `{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":0,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128}`, "num_attention_heads"},
		{"KV heads that do not divide", `{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":3,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128}`, "num_key_value_heads"},
		{"top-k beyond experts", `{"model_type":"mixtral","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128,"num_local_experts":4,"num_experts_per_tok":8}`, "num_experts_per_tok"},
		{"unknown quantization", `{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128,"quantization_config":{"quant_method":"hqq"}}`, "quantization_config.quant_method"},
		{"MLA without its RoPE size", `{"model_type":"deepseek_v3","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128,"kv_lora_rank":32,"qk_nope_head_dim":16,"v_head_dim":16}`, "qk_rope_head_dim"},
		{"encoder-decoder", `{"model_type":"llama","is_encoder_decoder":true}`, "is_encoder_decoder"},
		{"multimodal text model missing a field", `{"model_type":"llama4","text_config":{"model_type":"llama4_text","hidden_size":"x"}}`, "text_config.hidden_size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Parse([]byte(c.json), "x")
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("err = %v; want a FieldError naming %q", err, c.field)
			}
			if !strings.Contains(err.Error(), `"`+c.field+`"`) {
				t.Errorf("message %q does not name %q", err, c.field)
			}
		})
	}
	if _, _, err := Parse([]byte(`{"model_type": llama`), "x"); err == nil || !strings.Contains(err.Error(), "not a JSON config") {
		t.Errorf("malformed JSON: %v", err)
	}
}

// A model whose dense-layer and shared-expert shapes are averaged over its
// layers still sums to the exact totals: DeepSeek-V3's 3 dense layers of
// 18432 and 58 MoE layers of 256 routed + 1 shared expert of 2048.
func TestMixedLayersSumExactly(t *testing.T) {
	m, _, err := Load("testdata/deepseek-v3.json")
	if err != nil {
		t.Fatal(err)
	}
	h := 7168.0
	attn := h*1536 + 1536*128*192 + h*(512+64) + 512*128*(128+128) + 128*128*h
	want := 61*attn + 3*3*h*18432 + 58*(h*256+3*h*2048*(256+1)) + 2*h*129280
	if got := m.Params(); got < want*0.999999 || got > want*1.000001 {
		t.Errorf("Params() = %.6g, want %.6g", got, want)
	}
}

// The families without a real file here map their own field names: the
// fields below are those of each model's published config.json (abridged
// to what knee reads), and the sizes the publishers state.
func TestFamilyFieldNames(t *testing.T) {
	for _, c := range []struct {
		name, json     string
		params, active float64
	}{
		// Qwen/Qwen3-30B-A3B: 30.5B, 3.3B active.
		{"qwen3_moe", `{"model_type":"qwen3_moe","hidden_size":2048,"num_hidden_layers":48,"num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,
			"intermediate_size":6144,"moe_intermediate_size":768,"num_experts":128,"num_experts_per_tok":8,"decoder_sparse_step":1,"mlp_only_layers":[],
			"vocab_size":151936,"max_position_embeddings":40960,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}`, 30.5, 3.3},
		// mistralai/Mixtral-8x7B-v0.1: 46.7B, 12.9B active.
		{"mixtral", `{"model_type":"mixtral","hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,
			"intermediate_size":14336,"num_local_experts":8,"num_experts_per_tok":2,"vocab_size":32000,"max_position_embeddings":32768,"torch_dtype":"bfloat16"}`, 46.7, 12.9},
		// Qwen/Qwen1.5-MoE-A2.7B (qwen2_moe, a shared expert): 14.3B, 2.7B active.
		{"qwen2_moe", `{"model_type":"qwen2_moe","hidden_size":2048,"num_hidden_layers":24,"num_attention_heads":16,"num_key_value_heads":16,
			"intermediate_size":5632,"moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"num_experts":60,"num_experts_per_tok":4,
			"vocab_size":151936,"max_position_embeddings":8192,"tie_word_embeddings":false,"torch_dtype":"bfloat16"}`, 14.3, 2.7},
		// google/gemma-7b: 8.54B, head_dim 256, embeddings tied by the
		// family's default.
		{"gemma", `{"model_type":"gemma","hidden_size":3072,"num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":16,"head_dim":256,
			"intermediate_size":24576,"vocab_size":256000,"max_position_embeddings":8192,"torch_dtype":"bfloat16"}`, 8.54, 8.54},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, _, err := Parse([]byte(c.json), c.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Params() / 1e9; got < c.params*0.98 || got > c.params*1.02 {
				t.Errorf("%.2fB parameters, want %.2fB ±2%%", got, c.params)
			}
			if got := m.ActiveParams() / 1e9; got < c.active*0.95 || got > c.active*1.05 {
				t.Errorf("%.2fB active parameters, want %.2fB ±5%%", got, c.active)
			}
		})
	}
}

// Sizes beyond any model's are refused, so products of sizes stay finite.
func TestRefusesAbsurdSizes(t *testing.T) {
	_, _, err := Parse([]byte(`{"model_type":"llama","hidden_size":1000000000000,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128}`), "x")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "hidden_size" {
		t.Errorf("err = %v; want hidden_size refused", err)
	}
}

// Parse never panics and either builds a valid model or names a field.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"deepseek-v3.json", "gpt-oss-120b.json", "llama-4-scout-17b-16e-instruct.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model_type":"mixtral","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"max_position_embeddings":64,"intermediate_size":128,"num_local_experts":4,"num_experts_per_tok":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := Parse(b, "fuzz")
		if err != nil {
			return
		}
		if verr := m.Validate(); verr != nil {
			t.Fatalf("Parse built an invalid model: %v", verr)
		}
		if p := m.Params(); !(p > 0) || math.IsInf(p, 0) {
			t.Fatalf("Parse built a model of %v parameters", p)
		}
	})
}

// Sliding-window layers are read from layer_types where the file lists
// them, else from the family's pattern; a window use_sliding_window turns
// off, or none at all, leaves every layer full attention.
func TestSlidingWindowLayers(t *testing.T) {
	for _, c := range []struct {
		file, json     string
		window, layers int
	}{
		// layer_types: 18 of 36 sliding_attention, sliding_window 128.
		{file: "gpt-oss-120b.json", window: 128, layers: 18},
		// sliding_window 131072 with use_sliding_window false.
		{file: "qwen2.5-7b-instruct.json"},
		{file: "qwen3-32b.json"},
		{file: "mistral-7b-instruct-v0.3.json"}, // sliding_window null
		// google/gemma-2-9b's fields: every even layer of 42 windowed (4,096).
		{json: `{"model_type":"gemma2","hidden_size":3584,"num_hidden_layers":42,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,
			"intermediate_size":14336,"vocab_size":256000,"max_position_embeddings":8192,"sliding_window":4096,"torch_dtype":"bfloat16"}`, window: 4096, layers: 21},
		// google/gemma-3-27b's text config: five of every six of 62 layers windowed (1,024).
		{json: `{"model_type":"gemma3_text","hidden_size":5376,"num_hidden_layers":62,"num_attention_heads":32,"num_key_value_heads":16,"head_dim":128,
			"intermediate_size":21504,"vocab_size":262208,"max_position_embeddings":131072,"sliding_window":1024,"sliding_window_pattern":6,"torch_dtype":"bfloat16"}`, window: 1024, layers: 52},
	} {
		var m simengine.Model
		var err error
		if c.file != "" {
			m, _, err = Load("testdata/" + c.file)
		} else {
			m, _, err = Parse([]byte(c.json), "x")
		}
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if m.SlidingWindow != c.window || m.SlidingLayers != c.layers {
			t.Errorf("%s%.20s: window %d over %d layers, want %d over %d", c.file, c.json, m.SlidingWindow, m.SlidingLayers, c.window, c.layers)
		}
	}
}
