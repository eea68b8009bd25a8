package workload

import (
	"strings"
	"testing"
)

// fourLetterCount is a server-side tokenizer unlike knee's: each word is
// cut into pieces of at most four letters, and every text gets a BOS.
func fourLetterCount(s string) (int, error) {
	n := 1
	for _, w := range strings.Fields(s) {
		n += (len(w) + 3) / 4
	}
	return n, nil
}

// TestServerTokenizerBuildsExactPrompts: prompts built with a server's
// counts have exactly the requested length in that server's tokens, and
// the server is asked for the word pools, not for every prompt.
func TestServerTokenizerBuildsExactPrompts(t *testing.T) {
	tk, err := NewServerTokenizer("test server", fourLetterCount)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator(Spec{Input: mustDist(t, "1:700"), Output: mustDist(t, "4"), Seed: 5, Tokenizer: tk, PromptOverheadTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.VerifyAdditive([]string{g.Item(0).Prompt, g.Item(1).Prompt}); err != nil {
		t.Fatal(err)
	}
	asked := tk.Asked()
	for i := range int64(200) {
		it := g.Item(i)
		in, _ := g.Lengths(i)
		served, _ := fourLetterCount(it.Prompt)
		if want := max(in, 4); served-1+3 != want || it.InputTokens != want {
			t.Fatalf("item %d: asked %d, built %d (server counts %d + 3 overhead)", i, in, it.InputTokens, served-1)
		}
	}
	if n := tk.Asked() - asked; n != 0 {
		t.Errorf("building 200 prompts asked the server %d times; the pieces' counts should answer", n)
	}
}

// TestServerTokenizerNotAdditive: a server whose counts are not the sum of
// the pieces' turns the shortcut off, and prompts are then counted whole.
func TestServerTokenizerNotAdditive(t *testing.T) {
	pairs := func(s string) (int, error) { // two words make one token more than apart
		n, _ := fourLetterCount(s)
		return n + strings.Count(strings.TrimSpace(s), " ")/2, nil
	}
	tk, err := NewServerTokenizer("pairing server", pairs)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator(Spec{Input: mustDist(t, "64"), Output: mustDist(t, "4"), Seed: 5, Tokenizer: tk})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.VerifyAdditive([]string{g.Item(0).Prompt}); err == nil || !strings.Contains(err.Error(), "counted by the server") {
		t.Fatalf("VerifyAdditive = %v, want the shortcut turned off", err)
	}
	it := g.Item(7)
	served, _ := pairs(it.Prompt)
	if served-1 != it.InputTokens {
		t.Errorf("after verification a prompt's count %d must be the server's %d", it.InputTokens, served-1)
	}
}
