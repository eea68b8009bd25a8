package workload

import (
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// Pre-tokenisation splits text into pieces that BPE encodes independently.
// The well-known split patterns (tiktoken's cl100k_base and o200k_base,
// Llama 3's, Qwen 2's, GPT-2's) are hand-written scanners here: the same
// pattern run through a backtracking regexp engine costs ~2 µs per token,
// which made verifying a 1,000-token prompt take milliseconds. Each scanner
// reproduces the leftmost-first backtracking semantics of its pattern and is
// checked against regexp2 on the pattern itself (pretok_test.go, including
// a differential fuzz target). Unknown patterns fall back to regexp2.

// splitter calls emit with the [start,end) byte offsets of each match in s,
// in order. Bytes between matches are not emitted.
type splitter interface {
	split(s string, emit func(start, end int))
}

const (
	patCL100K = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patO200K  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen 2 differs from cl100k only in splitting digits one by one.
	patQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// GPT-2's, used by HF ByteLevel pre-tokenizers with use_regex=true.
	patGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// newSplitter returns a fast scanner for a known pattern, else regexp2.
func newSplitter(pattern string) (splitter, error) {
	switch pattern {
	case patCL100K:
		return cl100kSplitter{maxDigits: 3}, nil
	case patQwen2:
		return cl100kSplitter{maxDigits: 1}, nil
	case patO200K:
		return o200kSplitter{}, nil
	case patGPT2:
		return gpt2Splitter{}, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	return regexpSplitter{re}, nil
}

// regexpSplitter runs any pattern with regexp2, which reports rune offsets.
type regexpSplitter struct{ re *regexp2.Regexp }

func (r regexpSplitter) split(s string, emit func(start, end int)) {
	runes := []rune(s)
	if len(runes) == 0 {
		return
	}
	// byteAt[k] is the byte offset of rune k (invalid UTF-8 bytes became
	// U+FFFD, one rune each, so this stays aligned with s).
	byteAt := make([]int, len(runes)+1)
	off := 0
	for k := range runes {
		byteAt[k] = off
		_, w := utf8.DecodeRuneInString(s[off:])
		off += w
	}
	byteAt[len(runes)] = len(s)
	m, _ := r.re.FindRunesMatch(runes)
	for m != nil {
		emit(byteAt[m.Index], byteAt[m.Index+m.Length])
		m, _ = r.re.FindNextMatch(m)
	}
}

func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

// isSpace matches \s of regexp2 (and Oniguruma): unicode.IsSpace.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return r >= 0 && unicode.IsSpace(r)
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return r >= 0 && !isSpace(r) && !isLetter(r) && !isNumber(r) }

// isPrefix is [^\r\n\p{L}\p{N}] (note: spaces other than \r\n qualify).
func isPrefix(r rune) bool { return r >= 0 && !isCRLF(r) && !isLetter(r) && !isNumber(r) }

// contraction returns the length of 's|'t|'re|'ve|'m|'ll|'d at i
// (ASCII case-insensitive when fold), or 0.
func contraction(s string, i int, fold bool) int {
	if i >= len(s) || s[i] != '\'' || i+1 >= len(s) {
		return 0
	}
	lower := func(b byte) byte {
		if fold && 'A' <= b && b <= 'Z' {
			return b + 'a' - 'A'
		}
		return b
	}
	switch lower(s[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && lower(s[i+2]) == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && lower(s[i+2]) == 'l' {
			return 3
		}
	}
	return 0
}

// whitespace handles the trailing alternatives every pattern shares:
// [\s*[\r\n]+ |] \s+(?!\S) | \s+, at i where s[i] is whitespace.
func whitespace(s string, i int, crlfRule bool) int {
	j, lastCRLF := i, -1
	for j < len(s) {
		r, w := runeAt(s, j)
		if !isSpace(r) {
			break
		}
		if isCRLF(r) {
			lastCRLF = j
		}
		j += w
	}
	if crlfRule && lastCRLF >= 0 {
		return lastCRLF + 1 // \r and \n are one byte
	}
	if j == len(s) {
		return j
	}
	// \s+(?!\S): give back the last whitespace rune if the run holds two.
	_, first := runeAt(s, i)
	if i+first < j {
		_, lastW := utf8.DecodeLastRuneInString(s[:j])
		return j - lastW
	}
	return j
}

// otherRun is ` ?[^\s\p{L}\p{N}]+` followed by any runes in trail; returns
// the end or -1.
func otherRun(s string, i int, trail func(rune) bool) int {
	j := i
	if r, w := runeAt(s, j); r == ' ' {
		if r2, _ := runeAt(s, j+w); isOther(r2) {
			j += w
		}
	}
	r, w := runeAt(s, j)
	if !isOther(r) {
		return -1
	}
	for isOther(r) {
		j += w
		r, w = runeAt(s, j)
	}
	for trail != nil && trail(r) {
		j += w
		r, w = runeAt(s, j)
	}
	return j
}

type cl100kSplitter struct{ maxDigits int }

func (c cl100kSplitter) split(s string, emit func(start, end int)) {
	for i := 0; i < len(s); {
		end := c.next(s, i)
		emit(i, end)
		i = end
	}
}

func (c cl100kSplitter) next(s string, i int) int {
	if n := contraction(s, i, true); n > 0 {
		return i + n
	}
	r, w := runeAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	p := i
	if isPrefix(r) {
		if r2, _ := runeAt(s, i+w); isLetter(r2) {
			p = i + w
		}
	}
	if r2, _ := runeAt(s, p); isLetter(r2) {
		for {
			r2, w2 := runeAt(s, p)
			if !isLetter(r2) {
				return p
			}
			p += w2
		}
	}
	if isNumber(r) {
		j := i
		for k := 0; k < c.maxDigits; k++ {
			r2, w2 := runeAt(s, j)
			if !isNumber(r2) {
				break
			}
			j += w2
		}
		return j
	}
	if end := otherRun(s, i, isCRLF); end >= 0 {
		return end
	}
	if isSpace(r) {
		return whitespace(s, i, true)
	}
	return i + w // unreachable for valid input; keeps the scan moving
}

type gpt2Splitter struct{}

func (gpt2Splitter) split(s string, emit func(start, end int)) {
	for i := 0; i < len(s); {
		end := gpt2Next(s, i)
		emit(i, end)
		i = end
	}
}

func gpt2Next(s string, i int) int {
	if n := contraction(s, i, false); n > 0 {
		return i + n
	}
	r, w := runeAt(s, i)
	for _, class := range []func(rune) bool{isLetter, isNumber, isOther} {
		j := i
		if r == ' ' {
			if r2, _ := runeAt(s, i+w); class(r2) {
				j = i + w
			}
		}
		if r2, _ := runeAt(s, j); !class(r2) {
			continue
		}
		for {
			r2, w2 := runeAt(s, j)
			if !class(r2) {
				return j
			}
			j += w2
		}
	}
	if isSpace(r) {
		return whitespace(s, i, false)
	}
	return i + w
}

type o200kSplitter struct{}

func (o200kSplitter) split(s string, emit func(start, end int)) {
	for i := 0; i < len(s); {
		end := o200kNext(s, i)
		emit(i, end)
		i = end
	}
}

// upperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]; lowerish is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func upperish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return r >= 0 && (unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M))
}

func lowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return r >= 0 && (unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M))
}

func o200kNext(s string, i int) int {
	r, w := runeAt(s, i)
	starts := [2]int{-1, i} // with the optional prefix, then without
	if isPrefix(r) {
		starts[0] = i + w
	}
	// Alternative 1: prefix? upper* lower+ contraction?
	for _, p := range starts {
		if p < 0 {
			continue
		}
		if end := o200kWord(s, p, true); end >= 0 {
			return end
		}
	}
	// Alternative 2: prefix? upper+ lower* contraction?
	for _, p := range starts {
		if p < 0 {
			continue
		}
		if end := o200kWord(s, p, false); end >= 0 {
			return end
		}
	}
	if isNumber(r) {
		j := i
		for k := 0; k < 3; k++ {
			r2, w2 := runeAt(s, j)
			if !isNumber(r2) {
				break
			}
			j += w2
		}
		return j
	}
	if end := otherRun(s, i, func(r rune) bool { return isCRLF(r) || r == '/' }); end >= 0 {
		return end
	}
	if isSpace(r) {
		return whitespace(s, i, true)
	}
	return i + w
}

// o200kWord matches upper* lower+ (lowerRequired) or upper+ lower* from p,
// then an optional contraction, with the backtracking of a regexp engine:
// upper* is greedy and gives back runes until lower+ can match.
func o200kWord(s string, p int, lowerRequired bool) int {
	a := p
	lastLower := -1 // end of the last rune in [p,a) that is also lowerish
	for {
		r, w := runeAt(s, a)
		if !upperish(r) {
			break
		}
		a += w
		if lowerish(r) {
			lastLower = a
		}
	}
	end := -1
	if r, _ := runeAt(s, a); lowerish(r) {
		end = a
		for {
			r, w := runeAt(s, end)
			if !lowerish(r) {
				break
			}
			end += w
		}
	} else if lowerRequired {
		end = lastLower // upper* gives back down to the last lowerish rune
	} else if a > p {
		end = a
	}
	if end < 0 || (!lowerRequired && a == p) {
		return -1
	}
	return end + contraction(s, end, true)
}
