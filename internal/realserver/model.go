package realserver

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// ModelConfig shapes the random-weight llama model. The defaults (see
// DefaultModelConfig) decode hundreds of tokens per second on a CPU.
type ModelConfig struct {
	Seed      uint64
	Embed     int // embedding_length
	Layers    int // block_count
	Heads     int // attention.head_count
	KVHeads   int // attention.head_count_kv
	FFN       int // feed_forward_length
	Context   int // context_length: Ollama gives each parallel slot num_ctx of it
	WordCount int // how many whole-word tokens (the only ones it ever samples)
	// MatrixType stores the 2-D weights (norms are always F32).
	MatrixType TensorType
}

// DefaultModelConfig is the model CI serves: 21M parameters, about 5 ms a
// token alone on one core of a 2-core machine and 2x the tokens/s at 4 in
// parallel. Smaller models batch worse: per-sequence overhead outweighs the
// shared weight reads, and throughput stops growing before 4 sequences.
func DefaultModelConfig() ModelConfig {
	return ModelConfig{Seed: 1, Embed: 512, Layers: 6, Heads: 8, KVHeads: 8, FFN: 1408, Context: 32768, WordCount: len(words), MatrixType: TensorF16}
}

// ModelInfo describes a written model.
type ModelInfo struct {
	Parameters int64
	VocabSize  int
	WordTokens int // tokens the output layer lets it sample
	FileBytes  int64
}

func (m ModelInfo) String() string {
	return fmt.Sprintf("random-weight llama, %.2fM parameters, vocab %d (%d sampleable words), %.1f MiB GGUF",
		float64(m.Parameters)/1e6, m.VocabSize, m.WordTokens, float64(m.FileBytes)/(1<<20))
}

// WriteLlamaModel writes a llama-architecture GGUF with random weights,
// deterministic from cfg.Seed.
//
// How end-of-sequence never wins: dimension 0 of the residual stream is a
// constant. Every embedding has 1 there and the attention and FFN output
// projections never write to it, so after the final RMS norm it is always
// positive. The output layer gives every token that must not be sampled
// (EOS, BOS, byte tokens, word prefixes) weight
// -suppressWeight on that dimension and zero elsewhere; whole words get 0
// there and random weights elsewhere. Their logits sit hundreds below any
// word's, so no sampler (temperature, top-k, top-p, min-p) ever picks them
// and every output has exactly the requested length.
func WriteLlamaModel(w io.Writer, cfg ModelConfig) (ModelInfo, error) {
	if cfg.Embed%cfg.Heads != 0 || cfg.Heads%cfg.KVHeads != 0 || cfg.Layers < 1 || cfg.FFN < 1 {
		return ModelInfo{}, fmt.Errorf("model: embed %d must divide into %d heads and heads into %d kv heads", cfg.Embed, cfg.Heads, cfg.KVHeads)
	}
	v := buildVocab(cfg.WordCount)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b6e6565)) // "knee"
	d, ff, nv := uint64(cfg.Embed), uint64(cfg.FFN), uint64(len(v.tokens))
	kvDim := d / uint64(cfg.Heads) * uint64(cfg.KVHeads)

	normal := func(n uint64, std float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * std)
		}
		return out
	}
	ones := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// matrix is a weight of ggml shape [in, out]: out rows of in values.
	matrix := func(name string, in, out uint64) Tensor {
		return Tensor{Name: name, Dims: []uint64{in, out}, Type: cfg.MatrixType, Data: normal(in*out, 1/math.Sqrt(float64(in)))}
	}
	// keepDim0 stops a projection from writing residual dimension 0.
	keepDim0 := func(t Tensor) Tensor {
		in := t.Dims[0]
		for i := uint64(0); i < in; i++ {
			t.Data[i] = 0
		}
		return t
	}

	embed := normal(nv*d, 0.5)
	for t := uint64(0); t < nv; t++ {
		embed[t*d] = 1
	}
	// Word logits have a spread of a few units: random-looking text at the
	// server's default temperature, without one word taking over.
	const wordLogitStd = 3.0
	const suppressWeight = 100
	out := normal(nv*d, wordLogitStd/math.Sqrt(float64(d)))
	for t := uint64(0); t < nv; t++ {
		row := out[t*d : (t+1)*d]
		if v.word[t] {
			row[0] = 0
			continue
		}
		for i := range row {
			row[i] = 0
		}
		row[0] = -suppressWeight
	}

	tensors := []Tensor{
		{Name: "token_embd.weight", Dims: []uint64{d, nv}, Type: cfg.MatrixType, Data: embed},
	}
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		tensors = append(tensors,
			Tensor{Name: p + "attn_norm.weight", Dims: []uint64{d}, Type: TensorF32, Data: ones(d)},
			matrix(p+"attn_q.weight", d, d),
			matrix(p+"attn_k.weight", d, kvDim),
			matrix(p+"attn_v.weight", d, kvDim),
			keepDim0(matrix(p+"attn_output.weight", d, d)),
			Tensor{Name: p + "ffn_norm.weight", Dims: []uint64{d}, Type: TensorF32, Data: ones(d)},
			matrix(p+"ffn_gate.weight", d, ff),
			matrix(p+"ffn_up.weight", d, ff),
			keepDim0(matrix(p+"ffn_down.weight", ff, d)),
		)
	}
	tensors = append(tensors,
		Tensor{Name: "output_norm.weight", Dims: []uint64{d}, Type: TensorF32, Data: ones(d)},
		Tensor{Name: "output.weight", Dims: []uint64{d, nv}, Type: cfg.MatrixType, Data: out},
	)

	var params int64
	for _, t := range tensors {
		params += int64(t.elements())
	}
	wordTokens := 0
	for _, isWord := range v.word {
		if isWord {
			wordTokens++
		}
	}
	meta := []MetaKV{
		{"general.architecture", "llama"},
		{"general.name", "knee-random-llama"},
		{"general.file_type", uint32(cfg.MatrixType)}, // ALL_F32 = 0, MOSTLY_F16 = 1: the tensor type's number
		{"llama.context_length", uint32(cfg.Context)},
		{"llama.embedding_length", uint32(d)},
		{"llama.block_count", uint32(cfg.Layers)},
		{"llama.feed_forward_length", uint32(ff)},
		{"llama.rope.dimension_count", uint32(d / uint64(cfg.Heads))},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.attention.head_count", uint32(cfg.Heads)},
		{"llama.attention.head_count_kv", uint32(cfg.KVHeads)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.vocab_size", uint32(nv)},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "gpt-2"},
		{"tokenizer.ggml.tokens", v.tokens},
		{"tokenizer.ggml.token_type", v.types},
		{"tokenizer.ggml.merges", v.merges},
		{"tokenizer.ggml.bos_token_id", uint32(tokBOS)},
		{"tokenizer.ggml.eos_token_id", uint32(tokEOS)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}
	n, err := WriteGGUF(w, meta, tensors)
	if err != nil {
		return ModelInfo{}, err
	}
	return ModelInfo{Parameters: params, VocabSize: int(nv), WordTokens: wordTokens, FileBytes: n}, nil
}

// Modelfile makes Ollama serve model.gguf from the same folder. Ollama's
// default template passes the prompt through as it is; the model has no
// chat template to honour. The model never ends a reply by itself, so a
// request without max_tokens stops at num_predict rather than at the end
// of the context. One thread: on a small shared machine ggml's threads
// spin-wait for each other at every step and a busy core stalls them all;
// this model decodes faster on one.
const Modelfile = "FROM ./model.gguf\nPARAMETER num_predict 256\nPARAMETER num_thread 1\n"
