package workload

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Tokenizer turns text into token ids and back. Implementations are safe for
// concurrent use.
type Tokenizer interface {
	// Name is what the user asked for: an encoding name or the file path.
	Name() string
	Encode(s string) []int
	Decode(ids []int) string
	// Count is len(Encode(s)).
	Count(s string) int
}

// DefaultTokenizer is the encoding used when none is named: GPT-4's, a
// reasonable stand-in for modern 100k–150k-vocabulary BPE tokenizers.
const DefaultTokenizer = "cl100k_base"

// builtinEncodings are compiled into the binary by tiktoken-go-loader.
var builtinEncodings = []string{"cl100k_base", "o200k_base"}

// BuiltinTokenizers lists the encoding names LoadTokenizer knows without a
// file (for help text and error messages).
func BuiltinTokenizers() []string { return append([]string(nil), builtinEncodings...) }

var (
	tiktokenMu  sync.Mutex
	tiktokenMap = map[string]*tiktokenTokenizer{}
)

// LoadTokenizer returns a built-in encoding ("cl100k_base", "o200k_base";
// "" means DefaultTokenizer) or reads a HuggingFace tokenizer.json from the
// given path (byte-level BPE models such as GPT-2, Llama 3, Qwen 2).
// Nothing is fetched from the network. Built-in encodings are loaded once
// per process and shared.
func LoadTokenizer(nameOrPath string) (Tokenizer, error) {
	name := strings.TrimSpace(nameOrPath)
	if name == "" {
		name = DefaultTokenizer
	}
	for _, b := range builtinEncodings {
		if name == b {
			return loadTiktoken(name)
		}
	}
	st, err := os.Stat(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("tokenizer %q: no such built-in encoding or file; expected %s, or the path of a HuggingFace tokenizer.json", nameOrPath, strings.Join(builtinEncodings, ", "))
		}
		return nil, fmt.Errorf("tokenizer %q: %w", nameOrPath, err)
	}
	if st.IsDir() {
		// A model directory: the tokenizer.json inside it is what is meant.
		name = strings.TrimSuffix(name, "/") + "/tokenizer.json"
	}
	return LoadHFTokenizer(name)
}

func loadTiktoken(name string) (*tiktokenTokenizer, error) {
	tiktokenMu.Lock()
	defer tiktokenMu.Unlock()
	if t, ok := tiktokenMap[name]; ok {
		return t, nil
	}
	var pattern string
	var special map[string]int
	switch name {
	case "cl100k_base":
		pattern = patCL100K
		special = map[string]int{"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
	case "o200k_base":
		pattern = patO200K
		special = map[string]int{"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
	}
	ranks, err := builtinRanks(name)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %q: loading built-in encoding: %w", name, err)
	}
	split, err := newSplitter(pattern)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %q: %w", name, err)
	}
	maxID := 0
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	for _, id := range special {
		maxID = max(maxID, id)
	}
	decoder := make([]string, maxID+1)
	for tok, id := range ranks {
		decoder[id] = tok
	}
	for tok, id := range special {
		decoder[id] = tok
	}
	t := &tiktokenTokenizer{name: name, split: split, model: &rankBPE{ranks: ranks}, decoder: decoder}
	tiktokenMap[name] = t
	return t, nil
}

// tiktokenTokenizer is a built-in tiktoken encoding. It encodes with this
// package's scanner and BPE (checked against tiktoken-go in the tests,
// which is ~20x slower because of its backtracking regexp engine).
type tiktokenTokenizer struct {
	name    string
	split   splitter
	model   bpeModel
	cache   pieceCache
	decoder []string // id -> bytes
}

func (t *tiktokenTokenizer) Name() string { return t.name }

// Encode treats special-token text such as "<|endoftext|>" as ordinary text
// (tiktoken's encode_ordinary): a prompt is user content, and servers apply
// their own templates.
func (t *tiktokenTokenizer) Encode(s string) []int {
	out := make([]int, 0, len(s)/4+1)
	t.split.split(s, func(a, b int) {
		out = cachedEncode(&t.cache, t.model, s[a:b], out)
	})
	return out
}

func (t *tiktokenTokenizer) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && id < len(t.decoder) {
			b.WriteString(t.decoder[id])
		}
	}
	return b.String()
}

func (t *tiktokenTokenizer) Count(s string) int { return len(t.Encode(s)) }
