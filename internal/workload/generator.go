package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/knee-dev/knee/internal/simengine"
)

// Spec is everything a Generator needs. Seed makes the workload
// reproducible: use RandomSeed when the user gave none.
type Spec struct {
	// Input and Output are the prompt and completion length distributions
	// in tokens. With a dataset, Input is unused and Output only fills in
	// entries that carry no output length.
	Input, Output Dist
	// Dataset is the path of a JSONL prompt file or a ShareGPT JSON file
	// (see LoadDataset); empty means synthetic prompts.
	Dataset string
	// SharedPrefixTokens is the length of a prefix common to every synthetic
	// prompt of the run (0 = none). It counts toward the input length: an
	// input of 1024 with a shared prefix of 512 is 512 shared tokens then 512
	// unique ones; an input no longer than the prefix is the prefix's start.
	SharedPrefixTokens int
	// PrefixGroups splits the requests into this many groups, each with
	// its own shared prefix of SharedPrefixTokens (system prompts shared by
	// a share of the users); a request's group is drawn from (Seed, i).
	// 0 or 1 = one prefix shared by all.
	PrefixGroups int
	Seed         uint64
	// Tokenizer counts and builds prompts; nil means DefaultTokenizer.
	Tokenizer Tokenizer
	// PromptOverheadTokens are the tokens the server adds around every
	// prompt (its chat template, a BOS): synthetic prompts are built that
	// much shorter so the server sees the requested length, and every
	// Item's InputTokens includes them.
	PromptOverheadTokens int
}

// Item is one request's workload.
type Item struct {
	Prompt string
	// InputTokens is the prompt's token count under the Spec's tokenizer, plus
	// PromptOverheadTokens: what the server is expected to see.
	InputTokens int
	// RequestedTokens is the length the workload asked for, when a prompt
	// could not be built to it exactly (0: InputTokens).
	RequestedTokens int
	// MaxTokens is the output length to ask for (max_tokens).
	MaxTokens int
	// Session is the conversation the request belongs to ("" = none).
	Session string
}

// Generator produces request i's workload as a pure function of (Seed, i):
// any goroutine may ask for any i in any order and gets the same answer.
type Generator struct {
	spec    Spec
	prompts *promptBuilder // synthetic mode
	data    *Dataset       // dataset mode
	order   []int32        // dataset entry for i mod len(order)
	inCount []atomic.Int32 // dataset: token count of entry's prompt + 1; 0 = not yet counted
	outCnt  []atomic.Int32 // dataset: token count of entry's completion + 1
}

// NewGenerator validates spec and prepares prompt synthesis or loads the
// dataset. Errors name the field or file that was wrong.
func NewGenerator(spec Spec) (*Generator, error) {
	if spec.Tokenizer == nil {
		tk, err := LoadTokenizer(DefaultTokenizer)
		if err != nil {
			return nil, err
		}
		spec.Tokenizer = tk
	}
	if spec.PromptOverheadTokens < 0 {
		return nil, fmt.Errorf("prompt overhead must be >= 0 tokens, got %d", spec.PromptOverheadTokens)
	}
	if spec.SharedPrefixTokens < 0 || spec.SharedPrefixTokens > MaxLengthTokens {
		return nil, fmt.Errorf("shared prefix must be between 0 and %d tokens, got %d", MaxLengthTokens, spec.SharedPrefixTokens)
	}
	if spec.PrefixGroups < 0 || spec.PrefixGroups > maxPrefixGroups {
		return nil, fmt.Errorf("prefix groups must be between 0 and %d, got %d", maxPrefixGroups, spec.PrefixGroups)
	}
	if spec.PrefixGroups > 1 && spec.SharedPrefixTokens == 0 {
		return nil, errors.New("prefix groups need a prefix length (tokens)")
	}
	g := &Generator{spec: spec}
	if spec.Dataset != "" {
		if spec.SharedPrefixTokens > 0 {
			return nil, errors.New("a shared prefix applies to synthetic prompts only, not to a dataset")
		}
		ds, err := LoadDataset(spec.Dataset)
		if err != nil {
			return nil, err
		}
		if spec.Output == nil {
			for _, e := range ds.Entries {
				if e.OutputTokens == 0 && !e.HasCompletion {
					return nil, fmt.Errorf("%s:%d: entry has no output length (output_tokens/max_tokens) and no output length distribution was given", spec.Dataset, e.Line)
				}
			}
		}
		g.data = ds
		n := len(ds.Entries)
		g.order = make([]int32, n)
		for k := range g.order {
			g.order[k] = int32(k)
		}
		rng := newRand(spec.Seed, streamDataset)
		rng.Shuffle(n, func(a, b int) { g.order[a], g.order[b] = g.order[b], g.order[a] })
		g.inCount = make([]atomic.Int32, n)
		g.outCnt = make([]atomic.Int32, n)
		return g, nil
	}
	if spec.Input == nil {
		return nil, errors.New("no input length distribution given (and no dataset)")
	}
	if spec.Output == nil {
		return nil, errors.New("no output length distribution given")
	}
	pb, err := newGroupedPromptBuilder(spec.Tokenizer, spec.SharedPrefixTokens, spec.PrefixGroups, spec.Seed)
	if err != nil {
		return nil, err
	}
	g.prompts = pb
	return g, nil
}

// Spec returns the resolved spec (Tokenizer filled in).
func (g *Generator) Spec() Spec { return g.spec }

// String describes the workload for reports, e.g. "input 256:1024 tokens,
// output 128 tokens, tokenizer cl100k_base, seed 42".
func (g *Generator) String() string {
	var parts []string
	if g.data != nil {
		parts = append(parts, fmt.Sprintf("dataset %s (%s, %d prompts)", g.data.Path, g.data.Format, len(g.data.Entries)))
		if g.spec.Output != nil {
			parts = append(parts, "output "+g.spec.Output.String()+" tokens where the dataset gives none")
		}
	} else {
		parts = append(parts, "input "+g.spec.Input.String()+" tokens", "output "+g.spec.Output.String()+" tokens")
		switch {
		case g.spec.PrefixGroups > 1:
			parts = append(parts, fmt.Sprintf("%d prefix groups of %d tokens", g.spec.PrefixGroups, g.spec.SharedPrefixTokens))
		case g.spec.SharedPrefixTokens > 0:
			parts = append(parts, fmt.Sprintf("shared prefix %d tokens", g.spec.SharedPrefixTokens))
		}
	}
	parts = append(parts, "tokenizer "+g.spec.Tokenizer.Name(), fmt.Sprintf("seed %d", g.spec.Seed))
	return strings.Join(parts, ", ")
}

// DatasetSize is the number of usable dataset entries (0 when synthetic).
func (g *Generator) DatasetSize() int {
	if g.data == nil {
		return 0
	}
	return len(g.data.Entries)
}

// seededRand is a reusable random source; pooling it keeps Lengths free
// of allocations (a fresh rand.Rand escapes to the heap through Dist).
type seededRand struct {
	pcg rand.PCG
	rng *rand.Rand
}

var randPool = sync.Pool{New: func() any {
	s := &seededRand{}
	s.rng = rand.New(&s.pcg)
	return s
}}

// lengthRand returns request i's source for lengths, independent of its
// prompt text so Lengths can skip building the text. Return it to randPool.
func (g *Generator) lengthRand(i int64) *seededRand {
	s := randPool.Get().(*seededRand)
	s.pcg.Seed(g.spec.Seed^streamLengths, mix64(uint64(i)))
	return s
}

// Lengths returns request i's input and output token counts without
// building its prompt; Item(i) reports the same numbers (for a dataset,
// each entry's text is tokenised once, on first use).
func (g *Generator) Lengths(i int64) (in, out int) {
	s := g.lengthRand(i)
	defer randPool.Put(s)
	if g.data != nil {
		k := g.entryIndex(i)
		return g.entryInput(k) + g.spec.PromptOverheadTokens, g.entryOutput(k, s.rng)
	}
	in = g.spec.Input.Sample(s.rng)
	out = g.spec.Output.Sample(s.rng)
	return in, out
}

// Item returns request i's prompt and lengths. Synthetic prompts are built
// from words drawn with a source seeded by (Seed, i), so they are unique per
// request apart from the shared prefix. Safe for concurrent use.
func (g *Generator) Item(i int64) Item {
	in, out := g.Lengths(i)
	if g.data != nil {
		k := g.entryIndex(i)
		return Item{Prompt: g.data.Entries[k].Prompt, InputTokens: in, MaxTokens: out}
	}
	s := randPool.Get().(*seededRand)
	defer randPool.Put(s)
	s.pcg.Seed(g.spec.Seed^streamPrompt, mix64(uint64(i)))
	over := g.spec.PromptOverheadTokens
	prompt, got := g.prompts.buildInGroup(max(1, in-over), g.group(i), s.rng)
	return Item{Prompt: prompt, InputTokens: got + over, RequestedTokens: in, MaxTokens: out}
}

func (g *Generator) entryIndex(i int64) int {
	n := int64(len(g.order))
	return int(g.order[((i%n)+n)%n])
}

func (g *Generator) entryInput(k int) int {
	if c := g.inCount[k].Load(); c > 0 {
		return int(c - 1)
	}
	c := g.spec.Tokenizer.Count(g.data.Entries[k].Prompt)
	if c < 0 {
		return 0 // a server tokenizer failed: unknown, counted again next time
	}
	g.inCount[k].Store(int32(c + 1)) // racing counters store the same value
	return c
}

func (g *Generator) entryOutput(k int, rng *rand.Rand) int {
	e := &g.data.Entries[k]
	switch {
	case e.OutputTokens > 0:
		return e.OutputTokens
	case e.HasCompletion:
		if c := g.outCnt[k].Load(); c > 0 {
			return int(c - 1)
		}
		c := max(1, g.spec.Tokenizer.Count(e.Completion))
		g.outCnt[k].Store(int32(c + 1))
		return c
	default:
		return g.spec.Output.Sample(rng)
	}
}

// maxPrefixGroups bounds the prefix groups (each holds its prefix text).
const maxPrefixGroups = 100_000

const streamGroup uint64 = 0x67726f7570000000 // "group"

// group is request i's prefix group.
func (g *Generator) group(i int64) int {
	n := g.spec.PrefixGroups
	if n <= 1 {
		return 0
	}
	return int(mix64(g.spec.Seed^streamGroup^mix64(uint64(i))) % uint64(n))
}

// prefixSegSalt names the groups' prefixes for the engine's prefix cache.
const prefixSegSalt uint64 = 0x7072656673656700

// Content returns request i's lengths and, for the engine's prefix cache,
// its group's shared prefix as one segment (the rest is unique); appends to
// dst.
func (g *Generator) Content(i int64, dst []simengine.Segment) (in, out int, prompt []simengine.Segment) {
	in, out = g.Lengths(i)
	if p := g.spec.SharedPrefixTokens; p > 0 && g.data == nil {
		id := mix64(g.spec.Seed^prefixSegSalt^uint64(g.group(i))) | 1
		dst = append(dst, simengine.Segment{ID: id, Tokens: int32(min(p, in))})
	}
	return in, out, dst
}

// PrefixReuse is the reuse the first n requests offer: of their total prompt
// tokens, how many an infinite prefix cache would hit (a group's prefix,
// after the group's first request).
func (g *Generator) PrefixReuse(n int64) (reused, total int64) {
	p := g.spec.SharedPrefixTokens
	seen := make(map[int]bool)
	for i := int64(0); i < n; i++ {
		in, _ := g.Lengths(i)
		total += int64(in)
		if p == 0 || g.data != nil {
			continue
		}
		k := g.group(i)
		if seen[k] {
			reused += int64(min(p, in))
		}
		seen[k] = true
	}
	return reused, total
}

// Conversations reports whether the dataset holds conversations that
// sessions can replay turn by turn (ShareGPT).
func (g *Generator) Conversations() bool { return g.data != nil && g.data.Format == FormatShareGPT }

// ConversationTurn is turn k (from 1) of the conversation session s
// replays: its user message and, as MaxTokens, the length of the answer the
// conversation had. False past the conversation's last exchange.
func (g *Generator) ConversationTurn(s, k int) (Item, bool) {
	if !g.Conversations() || k < 1 {
		return Item{}, false
	}
	e := &g.data.Entries[g.entryIndex(int64(s))]
	prompt, completion := e.Prompt, e.Completion
	if k > 1 {
		if k-2 >= len(e.Turns) {
			return Item{}, false
		}
		prompt, completion = e.Turns[k-2].Prompt, e.Turns[k-2].Completion
	}
	tk := g.spec.Tokenizer
	return Item{Prompt: prompt, InputTokens: tk.Count(prompt) + g.spec.PromptOverheadTokens, MaxTokens: max(1, tk.Count(completion))}, true
}
