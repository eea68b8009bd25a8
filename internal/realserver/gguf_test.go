package realserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/workload"
)

// ggufFile is what a small independent reader (written from ggml's
// docs/gguf.md, not from the writer) finds in a file.
type ggufFile struct {
	version    uint32
	meta       map[string]any
	tensors    []tensorInfo
	dataOffset int
	raw        []byte
}

type tensorInfo struct {
	name   string
	dims   []uint64
	typ    uint32
	offset uint64
}

type reader struct {
	b   []byte
	pos int
}

func (r *reader) next(n int) []byte {
	if r.pos+n > len(r.b) {
		panic(fmt.Sprintf("read %d bytes at %d past the end (%d)", n, r.pos, len(r.b)))
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.next(4)) }
func (r *reader) u64() uint64 { return binary.LittleEndian.Uint64(r.next(8)) }
func (r *reader) str() string { return string(r.next(int(r.u64()))) }

func (r *reader) value(typ uint32) any {
	switch typ {
	case 4:
		return r.u32()
	case 5:
		return int32(r.u32())
	case 6:
		return math.Float32frombits(r.u32())
	case 7:
		return r.next(1)[0] == 1
	case 8:
		return r.str()
	case 10:
		return r.u64()
	case 9:
		et, n := r.u32(), r.u64()
		out := make([]any, n)
		for i := range out {
			out[i] = r.value(et)
		}
		return out
	}
	panic(fmt.Sprintf("value type %d", typ))
}

func readGGUF(t *testing.T, b []byte) (f ggufFile) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("malformed GGUF: %v", p)
		}
	}()
	r := &reader{b: b}
	if m := string(r.next(4)); m != "GGUF" {
		t.Fatalf("magic %q", m)
	}
	f.version = r.u32()
	nt, nkv := r.u64(), r.u64()
	f.meta = map[string]any{}
	for i := uint64(0); i < nkv; i++ {
		k := r.str()
		f.meta[k] = r.value(r.u32())
	}
	for i := uint64(0); i < nt; i++ {
		ti := tensorInfo{name: r.str()}
		nd := r.u32()
		for j := uint32(0); j < nd; j++ {
			ti.dims = append(ti.dims, r.u64())
		}
		ti.typ, ti.offset = r.u32(), r.u64()
		f.tensors = append(f.tensors, ti)
	}
	f.dataOffset = (r.pos + 31) / 32 * 32
	f.raw = b
	return f
}

func (f ggufFile) tensor(t *testing.T, name string) (tensorInfo, []byte) {
	t.Helper()
	for _, ti := range f.tensors {
		if ti.name == name {
			n := uint64(1)
			for _, d := range ti.dims {
				n *= d
			}
			size := n * 4
			if ti.typ == 1 {
				size = n * 2
			}
			start := uint64(f.dataOffset) + ti.offset
			return ti, f.raw[start : start+size]
		}
	}
	t.Fatalf("no tensor %s", name)
	return tensorInfo{}, nil
}

func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		return math.Float32frombits(sign) // the writer flushes subnormals
	case 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}

func TestFloat16(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-1, 0xbc00}, {-100, 0xd640}, {0.5, 0x3800}, {65504, 0x7bff}, {1e6, 0x7c00},
		{1 + 1.0/2048, 0x3c00}, // halfway between 1 and the next half: rounds to even
		{1 + 3.0/2048, 0x3c02}, // halfway, odd below: rounds up
		{1e-8, 0},              // below the smallest normal half: flushed
	} {
		if got := float16Bits(c.in); got != c.want {
			t.Errorf("float16Bits(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestWriteGGUFLayout(t *testing.T) {
	var buf bytes.Buffer
	meta := []MetaKV{{"general.architecture", "llama"}, {"a.u32", uint32(7)}, {"a.list", []int32{-1, 2}}, {"a.b", true}}
	tensors := []Tensor{
		{Name: "odd", Dims: []uint64{3}, Type: TensorF32, Data: []float32{1, 2, 3}},           // 12 bytes: the next must be padded to 32
		{Name: "half", Dims: []uint64{2, 2}, Type: TensorF16, Data: []float32{1, -2, 0.5, 4}}, // ggml order: 2 rows of 2
	}
	n, err := WriteGGUF(&buf, meta, tensors)
	if err != nil {
		t.Fatal(err)
	}
	if int(n) != buf.Len() {
		t.Errorf("WriteGGUF says %d bytes, wrote %d", n, buf.Len())
	}
	f := readGGUF(t, buf.Bytes())
	if f.version != 3 {
		t.Errorf("version %d, want 3", f.version)
	}
	if f.meta["general.architecture"] != "llama" || f.meta["a.u32"] != uint32(7) || f.meta["a.b"] != true {
		t.Errorf("metadata %v", f.meta)
	}
	if l, _ := f.meta["a.list"].([]any); len(l) != 2 || l[0] != int32(-1) || l[1] != int32(2) {
		t.Errorf("a.list = %v", f.meta["a.list"])
	}
	if f.dataOffset%32 != 0 || f.tensors[0].offset != 0 || f.tensors[1].offset != 32 {
		t.Errorf("data at %d, tensor offsets %d and %d: want aligned to 32", f.dataOffset, f.tensors[0].offset, f.tensors[1].offset)
	}
	_, odd := f.tensor(t, "odd")
	if v := math.Float32frombits(binary.LittleEndian.Uint32(odd[8:])); v != 3 {
		t.Errorf("odd[2] = %g", v)
	}
	_, half := f.tensor(t, "half")
	for i, want := range []float32{1, -2, 0.5, 4} {
		if got := halfToFloat(binary.LittleEndian.Uint16(half[2*i:])); got != want {
			t.Errorf("half[%d] = %g, want %g", i, got, want)
		}
	}
	if want := f.dataOffset + 32 + 8 + 24; buf.Len() != want {
		t.Errorf("file is %d bytes, want %d (data padded to the alignment)", buf.Len(), want)
	}
	if _, err := WriteGGUF(&bytes.Buffer{}, nil, []Tensor{{Name: "short", Dims: []uint64{4}, Data: []float32{1}}}); err == nil {
		t.Error("a tensor with fewer values than its dims: no error")
	}
}

// TestLlamaModel checks the written model against what llama.cpp's llama
// loader reads, and the two properties the integration tests rely on: every
// token it can sample is an ASCII word, and every other token's output row
// is pinned far below on the constant residual dimension.
func TestLlamaModel(t *testing.T) {
	cfg := DefaultModelConfig()
	cfg.Embed, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.FFN = 64, 2, 4, 2, 96
	var buf bytes.Buffer
	info, err := WriteLlamaModel(&buf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := readGGUF(t, buf.Bytes())
	for k, want := range map[string]any{
		"general.architecture": "llama", "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2",
		"llama.embedding_length": uint32(64), "llama.block_count": uint32(2), "llama.attention.head_count_kv": uint32(2),
		"tokenizer.ggml.eos_token_id": uint32(257), "llama.feed_forward_length": uint32(96), "tokenizer.ggml.add_bos_token": true,
	} {
		if f.meta[k] != want {
			t.Errorf("%s = %v, want %v", k, f.meta[k], want)
		}
	}
	tokens, _ := f.meta["tokenizer.ggml.tokens"].([]any)
	types, _ := f.meta["tokenizer.ggml.token_type"].([]any)
	merges, _ := f.meta["tokenizer.ggml.merges"].([]any)
	if len(tokens) != info.VocabSize || len(types) != len(tokens) || len(merges) != len(tokens)-258 {
		t.Fatalf("%d tokens, %d types, %d merges, info says vocab %d", len(tokens), len(types), len(merges), info.VocabSize)
	}
	if tokens[' '] != "\u0120" || tokens['a'] != "a" || tokens[257] != "</s>" || types[257] != typeControl || merges[0] != "t h" {
		t.Errorf("byte, special and first merge tokens: %q %q %q %v %q", tokens[' '], tokens['a'], tokens[257], types[257], merges[0])
	}
	if len(f.tensors) != 2+9*cfg.Layers+1 {
		t.Errorf("%d tensors", len(f.tensors))
	}
	ti, kData := f.tensor(t, "blk.1.attn_k.weight")
	if ti.dims[0] != 64 || ti.dims[1] != 32 || len(kData) != 64*32*2 {
		t.Errorf("attn_k dims %v (want [64 32]: 2 kv heads of 16)", ti.dims)
	}

	_, out := f.tensor(t, "output.weight")
	_, embed := f.tensor(t, "token_embd.weight")
	_, down := f.tensor(t, "blk.0.ffn_down.weight")
	d := 64
	at := func(b []byte, i int) float32 { return halfToFloat(binary.LittleEndian.Uint16(b[2*i:])) }
	for i := 0; i < 96; i++ {
		if at(down, i) != 0 {
			t.Fatalf("ffn_down writes residual dimension 0 (input %d)", i)
		}
	}
	sampleable := 0
	for tok := range tokens {
		if at(embed, tok*d) != 1 {
			t.Fatalf("token %d: embedding dimension 0 = %g, want 1", tok, at(embed, tok*d))
		}
		w0, rest := at(out, tok*d), 0.0
		for i := 1; i < d; i++ {
			rest += math.Abs(float64(at(out, tok*d+i)))
		}
		s := tokens[tok].(string)
		if w0 == 0 && rest > 0 {
			sampleable++
			if !isPlainWord(s) {
				t.Errorf("sampleable token %d %q is not \"Ġ\" and a lowercase word", tok, s)
			}
			continue
		}
		if w0 != -100 || rest != 0 {
			t.Errorf("token %d %q: output row (%g on dimension 0, %g elsewhere), want -100 and 0", tok, s, w0, rest)
		}
	}
	if sampleable != info.WordTokens || sampleable != len(words) {
		t.Errorf("%d sampleable tokens, info says %d, word list has %d", sampleable, info.WordTokens, len(words))
	}
}

func isPlainWord(tok string) bool {
	w, ok := strings.CutPrefix(tok, "\u0120")
	if !ok || w == "" {
		return false
	}
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// knee's own tokenizer.json reader (written from HuggingFace's format, not
// from this writer) reads the file, and counts as the merges say: words
// whose letters merge straight to the word are one token, with or without
// their space; others are not.
func TestTokenizerJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTokenizerJSON(&buf, DefaultModelConfig()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := workload.LoadHFTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	// " harbor" is not a word of the model: [Ġ h ar b or], the merges of
	// "ar" (from "are") and "or" (from "order") apply. " then" is, but
	// "en" (from "end") merges before "the"+"n" could: [Ġ th en].
	for text, want := range map[string]int{"the": 1, " the": 1, " the the": 2, " harbor": 5, " then": 3, "\n": 1, " of the": 2} {
		if got := tk.Count(text); got != want {
			t.Errorf("Count(%q) = %d, want %d", text, got, want)
		}
	}
	single := 0
	for _, w := range words {
		if tk.Count(" "+w) == 1 {
			single++
		}
	}
	if single < 100 {
		t.Errorf("%d of %d words are one token with their space; knee's prompts need a pool of them", single, len(words))
	}
	t.Logf("%d of %d words are one token", single, len(words))
}
