package realserver

import (
	"encoding/json"
	"io"
)

// The vocabulary is byte-level BPE, GPT-2 style ("gpt2" tokenizer model in
// GGUF, pre-tokenizer "gpt-2"), so the model ships a tokenizer.json that
// knee's --tokenizer reads, as real models do: prompts can then be exact in
// the server's own tokens. Tokens, in id order:
//
//   - the 256 bytes, each as GPT-2's printable stand-in character (space is
//     "Ġ"): any text tokenizes;
//   - <s> and </s>, control tokens (BOS, EOS);
//   - one token per merge: for every word its letter prefixes ("t"+"h",
//     "th"+"e", ...), all two-letter merges first, then all three-letter,
//     and so on; then "Ġ"+word for every word.
//
// Merges apply lowest rank first, so a word whose letters merge on the way
// into another word's prefix does not end as one token (it stays two or
// three): both sides run the same algorithm on the same merges, so they
// agree on every count, and knee's prompt builder keeps only the words that
// are one token. Only the whole "Ġword" tokens are ever sampled (see
// WriteLlamaModel): every output token is an ASCII word with its leading
// space.
const (
	bpeSpace = "\u0120" // "Ġ": GPT-2's stand-in for the space byte
	tokBOS   = 256
	tokEOS   = 257
)

// Token types (llama_token_type).
const (
	typeNormal  int32 = 1
	typeControl int32 = 3
)

type vocab struct {
	tokens []string
	types  []int32
	merges []string // "left right", in rank order
	word   []bool   // a whole "Ġword" token: the only ones sampled
}

// byteChars is GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for
// themselves, the others map to U+0100 onwards in byte order.
func byteChars() [256]string {
	var out [256]string
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			out[b] = string(rune(b))
		} else {
			out[b] = string(next)
			next++
		}
	}
	return out
}

func buildVocab(wordCount int) vocab {
	var v vocab
	id := map[string]int{}
	add := func(tok string, typ int32) {
		id[tok] = len(v.tokens)
		v.tokens = append(v.tokens, tok)
		v.types = append(v.types, typ)
		v.word = append(v.word, false)
	}
	for _, c := range byteChars() {
		add(c, typeNormal)
	}
	add("<s>", typeControl)
	add("</s>", typeControl)
	ws := words
	if wordCount < len(ws) {
		ws = ws[:wordCount]
	}
	merge := func(left, right string) {
		if _, ok := id[left+right]; ok {
			return
		}
		v.merges = append(v.merges, left+" "+right)
		add(left+right, typeNormal)
	}
	longest := 0
	for _, w := range ws {
		longest = max(longest, len(w))
	}
	for n := 2; n <= longest; n++ {
		for _, w := range ws {
			if len(w) >= n {
				merge(w[:n-1], w[n-1:n])
			}
		}
	}
	for _, w := range ws {
		merge(bpeSpace, w)
		v.word[id[bpeSpace+w]] = true
	}
	return v
}

// WriteTokenizerJSON writes the model's vocabulary as a HuggingFace
// tokenizer.json (byte-level BPE with GPT-2's pre-tokenizer regex, no
// normalizer), the file a model repository ships beside its weights.
func WriteTokenizerJSON(w io.Writer, cfg ModelConfig) error {
	v := buildVocab(cfg.WordCount)
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	ids := make(map[string]int, len(v.tokens))
	var specials []added
	for i, t := range v.tokens {
		if v.types[i] == typeControl {
			specials = append(specials, added{ID: i, Content: t, Special: true})
			continue
		}
		ids[t] = i
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	file := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   specials,
		"normalizer":     nil,
		"pre_tokenizer":  byteLevel,
		"post_processor": nil,
		"decoder":        byteLevel,
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": ids, "merges": v.merges,
		},
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(file)
}
