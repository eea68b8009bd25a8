package workload

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
)

// Synthetic prompts are runs of words that are each exactly one token with
// a leading space (" harbor", " quiet", ...). Every tokenizer handled here
// pre-tokenises " word" as its own piece, so a run of n such words is n
// tokens and the boundaries cannot merge; the count is still verified with
// a full Encode and adjusted if a tokenizer disagrees. The first word of a
// prompt comes from a second pool of words that are one token without the
// leading space, so prompts do not start with a space.

// vocabLister is implemented by this package's tokenizers so the word pool
// can come from the tokenizer's own vocabulary (raw bytes of each token).
type vocabLister interface {
	vocab(f func(raw string))
}

func (t *tiktokenTokenizer) vocab(f func(string)) {
	for _, tok := range t.decoder {
		f(tok)
	}
}

func (t *hfTokenizer) vocab(f func(string)) {
	for _, tok := range t.decoder {
		f(tok)
	}
}

// fallbackWords seed the pool for a Tokenizer that cannot list its vocab.
var fallbackWords = strings.Fields(`the of and to in is it that for on with as was at by
from this have not are but or be an they which one you had all were her she there
would their we him been has when who will more no if out so said what up its about
into than them can only other new some could time these two may then do first any
my now such like our over man me even most made after also did many before must
through back years where much your way well down should because each just those
people how too little state good very make world still own see men work long get
here between both life being under never day same another know while last might us
great old year off come since against go came right used take three`)

const (
	minWordLen = 3
	maxWordLen = 12
	// maxPoolWords bounds the pool: 4,096 words give 4096^k distinct
	// k-word prompts (collisions are negligible from k = 3), while keeping
	// the tokenizer's maps for those words hot in the CPU cache, which made
	// verification ~2x faster than drawing from all ~50k vocab words.
	maxPoolWords = 4096
)

// wordPools holds the single-token words of one tokenizer.
type wordPools struct {
	words []string // each " word", one token
	first []string // each "word", one token at the start of a text
}

func isLowerWord(s string) bool {
	if len(s) < minWordLen || len(s) > maxWordLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

func buildWordPools(tk Tokenizer) (*wordPools, error) {
	seen := map[string]bool{}
	var cands []string
	add := func(w string) {
		if isLowerWord(w) && !seen[w] {
			seen[w] = true
			cands = append(cands, w)
		}
	}
	if v, ok := tk.(vocabLister); ok {
		v.vocab(func(raw string) {
			if len(raw) > 1 && raw[0] == ' ' {
				add(raw[1:])
			}
		})
	}
	for _, w := range fallbackWords {
		add(w)
	}
	sort.Strings(cands) // vocab order may come from a map; pools must be deterministic
	p := &wordPools{}
	// Spread over the alphabetical list rather than taking its head, so
	// the words vary; a stride over twice the cap leaves room for rejects.
	stride := max(1, len(cands)/(2*maxPoolWords))
	for k := 0; k < len(cands) && len(p.words) < maxPoolWords; k += stride {
		w := cands[k]
		if tk.Count(" "+w) == 1 {
			p.words = append(p.words, " "+w)
			// "a b" must stay [a][ b]: checked once here with a fixed partner.
			if tk.Count(w) == 1 && tk.Count(w+p.words[0]) == 2 {
				p.first = append(p.first, w)
			}
		}
	}
	if len(p.words) < 2 {
		return nil, fmt.Errorf("tokenizer %q has %d single-token words (a space then %d–%d lowercase letters); at least 2 are needed to synthesise prompts", tk.Name(), len(p.words), minWordLen, maxWordLen)
	}
	return p, nil
}

// promptBuilder makes prompts of an exact token count for one tokenizer and
// run. It is immutable after construction and safe for concurrent use.
type promptBuilder struct {
	tk           Tokenizer
	pools        *wordPools
	seed         uint64
	prefixTokens int
	// prefixes are the shared prefixes (system prompts) of the prefix
	// groups, each made on first use; group 0's up front, to check it.
	prefixes []*groupPrefix
}

// groupPrefix is one group's shared prefix: its text and, at ends[k], the
// byte length of its first k+1 tokens.
type groupPrefix struct {
	once sync.Once
	text string
	ends []int
}

func newPromptBuilder(tk Tokenizer, sharedPrefixTokens int, seed uint64) (*promptBuilder, error) {
	return newGroupedPromptBuilder(tk, sharedPrefixTokens, 1, seed)
}

// newGroupedPromptBuilder makes prompts that start with one of groups
// shared prefixes of prefixTokens tokens each.
func newGroupedPromptBuilder(tk Tokenizer, prefixTokens, groups int, seed uint64) (*promptBuilder, error) {
	pools, err := buildWordPools(tk)
	if err != nil {
		return nil, err
	}
	b := &promptBuilder{tk: tk, pools: pools, seed: seed, prefixTokens: prefixTokens}
	if prefixTokens > 0 {
		b.prefixes = make([]*groupPrefix, max(1, groups))
		for g := range b.prefixes {
			b.prefixes[g] = &groupPrefix{}
		}
		if p := b.prefix(0); tk.Count(p.text) != prefixTokens {
			return nil, fmt.Errorf("tokenizer %q: a shared prefix of %d tokens came out as %d tokens", tk.Name(), prefixTokens, tk.Count(p.text))
		}
	}
	return b, nil
}

// prefix returns group g's shared prefix (none without prefix groups).
func (b *promptBuilder) prefix(g int) *groupPrefix {
	if len(b.prefixes) == 0 {
		return &groupPrefix{}
	}
	p := b.prefixes[g]
	p.once.Do(func() {
		var sb strings.Builder
		rng := newRand(b.seed, streamPrefix) // group 0: the one shared prefix of old
		if g > 0 {
			rng = newRand(b.seed^mix64(uint64(g)), streamPrefix)
		}
		p.ends = make([]int, b.prefixTokens)
		for k := range b.prefixTokens {
			b.writeWord(&sb, rng, k == 0)
			p.ends[k] = sb.Len()
		}
		p.text = sb.String()
	})
	return p
}

func (b *promptBuilder) writeWord(sb *strings.Builder, rng *rand.Rand, first bool) {
	if first && len(b.pools.first) > 0 {
		sb.WriteString(b.pools.first[rng.IntN(len(b.pools.first))])
		return
	}
	sb.WriteString(b.pools.words[rng.IntN(len(b.pools.words))])
}

// build returns a prompt of n tokens (n >= 1) and its verified token
// count, which is n unless the tokenizer defeats every adjustment. The
// words after the shared prefix are drawn from rng, so they differ per
// request. If n is at most the prefix length the prompt is the prefix's
// first n tokens.
func (b *promptBuilder) build(n int, rng *rand.Rand) (string, int) {
	return b.buildInGroup(n, 0, rng)
}

// buildInGroup is build with prefix group g's shared prefix.
func (b *promptBuilder) buildInGroup(n, g int, rng *rand.Rand) (string, int) {
	p := b.prefix(g)
	k := len(p.ends)
	if n <= k {
		text := p.text[:p.ends[n-1]]
		return text, b.tk.Count(text)
	}
	var sb strings.Builder
	sb.Grow(len(p.text) + (n-k)*8)
	sb.WriteString(p.text)
	// ends[j] is the byte length after the j-th unique word, for trimming.
	ends := make([]int, 0, n-k+8)
	for j := 0; j < n-k; j++ {
		b.writeWord(&sb, rng, k == 0 && j == 0)
		ends = append(ends, sb.Len())
	}
	return b.fit(sb.String(), ends, n, rng)
}

// fit makes text exactly n tokens, where ends[j] is the byte length after
// its j-th trailing word (the words that may go), drawing any extra words
// from rng; it returns the text and its verified count.
func (b *promptBuilder) fit(text string, ends []int, n int, rng *rand.Rand) (string, int) {
	got := b.tk.Count(text)
	// Adjust until exact: append words when short, drop trailing words
	// when long. Re-encoding after each change catches merges across the
	// new boundary. Bounded, so a pathological tokenizer cannot loop.
	for tries := 0; got != n && tries < 32; tries++ {
		if got < n {
			var more strings.Builder
			more.WriteString(text)
			for range n - got {
				b.writeWord(&more, rng, false)
				ends = append(ends, more.Len())
			}
			text = more.String()
		} else {
			drop := min(got-n, len(ends)-1)
			if drop <= 0 {
				break
			}
			ends = ends[:len(ends)-drop]
			text = text[:ends[len(ends)-1]]
		}
		got = b.tk.Count(text)
	}
	return text, got
}
