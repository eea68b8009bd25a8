package workload

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// A server tokenizer counts with the target server's own tokenizer (its
// /tokenize endpoint), so synthetic prompts are exact in the tokens the
// server will see. Every Count is a request to the server, so it keeps
// what it learned: the counts of the single pieces the word pools are made
// of. A synthetic prompt is such pieces end to end ("word", " word", ...),
// and every tokenizer handled here splits text at a space before a word,
// so the prompt's count is the sum of its pieces' counts: Count answers
// from those without asking the server again. VerifyAdditive checks that
// on real prompts once, and turns the shortcut off when the server
// disagrees (then every Count asks the server).

// ServerTokenizer counts tokens with a function that asks the server.
type ServerTokenizer struct {
	name  string
	count func(string) (int, error)
	empty int // the server's count of "" (BOS and the like): not part of any text

	mu       sync.Mutex
	pieces   map[string]int // counts of texts of one piece
	failures int
	lastErr  error
	additive atomic.Bool // counts of pool texts are sums of piece counts
	asked    atomic.Int64
}

// NewServerTokenizer returns a Tokenizer whose counts come from count (the
// number of tokens the server makes of a text); name says which server and
// endpoint, for reports. It asks for the count of "" once, to learn what
// the server adds to every text.
func NewServerTokenizer(name string, count func(string) (int, error)) (*ServerTokenizer, error) {
	t := &ServerTokenizer{name: name, count: count, pieces: map[string]int{}}
	empty, err := count("")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t.empty = empty
	t.additive.Store(true)
	return t, nil
}

// Name says where the counts come from.
func (t *ServerTokenizer) Name() string { return t.name }

// Encode and Decode are not offered by a counting endpoint; knee only
// counts and builds prompts.
func (t *ServerTokenizer) Encode(string) []int { return nil }
func (t *ServerTokenizer) Decode([]int) string { return "" }

// Asked is how many counts the server was asked for.
func (t *ServerTokenizer) Asked() int64 { return t.asked.Load() }

// Count returns the tokens the server makes of s beyond those it adds to
// every text. When the server fails, a text of known pieces counts as
// their sum; any other text counts as -1, which no prompt target matches,
// and Err says what failed.
func (t *ServerTokenizer) Count(s string) int {
	sum, summed := t.sum(s)
	if summed && t.additive.Load() {
		return sum
	}
	n := t.ask(s)
	if n < 0 && summed {
		return sum // the server failed mid-run: its pieces' counts are the best estimate
	}
	return n
}

// ask counts s with the server; single pieces are remembered.
func (t *ServerTokenizer) ask(s string) int {
	t.asked.Add(1)
	n, err := t.count(s)
	if err != nil {
		t.mu.Lock()
		t.failures++
		t.lastErr = err
		t.mu.Unlock()
		return -1
	}
	n -= t.empty
	if isPiece(s) {
		t.mu.Lock()
		t.pieces[s] = n
		t.mu.Unlock()
	}
	return n
}

// Err is the last failed count, if any.
func (t *ServerTokenizer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failures == 0 {
		return nil
	}
	return fmt.Errorf("%d token counts failed; the last: %w", t.failures, t.lastErr)
}

// isPiece reports a text of at most one word: "word" or " word".
func isPiece(s string) bool {
	return !strings.Contains(strings.TrimPrefix(s, " "), " ")
}

// sum is the count of s as the sum of its pieces' known counts.
func (t *ServerTokenizer) sum(s string) (int, bool) {
	if s == "" || isPiece(s) {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	total := 0
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start+1:], ' ')
		if end < 0 {
			end = len(s)
		} else {
			end += start + 1
		}
		n, ok := t.pieces[s[start:end]]
		if !ok {
			return 0, false
		}
		total += n
		start = end
	}
	return total, true
}

// VerifyAdditive asks the server for the counts of texts built from the
// pools and compares them with the sums of their pieces; on the first
// disagreement it turns the shortcut off and says so.
func (t *ServerTokenizer) VerifyAdditive(texts []string) error {
	for _, s := range texts {
		sum, ok := t.sum(s)
		if !ok {
			continue
		}
		if got := t.ask(s); got != sum {
			t.additive.Store(false)
			return fmt.Errorf("%s counts a %d-piece prompt as %d tokens where its pieces add up to %d: every prompt is now counted by the server", t.name, strings.Count(s, " ")+1, got, sum)
		}
	}
	return nil
}
