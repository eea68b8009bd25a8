// Package hfconfig builds a simulator model (simengine.Model) from a
// Hugging Face config.json, so knee can simulate a model it has no preset
// for.
//
// Read Parse first: it decodes the fields the families below use, takes a
// multimodal config's text_config, and maps each family's names for the
// same quantity (experts are num_local_experts in Mixtral, num_experts in
// Qwen-MoE, n_routed_experts in DeepSeek) onto one Model. Whatever knee
// cannot model is refused with a *FieldError naming the field; what it
// models approximately is said in the returned notes.
//
// Families: Llama (2, 3, 4), Mistral, Mixtral, Qwen2/2.5, Qwen2-MoE, Qwen3,
// Qwen3-MoE, Gemma (1, 2, 3), Phi (2, 3, 4), DeepSeek-V2/V3/R1 (latent
// attention), gpt-oss, and their multimodal wrappers' text models.
package hfconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// MaxConfigBytes bounds what Load reads: real config.json files are a few
// KiB (a multimodal one with its vision tower, tens of KiB).
const MaxConfigBytes = 4 << 20

// maxSize bounds every size a config gives (a model's widths, layers,
// vocabulary and context are far below it), so that products of sizes
// stay exact and finite whatever the file says.
const maxSize = 1 << 26

// FieldError is a config knee cannot model, or a field it cannot read.
type FieldError struct {
	Field   string // the JSON key, dotted inside objects (quantization_config.quant_method)
	Problem string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Field, e.Problem) }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// families are the model_type values knee maps, with the tied-embedding
// default of each family's config class (used when the file omits
// tie_word_embeddings).
var families = map[string]struct{ tiedByDefault bool }{
	"llama": {}, "llama4": {}, "llama4_text": {},
	"mistral": {}, "mixtral": {}, "mistral3": {},
	"qwen2": {}, "qwen2_moe": {}, "qwen3": {}, "qwen3_moe": {}, "qwen2_5_vl": {}, "qwen2_5_vl_text": {}, "qwen2_vl": {},
	"gemma": {true}, "gemma2": {true}, "gemma3": {true}, "gemma3_text": {true},
	"phi": {}, "phi3": {}, "phimoe": {},
	"deepseek_v2": {}, "deepseek_v3": {},
	"gpt_oss": {},
}

// SupportedModelTypes lists the model_type values Parse accepts.
func SupportedModelTypes() []string {
	out := make([]string, 0, len(families))
	for k := range families {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// config holds the fields Parse reads; pointers tell absent from zero.
type config struct {
	NameOrPath   string          `json:"_name_or_path"`
	ModelType    string          `json:"model_type"`
	TextConfig   json.RawMessage `json:"text_config"`
	EncDec       bool            `json:"is_encoder_decoder"`
	Hidden       *int            `json:"hidden_size"`
	Layers       *int            `json:"num_hidden_layers"`
	Heads        *int            `json:"num_attention_heads"`
	KVHeads      *int            `json:"num_key_value_heads"`
	HeadDim      *int            `json:"head_dim"`
	FFN          *int            `json:"intermediate_size"`
	FFNMLP       *int            `json:"intermediate_size_mlp"`
	Vocab        *int            `json:"vocab_size"`
	MaxPos       *int            `json:"max_position_embeddings"`
	Tied         *bool           `json:"tie_word_embeddings"`
	TorchDtype   string          `json:"torch_dtype"`
	Dtype        string          `json:"dtype"`
	Quant        json.RawMessage `json:"quantization_config"`
	LayerTypes   []string        `json:"layer_types"`
	Sliding      *int            `json:"sliding_window"`
	UseSliding   *bool           `json:"use_sliding_window"`
	SlidingEvery *int            `json:"sliding_window_pattern"`
	ChunkSize    *int            `json:"attention_chunk_size"`
	LocalExperts *int            `json:"num_local_experts"`
	NumExperts   *int            `json:"num_experts"`
	Routed       *int            `json:"n_routed_experts"`
	TopK         *int            `json:"num_experts_per_tok"`
	TopKOSS      *int            `json:"experts_per_token"`
	MoEFFN       *int            `json:"moe_intermediate_size"`
	SharedFFN    *int            `json:"shared_expert_intermediate_size"`
	NShared      *int            `json:"n_shared_experts"`
	FirstDense   *int            `json:"first_k_dense_replace"`
	MoEFreq      *int            `json:"moe_layer_freq"`
	Interleave   *int            `json:"interleave_moe_layer_step"`
	SparseStep   *int            `json:"decoder_sparse_step"`
	MLPOnly      []int           `json:"mlp_only_layers"`
	KVLoRA       *int            `json:"kv_lora_rank"`
	QLoRA        *int            `json:"q_lora_rank"`
	QKRope       *int            `json:"qk_rope_head_dim"`
	QKNope       *int            `json:"qk_nope_head_dim"`
	VHead        *int            `json:"v_head_dim"`
}

// Load reads and parses a config.json file. The model is named after the
// file's _name_or_path, else its directory (for a file called
// config.json, as a downloaded model has it), else the file name.
func Load(path string) (simengine.Model, []string, error) {
	b, err := badinput.ReadFile(path, MaxConfigBytes, "a model's config.json")
	if err != nil {
		return simengine.Model{}, nil, err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if name == "config" {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != string(filepath.Separator) {
			name = dir
		}
	}
	return Parse(b, name)
}

// Parse builds the model a config.json describes; name is used when the
// file does not name itself (_name_or_path). Notes say what knee models
// approximately.
func Parse(b []byte, name string) (simengine.Model, []string, error) {
	top, err := decode(b)
	if err != nil {
		return simengine.Model{}, nil, err
	}
	c := top
	if len(top.TextConfig) > 0 && !bytes.Equal(bytes.TrimSpace(top.TextConfig), []byte("null")) {
		// A multimodal model (Llama 4, Gemma 3, Qwen2.5-VL): knee
		// simulates its text model; the vision tower runs only on images.
		if c, err = decode(top.TextConfig); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				fe.Field = "text_config." + fe.Field
			}
			return simengine.Model{}, nil, err
		}
		if c.TorchDtype == "" && c.Dtype == "" {
			c.TorchDtype, c.Dtype = top.TorchDtype, top.Dtype
		}
		if len(c.Quant) == 0 {
			c.Quant = top.Quant
		}
		if c.ModelType == "" {
			c.ModelType = top.ModelType
		}
		if c.NameOrPath == "" {
			c.NameOrPath = top.NameOrPath
		}
	}
	if c.NameOrPath != "" {
		name = c.NameOrPath
	}
	return build(c, name)
}

func decode(b []byte) (config, error) {
	var c config
	if err := json.Unmarshal(b, &c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return c, fieldErr(te.Field, "want a JSON %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
		}
		return c, fmt.Errorf("not a JSON config: %w", err)
	}
	return c, nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "ptr":
		return "integer"
	case "slice":
		return "list"
	case "bool":
		return "boolean"
	}
	return goKind
}

func build(c config, name string) (simengine.Model, []string, error) {
	var notes []string
	if c.ModelType == "" {
		return simengine.Model{}, nil, fieldErr("model_type", "missing: knee needs the model family (one of %s)", strings.Join(SupportedModelTypes(), ", "))
	}
	fam, ok := families[c.ModelType]
	if !ok {
		return simengine.Model{}, nil, fieldErr("model_type", "%q is not a family knee models (it models %s)", c.ModelType, strings.Join(SupportedModelTypes(), ", "))
	}
	if c.EncDec {
		return simengine.Model{}, nil, fieldErr("is_encoder_decoder", "knee models decoder-only transformers")
	}
	m := simengine.Model{Name: name}
	req := func(field string, p *int) (int, error) {
		if p == nil {
			return 0, fieldErr(field, "missing")
		}
		if *p <= 0 || *p > maxSize {
			return 0, fieldErr(field, "must be from 1 to %d, got %d", maxSize, *p)
		}
		return *p, nil
	}
	var err error
	for _, f := range []struct {
		field string
		p     *int
		dst   *int
	}{{"hidden_size", c.Hidden, &m.HiddenSize}, {"num_hidden_layers", c.Layers, &m.Layers}, {"num_attention_heads", c.Heads, &m.Heads},
		{"vocab_size", c.Vocab, &m.VocabSize}, {"max_position_embeddings", c.MaxPos, &m.MaxContext}, {"intermediate_size", c.FFN, &m.FFNSize}} {
		if *f.dst, err = req(f.field, f.p); err != nil {
			return simengine.Model{}, nil, err
		}
	}
	// Grouped-query attention; without num_key_value_heads every head
	// has its own (the transformers default).
	m.KVHeads = m.Heads
	if c.KVHeads != nil {
		if m.KVHeads, err = req("num_key_value_heads", c.KVHeads); err != nil {
			return simengine.Model{}, nil, err
		}
		if m.Heads%m.KVHeads != 0 {
			return simengine.Model{}, nil, fieldErr("num_key_value_heads", "%d does not divide num_attention_heads (%d)", m.KVHeads, m.Heads)
		}
	}
	if c.HeadDim != nil {
		if m.HeadDim, err = req("head_dim", c.HeadDim); err != nil {
			return simengine.Model{}, nil, err
		}
	} else {
		if m.HiddenSize%m.Heads != 0 {
			return simengine.Model{}, nil, fieldErr("head_dim", "missing, and hidden_size (%d) is not a multiple of num_attention_heads (%d)", m.HiddenSize, m.Heads)
		}
		m.HeadDim = m.HiddenSize / m.Heads
	}
	m.TiedEmbeddings = fam.tiedByDefault
	if c.Tied != nil {
		m.TiedEmbeddings = *c.Tied
	}
	if err := attention(&m, c, &notes); err != nil {
		return simengine.Model{}, nil, err
	}
	if err := mlp(&m, c, &notes); err != nil {
		return simengine.Model{}, nil, err
	}
	if m.WeightPrecision, err = weightPrecision(c, &notes); err != nil {
		return simengine.Model{}, nil, err
	}
	m.WeightBlockSize = weightBlockSize(c, m.WeightPrecision)
	// What vLLM computes in: the checkpoint's FP16, else BF16.
	served := m.ActivationPrecision()
	if activationDtype(c) == "fp16" {
		served = "fp16"
	}
	if m.WeightPrecision == "mxfp4" {
		if m.Experts == 0 {
			return simengine.Model{}, nil, fieldErr("quantization_config.quant_method", "mxfp4 quantizes a mixture's experts, and this model has none")
		}
		// Everything but the experts stays in the served dtype (gpt-oss:
		// modules_to_not_convert lists attention, router, embeddings and
		// LM head).
		m.DenseWeightPrecision = served
	}
	// The KV cache in the served dtype, as vLLM's --kv-cache-dtype auto
	// keeps it.
	m.KVPrecision = served
	if err := m.Validate(); err != nil {
		return simengine.Model{}, nil, err
	}
	return m, notes, nil
}

// slidingWindow fills the sliding-window fields: which layers attend to
// only the last sliding_window tokens, from layer_types where the file
// lists them (gpt-oss, newer Gemma and Qwen files), else from the family's
// fixed pattern as transformers builds it (Gemma 2: every even layer;
// Gemma 3: all but every sliding_window_pattern-th; Mistral, Mixtral and
// Phi-3: every layer once sliding_window is set). Qwen2/3 files carry a
// sliding_window their use_sliding_window turns off.
func slidingWindow(m *simengine.Model, c config, listed int, notes *[]string) error {
	if c.Sliding == nil || *c.Sliding <= 0 || (c.UseSliding != nil && !*c.UseSliding) {
		if listed > 0 {
			*notes = append(*notes, "layer_types lists sliding-window layers but sliding_window is unset: they are simulated as full attention (an upper bound)")
		}
		return nil
	}
	w := *c.Sliding
	if w > maxSize {
		return fieldErr("sliding_window", "must be from 1 to %d, got %d", maxSize, w)
	}
	layers := listed
	if len(c.LayerTypes) == 0 {
		switch c.ModelType {
		case "gemma2":
			layers = (m.Layers + 1) / 2
		case "gemma3", "gemma3_text":
			every := 6 // transformers' Gemma3TextConfig default
			if c.SlidingEvery != nil && *c.SlidingEvery > 0 {
				every = *c.SlidingEvery
			}
			layers = m.Layers - m.Layers/every
		case "mistral", "mixtral", "phi3", "phimoe":
			layers = m.Layers
		}
	}
	if layers == 0 || w >= m.MaxContext {
		return nil // no windowed layer, or a window no context reaches
	}
	m.SlidingWindow, m.SlidingLayers = w, layers
	if layers == m.Layers {
		*notes = append(*notes, "every layer attends to a sliding window: attention reads at most the window, but the KV cache is taken as full attention's (an upper bound)")
	}
	return nil
}

// attention fills the latent-attention fields and refuses attention kinds
// knee has no model of.
func attention(m *simengine.Model, c config, notes *[]string) error {
	kinds := map[string]int{}
	for _, t := range c.LayerTypes {
		kinds[t]++
	}
	for t := range kinds {
		switch t {
		case "full_attention", "sliding_attention", "chunked_attention":
		default:
			return fieldErr("layer_types", "%q layers are not attention knee models (it models full, sliding-window and chunked attention)", t)
		}
	}
	if len(c.LayerTypes) > 0 && len(c.LayerTypes) != m.Layers {
		return fieldErr("layer_types", "lists %d layers where num_hidden_layers is %d", len(c.LayerTypes), m.Layers)
	}
	if kinds["chunked_attention"] > 0 || (c.ChunkSize != nil && *c.ChunkSize > 0) {
		*notes = append(*notes, "chunked attention layers are simulated as full attention: their KV cache and attention time are taken as the full context's (an upper bound)")
	}
	if err := slidingWindow(m, c, kinds["sliding_attention"], notes); err != nil {
		return err
	}
	if c.KVLoRA == nil || *c.KVLoRA == 0 {
		return nil
	}
	var err error
	if m.KVLoRARank, err = positive("kv_lora_rank", c.KVLoRA); err != nil {
		return err
	}
	rope, err := positive("qk_rope_head_dim", c.QKRope)
	if err != nil {
		return err
	}
	nope, err := positive("qk_nope_head_dim", c.QKNope)
	if err != nil {
		return err
	}
	if m.VHeadDim, err = positive("v_head_dim", c.VHead); err != nil {
		return err
	}
	if c.QLoRA != nil {
		if *c.QLoRA < 0 {
			return fieldErr("q_lora_rank", "must not be negative, got %d", *c.QLoRA)
		}
		m.QLoRARank = *c.QLoRA
	}
	// Latent attention caches one latent per token and layer, read by
	// every head: one KV "head" in vLLM's accounting.
	m.QKRopeHeadDim, m.HeadDim, m.KVHeads = rope, nope+rope, 1
	*notes = append(*notes, fmt.Sprintf("latent attention: %d + %d cached values per token and layer, whole on every GPU of the tensor-parallel group", m.KVLoRARank, rope))
	return nil
}

func positive(field string, p *int) (int, error) {
	if p == nil {
		return 0, fieldErr(field, "missing (latent attention needs it)")
	}
	if *p <= 0 || *p > maxSize {
		return 0, fieldErr(field, "must be from 1 to %d, got %d", maxSize, *p)
	}
	return *p, nil
}

// mlp fills the MLP and the mixture of experts.
func mlp(m *simengine.Model, c config, notes *[]string) error {
	if c.ModelType == "phi" {
		// Phi-1/2 run an ungated MLP (two matrices); knee's MLP is
		// gated (three): 2/3 of the width has the same weights and FLOPs.
		m.FFNSize = m.FFNSize * 2 / 3
		*notes = append(*notes, "an ungated MLP of intermediate_size n is modelled as a gated one of 2n/3 (same weights and FLOPs)")
	}
	expertsField, experts := "", 0
	for _, f := range []struct {
		field string
		p     *int
	}{{"num_local_experts", c.LocalExperts}, {"num_experts", c.NumExperts}, {"n_routed_experts", c.Routed}} {
		if f.p != nil && *f.p != 0 {
			expertsField, experts = f.field, *f.p
			break
		}
	}
	if experts == 0 {
		return nil
	}
	if experts < 0 || experts > maxSize {
		return fieldErr(expertsField, "must be from 1 to %d, got %d", maxSize, experts)
	}
	m.Experts = experts
	topK, topField := c.TopK, "num_experts_per_tok"
	if topK == nil {
		topK, topField = c.TopKOSS, "experts_per_token"
	}
	if topK == nil || *topK < 1 || *topK > experts {
		got := "missing"
		if topK != nil {
			got = fmt.Sprint(*topK)
		}
		return fieldErr(topField, "a mixture of %d experts needs 1 to %d experts per token, got %s", experts, experts, got)
	}
	m.ExpertsPerToken = *topK
	// Each expert's width: moe_intermediate_size where the family has a
	// separate dense width, else intermediate_size.
	m.ExpertFFNSize = m.FFNSize
	var err error
	if c.MoEFFN != nil {
		if m.ExpertFFNSize, err = positive("moe_intermediate_size", c.MoEFFN); err != nil {
			return err
		}
	}
	switch {
	case c.SharedFFN != nil && *c.SharedFFN > 0: // Qwen2-MoE
		if m.SharedExpertFFNSize, err = positive("shared_expert_intermediate_size", c.SharedFFN); err != nil {
			return err
		}
	case c.NShared != nil && *c.NShared > 0: // DeepSeek
		n, err := positive("n_shared_experts", c.NShared)
		if err != nil {
			return err
		}
		m.SharedExpertFFNSize = min(n*m.ExpertFFNSize, maxSize)
	case strings.HasPrefix(c.ModelType, "llama4"): // one shared expert of the routed ones' width
		m.SharedExpertFFNSize = m.ExpertFFNSize
	}
	if c.FFNMLP != nil && *c.FFNMLP > 0 { // Llama 4's dense layers
		if m.FFNSize, err = positive("intermediate_size_mlp", c.FFNMLP); err != nil {
			return err
		}
	}
	moeLayers := moeLayerCount(c, m.Layers)
	if moeLayers < 1 {
		return fieldErr("first_k_dense_replace", "leaves no layer with experts among %d", m.Layers)
	}
	m.DenseLayers = m.Layers - moeLayers
	return nil
}

// moeLayerCount counts the layers with experts by each family's rule.
func moeLayerCount(c config, layers int) int {
	isMoE := func(i int) bool { return true }
	switch {
	case c.FirstDense != nil || c.MoEFreq != nil: // DeepSeek
		first, freq := 0, 1
		if c.FirstDense != nil {
			first = *c.FirstDense
		}
		if c.MoEFreq != nil && *c.MoEFreq > 0 {
			freq = *c.MoEFreq
		}
		isMoE = func(i int) bool { return i >= first && i%freq == 0 }
	case c.Interleave != nil && *c.Interleave > 0: // Llama 4
		step := *c.Interleave
		isMoE = func(i int) bool { return (i+1)%step == 0 }
	case c.SparseStep != nil || len(c.MLPOnly) > 0: // Qwen-MoE
		step := 1
		if c.SparseStep != nil && *c.SparseStep > 0 {
			step = *c.SparseStep
		}
		only := map[int]bool{}
		for _, l := range c.MLPOnly {
			only[l] = true
		}
		isMoE = func(i int) bool { return !only[i] && (i+1)%step == 0 }
	}
	n := 0
	for i := 0; i < layers; i++ {
		if isMoE(i) {
			n++
		}
	}
	return n
}

// activationDtype maps torch_dtype (dtype in newer files) to knee's name.
func activationDtype(c config) string {
	d := c.TorchDtype
	if d == "" {
		d = c.Dtype
	}
	switch strings.ToLower(strings.TrimPrefix(d, "torch.")) {
	case "float16", "half":
		return "fp16"
	case "":
		return ""
	}
	// bfloat16, and float32 checkpoints, which vLLM serves in 16-bit.
	return "bf16"
}

// quantConfig holds the quantization_config fields the methods use.
type quantConfig struct {
	Method    string `json:"quant_method"`
	Bits      *int   `json:"bits"`
	WBit      *int   `json:"w_bit"`
	Load4     bool   `json:"load_in_4bit"`
	Load8     bool   `json:"load_in_8bit"`
	QuantAlgo string `json:"quant_algo"`
	// WeightBlockSize is block-scaled FP8's [rows, columns] of weights
	// sharing one scale (DeepSeek-V3, Qwen3 FP8: [128, 128]).
	WeightBlockSize []int `json:"weight_block_size"`
	ConfigGroups    map[string]struct {
		Weights *struct {
			NumBits int    `json:"num_bits"`
			Type    string `json:"type"`
		} `json:"weights"`
	} `json:"config_groups"`
}

// weightBlockSize is the side of the blocks of FP8 weights that share a
// scale (quantization_config.weight_block_size of the fp8 method; the
// larger side if they are not square), 0 for per-tensor or per-channel
// scales and other precisions.
func weightBlockSize(c config, precision string) int {
	var q quantConfig
	if precision != "fp8" || json.Unmarshal(bytes.TrimSpace(c.Quant), &q) != nil || !strings.EqualFold(q.Method, "fp8") {
		return 0
	}
	n := 0
	for _, b := range q.WeightBlockSize {
		n = max(n, b)
	}
	return n
}

// weightPrecision is the weights' storage precision: the quantization's
// when there is one, else the activation dtype.
func weightPrecision(c config, notes *[]string) (string, error) {
	act := activationDtype(c)
	if act == "" {
		act = "bf16"
		*notes = append(*notes, "no torch_dtype: weights taken as BF16")
	}
	raw := bytes.TrimSpace(c.Quant)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return act, nil
	}
	var q quantConfig
	if err := json.Unmarshal(raw, &q); err != nil {
		return "", fieldErr("quantization_config", "not an object knee can read: %v", err)
	}
	bits := func(n int, field string) (string, error) {
		switch n {
		case 8:
			return "int8", nil
		case 4:
			return "int4", nil
		}
		return "", fieldErr(field, "%d-bit weights: knee models 4- and 8-bit", n)
	}
	switch m := strings.ToLower(q.Method); m {
	case "fp8", "fbgemm_fp8":
		return "fp8", nil
	case "mxfp4":
		// The experts only (see the caller): vLLM's MXFP4 method
		// quantizes fused-MoE layers and runs linear layers unquantized.
		return "mxfp4", nil
	case "awq", "gptq", "awq_marlin", "gptq_marlin":
		n, field := 0, "quantization_config.bits"
		switch {
		case q.Bits != nil:
			n = *q.Bits
		case q.WBit != nil:
			n, field = *q.WBit, "quantization_config.w_bit"
		default:
			return "", fieldErr(field, "missing: the %s weights' width", m)
		}
		return bits(n, field)
	case "bitsandbytes":
		switch {
		case q.Load4:
			return "int4", nil
		case q.Load8:
			return "int8", nil
		}
		return "", fieldErr("quantization_config.load_in_4bit", "bitsandbytes without load_in_4bit or load_in_8bit")
	case "modelopt":
		switch strings.ToUpper(q.QuantAlgo) {
		case "FP8":
			return "fp8", nil
		case "NVFP4":
			return "fp4", nil
		}
		return "", fieldErr("quantization_config.quant_algo", "%q: knee models FP8 and NVFP4", q.QuantAlgo)
	case "compressed-tensors":
		for _, g := range q.ConfigGroups {
			if g.Weights == nil {
				continue
			}
			switch w := g.Weights; {
			case w.Type == "float" && w.NumBits == 8:
				return "fp8", nil
			case w.Type == "float" && w.NumBits == 4:
				return "fp4", nil
			case w.Type == "int":
				return bits(w.NumBits, "quantization_config.config_groups.weights.num_bits")
			}
			return "", fieldErr("quantization_config.config_groups.weights", "%d-bit %s weights: knee models FP8, FP4 and 4- or 8-bit integers", g.Weights.NumBits, g.Weights.Type)
		}
		return "", fieldErr("quantization_config.config_groups", "no group says its weights' type")
	case "":
		return "", fieldErr("quantization_config.quant_method", "missing")
	default:
		return "", fieldErr("quantization_config.quant_method", "%q is not a quantization knee models (fp8, mxfp4, awq, gptq, bitsandbytes, modelopt, compressed-tensors)", q.Method)
	}
}
