package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
)

// maxTokenizerBytes bounds a tokenizer.json: the largest vocabularies
// make files of tens of MB.
const maxTokenizerBytes = 256 << 20

// LoadHFTokenizer reads a HuggingFace tokenizer.json whose model is
// byte-level BPE: GPT-2, Llama 3, Qwen 2 and the many models built the
// same way. Supported pieces of the file:
//
//   - model: type BPE with vocab, merges (as "a b" strings or [a, b]
//     pairs) and ignore_merges;
//   - pre_tokenizer: ByteLevel (add_prefix_space, use_regex), Split (Regex
//     or String pattern; behaviour Isolated or Removed; invert false),
//     Digits, and Sequence of those; a ByteLevel stage is required;
//   - normalizer: none, or NFC (treated as identity: text is assumed to be
//     NFC already, which holds for the ASCII prompts knee synthesises);
//   - added_tokens: matched literally before pre-tokenisation.
//
// Post-processors (BOS insertion) are ignored: Encode counts the tokens of
// the text itself, which is what a prompt length means here.
// Anything else (SentencePiece/Metaspace models, WordPiece, Unigram)
// is an error naming what was found.
func LoadHFTokenizer(path string) (Tokenizer, error) {
	data, err := badinput.ReadFile(path, maxTokenizerBytes, "a HuggingFace tokenizer.json")
	if err != nil {
		return nil, fmt.Errorf("tokenizer %q: %w", path, err)
	}
	t, err := parseHFTokenizer(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %q: %w", path, err)
	}
	t.name = path
	return t, nil
}

type hfFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
	Normalizer   *hfComponent    `json:"normalizer"`
	PreTokenizer *hfComponent    `json:"pre_tokenizer"`
	Model        json.RawMessage `json:"model"`
}

// hfComponent holds the fields of every normalizer/pre-tokenizer type used
// here; unknown fields are ignored.
type hfComponent struct {
	Type           string         `json:"type"`
	Pretokenizers  []*hfComponent `json:"pretokenizers"`
	Normalizers    []*hfComponent `json:"normalizers"`
	AddPrefixSpace bool           `json:"add_prefix_space"`
	UseRegex       *bool          `json:"use_regex"`
	Pattern        struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior         string `json:"behavior"`
	Invert           bool   `json:"invert"`
	IndividualDigits bool   `json:"individual_digits"`
}

type hfModel struct {
	Type         string          `json:"type"`
	Vocab        map[string]int  `json:"vocab"`
	Merges       json.RawMessage `json:"merges"`
	IgnoreMerges bool            `json:"ignore_merges"`
}

// preStage is one pre-tokenisation step over a list of pieces.
type preStage func(pieces []string) []string

type hfTokenizer struct {
	name    string
	added   *regexp.Regexp // nil when there are no added tokens
	addedID map[string]int
	stages  []preStage
	model   *mergeBPE
	cache   pieceCache
	decoder []string // id -> raw bytes (added tokens: their content)
}

func parseHFTokenizer(data []byte) (*hfTokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	if len(f.Model) == 0 {
		return nil, fmt.Errorf("not a tokenizer.json: no \"model\" object")
	}
	var m hfModel
	if err := json.Unmarshal(f.Model, &m); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if m.Type != "" && m.Type != "BPE" {
		return nil, fmt.Errorf("model type %q is not supported; only byte-level BPE tokenizers (GPT-2, Llama 3, Qwen 2 style) are", m.Type)
	}
	if len(m.Vocab) == 0 {
		return nil, fmt.Errorf("model has an empty vocab")
	}
	if err := checkNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	t := &hfTokenizer{}
	byteLevel := false
	stages, err := buildPreTokenizer(f.PreTokenizer, &byteLevel)
	if err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, fmt.Errorf("pre_tokenizer has no ByteLevel stage; only byte-level BPE tokenizers (GPT-2, Llama 3, Qwen 2 style) are supported")
	}
	t.stages = stages

	// Vocab keys are byte-level strings (each byte shown as a printable
	// rune); convert them to raw bytes once so encoding never builds them.
	maxID := 0
	for _, id := range m.Vocab {
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		maxID = max(maxID, a.ID)
	}
	if maxID > 10_000_000 {
		return nil, fmt.Errorf("token id %d is implausibly large", maxID)
	}
	t.decoder = make([]string, maxID+1)
	model := &mergeBPE{ignoreMerges: m.IgnoreMerges, pairs: map[uint64]merge{}, wholeID: make(map[string]int, len(m.Vocab))}
	for i := range model.byteID {
		model.byteID[i] = -1
	}
	for tok, id := range m.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("vocab entry %q has negative id %d", tok, id)
		}
		raw, ok := byteLevelDecode(tok)
		if !ok {
			continue // not a byte-level token (rare extras); unreachable by encoding
		}
		t.decoder[id] = raw
		model.wholeID[raw] = id
		if len(raw) == 1 {
			model.byteID[raw[0]] = id
		}
	}
	for b, id := range model.byteID {
		if id < 0 {
			return nil, fmt.Errorf("vocab lacks the byte-level token for byte 0x%02x (%q); not a byte-level BPE vocabulary", b, string(byteToRune[b]))
		}
	}
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	for rank, mg := range merges {
		a, okA := m.Vocab[mg[0]]
		b, okB := m.Vocab[mg[1]]
		c, okC := m.Vocab[mg[0]+mg[1]]
		if !okA || !okB || !okC {
			return nil, fmt.Errorf("merge %d (%q %q) names a token missing from the vocab", rank, mg[0], mg[1])
		}
		key := uint64(a)<<32 | uint64(b)
		if _, dup := model.pairs[key]; !dup {
			model.pairs[key] = merge{rank: rank, id: c}
		}
	}
	t.model = model

	if len(f.AddedTokens) > 0 {
		t.addedID = map[string]int{}
		var alts []string
		for _, a := range f.AddedTokens {
			if a.Content == "" {
				continue
			}
			t.addedID[a.Content] = a.ID
			t.decoder[a.ID] = a.Content
			alts = append(alts, a.Content)
		}
		// Longest first, so that at one position the longest token wins.
		sort.Slice(alts, func(i, j int) bool { return len(alts[i]) > len(alts[j]) })
		for i := range alts {
			alts[i] = regexp.QuoteMeta(alts[i])
		}
		if len(alts) > 0 {
			t.added = regexp.MustCompile(strings.Join(alts, "|"))
		}
	}
	return t, nil
}

func checkNormalizer(n *hfComponent) error {
	if n == nil {
		return nil
	}
	switch n.Type {
	case "NFC":
		return nil
	case "Sequence":
		for _, c := range n.Normalizers {
			if err := checkNormalizer(c); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("normalizer %q is not supported (supported: none, NFC)", n.Type)
}

func buildPreTokenizer(p *hfComponent, byteLevel *bool) ([]preStage, error) {
	if p == nil {
		return nil, nil
	}
	switch p.Type {
	case "Sequence":
		var out []preStage
		for _, c := range p.Pretokenizers {
			s, err := buildPreTokenizer(c, byteLevel)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		return out, nil
	case "ByteLevel":
		*byteLevel = true
		useRegex := p.UseRegex == nil || *p.UseRegex // HF's default is true
		var sp splitter
		if useRegex {
			sp, _ = newSplitter(patGPT2)
		}
		addPrefix := p.AddPrefixSpace
		return []preStage{func(pieces []string) []string {
			out := pieces[:0:0]
			for _, piece := range pieces {
				if addPrefix && !strings.HasPrefix(piece, " ") {
					piece = " " + piece
				}
				if sp == nil {
					out = append(out, piece)
					continue
				}
				sp.split(piece, func(a, b int) { out = append(out, piece[a:b]) })
			}
			return out
		}}, nil
	case "Split":
		if p.Invert {
			return nil, fmt.Errorf("pre_tokenizer Split with invert=true is not supported")
		}
		var sp splitter
		switch {
		case p.Pattern.Regex != nil:
			var err error
			if sp, err = newSplitter(*p.Pattern.Regex); err != nil {
				return nil, fmt.Errorf("pre_tokenizer Split pattern %q: %w", *p.Pattern.Regex, err)
			}
		case p.Pattern.String != nil && *p.Pattern.String != "":
			sp, _ = newSplitter(regexp.QuoteMeta(*p.Pattern.String))
		default:
			return nil, fmt.Errorf("pre_tokenizer Split has no pattern")
		}
		var keepMatches bool
		switch p.Behavior {
		case "Isolated":
			keepMatches = true
		case "Removed":
		default:
			return nil, fmt.Errorf("pre_tokenizer Split behavior %q is not supported (supported: Isolated, Removed)", p.Behavior)
		}
		return []preStage{func(pieces []string) []string {
			out := pieces[:0:0]
			for _, piece := range pieces {
				last := 0
				sp.split(piece, func(a, b int) {
					if a > last {
						out = append(out, piece[last:a])
					}
					if keepMatches && b > a {
						out = append(out, piece[a:b])
					}
					last = b
				})
				if last < len(piece) {
					out = append(out, piece[last:])
				}
			}
			return out
		}}, nil
	case "Digits":
		individual := p.IndividualDigits
		return []preStage{func(pieces []string) []string {
			out := pieces[:0:0]
			for _, piece := range pieces {
				start := 0
				for i := 0; i < len(piece); i++ {
					d := piece[i] >= '0' && piece[i] <= '9'
					if !d {
						continue
					}
					if i > start {
						out = append(out, piece[start:i])
					}
					j := i + 1
					for !individual && j < len(piece) && piece[j] >= '0' && piece[j] <= '9' {
						j++
					}
					out = append(out, piece[i:j])
					start, i = j, j-1
				}
				if start < len(piece) {
					out = append(out, piece[start:])
				}
			}
			return out
		}}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer %q is not supported (supported: ByteLevel, Split, Digits, Sequence)", p.Type)
}

func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var asStrings []string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		out := make([][2]string, len(asStrings))
		for i, s := range asStrings {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("merge %d %q: expected two tokens separated by a space", i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var asPairs [][]string
	if err := json.Unmarshal(raw, &asPairs); err != nil {
		return nil, fmt.Errorf("model.merges: expected a list of \"a b\" strings or [a, b] pairs: %w", err)
	}
	out := make([][2]string, len(asPairs))
	for i, p := range asPairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("merge %d: expected a pair, got %d items", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

func (t *hfTokenizer) Name() string { return t.name }

func (t *hfTokenizer) Encode(s string) []int {
	out := make([]int, 0, len(s)/4+1)
	if t.added == nil {
		return t.encodeText(s, out)
	}
	last := 0
	for _, loc := range t.added.FindAllStringIndex(s, -1) {
		out = t.encodeText(s[last:loc[0]], out)
		out = append(out, t.addedID[s[loc[0]:loc[1]]])
		last = loc[1]
	}
	return t.encodeText(s[last:], out)
}

func (t *hfTokenizer) encodeText(s string, out []int) []int {
	if s == "" {
		return out
	}
	pieces := []string{s}
	for _, st := range t.stages {
		pieces = st(pieces)
	}
	for _, p := range pieces {
		out = cachedEncode(&t.cache, t.model, p, out)
	}
	return out
}

func (t *hfTokenizer) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && id < len(t.decoder) {
			b.WriteString(t.decoder[id])
		}
	}
	return b.String()
}

func (t *hfTokenizer) Count(s string) int { return len(t.Encode(s)) }

// mergeBPE is HuggingFace's formulation: symbols start as single bytes and
// the adjacent pair with the lowest merge rank is replaced by its merged
// token until no listed pair remains.
type mergeBPE struct {
	byteID       [256]int
	pairs        map[uint64]merge
	wholeID      map[string]int // raw bytes -> id, for ignore_merges
	ignoreMerges bool
}

type merge struct{ rank, id int }

// whole is only certain with ignore_merges: otherwise the merges may
// segment even a piece that is itself in the vocab differently.
func (m *mergeBPE) whole(piece string) (int, bool) {
	if !m.ignoreMerges {
		return 0, false
	}
	id, ok := m.wholeID[piece]
	return id, ok
}

func (m *mergeBPE) encodePiece(piece string, out []int) []int {
	if m.ignoreMerges {
		if id, ok := m.wholeID[piece]; ok {
			return append(out, id)
		}
	}
	var stack [64]int
	syms := stack[:0]
	for i := 0; i < len(piece); i++ {
		syms = append(syms, m.byteID[piece[i]])
	}
	if len(piece) > longPieceBytes {
		parts := mergeLong(len(syms), func(a, b int) (int, bool) {
			mg, ok := m.pairs[uint64(syms[a])<<32|uint64(syms[b])]
			return mg.rank, ok
		}, func(a, b int) { syms[a] = m.pairs[uint64(syms[a])<<32|uint64(syms[b])].id })
		for _, k := range parts {
			out = append(out, syms[k])
		}
		return out
	}
	for len(syms) > 1 {
		best, bestK, bestID := math.MaxInt, -1, 0
		for k := 0; k+1 < len(syms); k++ {
			if mg, ok := m.pairs[uint64(syms[k])<<32|uint64(syms[k+1])]; ok && mg.rank < best {
				best, bestK, bestID = mg.rank, k, mg.id
			}
		}
		if bestK < 0 {
			break
		}
		syms[bestK] = bestID
		syms = append(syms[:bestK+1], syms[bestK+2:]...)
	}
	return append(out, syms...)
}

// byteToRune is GPT-2's bytes_to_unicode table: printable bytes map to
// themselves, the rest to runes from U+0100 upwards, so every byte has a
// visible, non-space stand-in in vocab files.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		printable := b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF
		if printable {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteLevelDecode maps a byte-level vocab string back to raw bytes.
func byteLevelDecode(tok string) (string, bool) {
	buf := make([]byte, 0, len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return "", false
		}
		buf = append(buf, b)
	}
	return string(buf), true
}

// byteLevelEncode is the inverse, used by tests and the tiny test file
// generator.
func byteLevelEncode(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		b.WriteRune(byteToRune[raw[i]])
	}
	return b.String()
}
