package workload

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
)

func mustDist(t testing.TB, s string) Dist {
	t.Helper()
	d, err := ParseDist(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustTokenizer(t testing.TB, name string) Tokenizer {
	t.Helper()
	tk, err := LoadTokenizer(name)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestPromptsHaveExactLength(t *testing.T) {
	for _, name := range []string{"cl100k_base", "o200k_base", "testdata/tiny-tokenizer.json"} {
		tk := mustTokenizer(t, name)
		for _, prefix := range []int{0, 40} {
			g, err := NewGenerator(Spec{Input: mustDist(t, "1:300"), Output: mustDist(t, "64"), Seed: 5, Tokenizer: tk, SharedPrefixTokens: prefix})
			if err != nil {
				t.Fatal(err)
			}
			for i := range int64(300) {
				it := g.Item(i)
				in, out := g.Lengths(i)
				if got := tk.Count(it.Prompt); got != in || it.InputTokens != in || it.MaxTokens != out {
					t.Fatalf("%s prefix %d item %d: Lengths (%d,%d), Item (%d,%d), Count(prompt) %d",
						name, prefix, i, in, out, it.InputTokens, it.MaxTokens, got)
				}
				if strings.HasPrefix(it.Prompt, " ") {
					t.Fatalf("%s: prompt starts with a space: %q", name, it.Prompt[:20])
				}
			}
		}
	}
}

// TestPromptLongExact covers lengths where a merge across words would show.
func TestPromptLongExact(t *testing.T) {
	tk := mustTokenizer(t, "cl100k_base")
	g, err := NewGenerator(Spec{Input: mustDist(t, "8192"), Output: mustDist(t, "1"), Seed: 1, Tokenizer: tk})
	if err != nil {
		t.Fatal(err)
	}
	it := g.Item(0)
	if tk.Count(it.Prompt) != 8192 || it.InputTokens != 8192 {
		t.Fatalf("8192-token prompt has %d tokens", tk.Count(it.Prompt))
	}
}

func TestPromptsUniqueAndDeterministic(t *testing.T) {
	tk := mustTokenizer(t, "cl100k_base")
	spec := Spec{Input: mustDist(t, "4:64"), Output: mustDist(t, "16"), Seed: 77, Tokenizer: tk}
	g1, _ := NewGenerator(spec)
	g2, _ := NewGenerator(spec)
	spec.Seed = 78
	g3, _ := NewGenerator(spec)
	seen := map[string]int64{}
	sameAsOtherSeed := 0
	for i := range int64(3000) {
		a, b, c := g1.Item(i), g2.Item(i), g3.Item(i)
		if a != b {
			t.Fatalf("item %d differs between generators with the same seed", i)
		}
		if j, dup := seen[a.Prompt]; dup {
			t.Fatalf("items %d and %d share the prompt %q", j, i, a.Prompt)
		}
		seen[a.Prompt] = i
		if a.Prompt == c.Prompt {
			sameAsOtherSeed++
		}
	}
	if sameAsOtherSeed > 0 {
		t.Errorf("%d prompts repeated under a different seed", sameAsOtherSeed)
	}
	// Order of requests does not matter: item 2999 first gives the same.
	g4, _ := NewGenerator(Spec{Input: mustDist(t, "4:64"), Output: mustDist(t, "16"), Seed: 77, Tokenizer: tk})
	if g4.Item(2999) != g1.Item(2999) {
		t.Error("Item depends on call order")
	}
}

func TestSharedPrefix(t *testing.T) {
	tk := mustTokenizer(t, "cl100k_base")
	const k = 100
	g, err := NewGenerator(Spec{Input: mustDist(t, "50:400"), Output: mustDist(t, "8"), Seed: 3, Tokenizer: tk, SharedPrefixTokens: k})
	if err != nil {
		t.Fatal(err)
	}
	var ref []int
	unique := map[string]bool{}
	for i := range int64(200) {
		it := g.Item(i)
		ids := tk.Encode(it.Prompt)
		n := min(k, it.InputTokens)
		if ref == nil && it.InputTokens >= k {
			ref = ids[:k]
		}
		if ref != nil && !slices.Equal(ids[:n], ref[:n]) {
			t.Fatalf("item %d does not start with the shared prefix's tokens", i)
		}
		if it.InputTokens > k {
			unique[tk.Decode(ids[k:])] = true
		}
	}
	if ref == nil || len(unique) < 150 {
		t.Fatalf("expected unique suffixes after a shared prefix; %d distinct", len(unique))
	}
	// Another seed shares no prefix with this run.
	g2, _ := NewGenerator(Spec{Input: mustDist(t, "200"), Output: mustDist(t, "8"), Seed: 4, Tokenizer: tk, SharedPrefixTokens: k})
	if slices.Equal(tk.Encode(g2.Item(0).Prompt)[:k], ref) {
		t.Error("different seeds produced the same shared prefix")
	}
}

func TestLengthsFollowDistributions(t *testing.T) {
	g, err := NewGenerator(Spec{Input: mustDist(t, "lognormal:1000,400"), Output: mustDist(t, "100:300"), Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	var sumIn, sumOut float64
	const n = 100_000
	for i := range int64(n) {
		in, out := g.Lengths(i)
		sumIn += float64(in)
		sumOut += float64(out)
	}
	if m := sumIn / n; math.Abs(m-1000) > 10 {
		t.Errorf("mean input %.1f, want 1000", m)
	}
	if m := sumOut / n; math.Abs(m-200) > 2 {
		t.Errorf("mean output %.1f, want 200", m)
	}
}

func TestItemConcurrent(t *testing.T) {
	g, _ := NewGenerator(Spec{Input: mustDist(t, "10:200"), Output: mustDist(t, "5:50"), Seed: 21})
	const n = 400
	want := make([]Item, n)
	for i := range want {
		want[i] = g.Item(int64(i))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := n - 1; i >= 0; i-- {
				k := (i*7 + w) % n
				if g.Item(int64(k)) != want[k] {
					errs <- "mismatch"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if len(errs) > 0 {
		t.Fatal("concurrent Item calls disagreed with sequential ones")
	}
}

func TestGeneratorDataset(t *testing.T) {
	tk := mustTokenizer(t, "cl100k_base")
	spec := Spec{Dataset: "testdata/prompts.jsonl", Output: mustDist(t, "77"), Seed: 9, Tokenizer: tk}
	g, err := NewGenerator(spec)
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := LoadDataset(spec.Dataset)
	n := len(ds.Entries)
	if g.DatasetSize() != n {
		t.Fatalf("DatasetSize %d, want %d", g.DatasetSize(), n)
	}
	// Each cycle visits every entry once, in the same seed-determined order.
	var order []string
	for i := range int64(3 * n) {
		it := g.Item(i)
		in, out := g.Lengths(i)
		if it.InputTokens != in || it.MaxTokens != out || in != tk.Count(it.Prompt) {
			t.Fatalf("item %d: %+v vs Lengths (%d,%d)", i, it, in, out)
		}
		var e DatasetEntry
		for _, c := range ds.Entries {
			if c.Prompt == it.Prompt {
				e = c
			}
		}
		switch {
		case e.OutputTokens > 0 && out != e.OutputTokens,
			e.HasCompletion && out != tk.Count(e.Completion),
			e.OutputTokens == 0 && !e.HasCompletion && out != 77:
			t.Errorf("item %d (line %d): output %d", i, e.Line, out)
		}
		if i < int64(n) {
			order = append(order, it.Prompt)
		} else if order[i%int64(n)] != it.Prompt {
			t.Fatalf("cycle %d differs from the first", i/int64(n))
		}
	}
	seen := map[string]bool{}
	for _, p := range order {
		seen[p] = true
	}
	if len(seen) != n {
		t.Fatalf("one cycle visited %d of %d entries", len(seen), n)
	}
	// Some other seed orders them differently (5! orders; try a few).
	differs := false
	for s := uint64(10); s < 20 && !differs; s++ {
		spec.Seed = s
		g2, _ := NewGenerator(spec)
		for i := range int64(n) {
			differs = differs || g2.Item(i).Prompt != order[i]
		}
	}
	if !differs {
		t.Error("dataset order does not depend on the seed")
	}
}

func TestGeneratorErrors(t *testing.T) {
	d := mustDist(t, "10")
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{Output: d}, "no input length distribution"},
		{Spec{Input: d}, "no output length distribution"},
		{Spec{Input: d, Output: d, SharedPrefixTokens: -1}, "shared prefix must be between 0"},
		{Spec{Dataset: "testdata/prompts.jsonl", SharedPrefixTokens: 5}, "synthetic prompts only"},
		{Spec{Dataset: "testdata/prompts.jsonl"}, "testdata/prompts.jsonl:5: entry has no output length"},
		{Spec{Dataset: "testdata/nope.jsonl", Output: d}, "nope.jsonl"},
	}
	for _, c := range cases {
		_, err := NewGenerator(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.spec, err, c.want)
		}
	}
	// ShareGPT needs no Output: lengths come from the gpt turns.
	g, err := NewGenerator(Spec{Dataset: "testdata/sharegpt.json", Seed: 2})
	if err != nil {
		t.Fatalf("ShareGPT without Output: %v", err)
	}
	if got, want := g.String(), "dataset testdata/sharegpt.json (sharegpt, 3 prompts), tokenizer cl100k_base, seed 2"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	g, _ = NewGenerator(Spec{Input: mustDist(t, "256:1024"), Output: mustDist(t, "128"), SharedPrefixTokens: 64, Seed: 42})
	if got, want := g.String(), "input 256:1024 tokens, output 128 tokens, shared prefix 64 tokens, tokenizer cl100k_base, seed 42"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// Prefix groups: requests of one group start with the same text, of
// different groups with different text; the engine is told the same; and
// the reuse on offer is each group's prefix after its first request.
func TestPrefixGroups(t *testing.T) {
	g, err := NewGenerator(Spec{Input: mustDist(t, "300"), Output: mustDist(t, "5"), SharedPrefixTokens: 200, PrefixGroups: 4, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := LoadTokenizer(DefaultTokenizer)
	byGroup := map[int]string{}
	segIDs := map[int]uint64{}
	for i := int64(0); i < 40; i++ {
		it := g.Item(i)
		ids := tk.Encode(it.Prompt)
		if len(ids) != 300 || it.InputTokens != 300 {
			t.Fatalf("request %d: %d tokens", i, len(ids))
		}
		head := tk.Decode(ids[:200])
		k := g.group(i)
		if prev, ok := byGroup[k]; ok && prev != head {
			t.Errorf("request %d of group %d starts differently from its group", i, k)
		}
		byGroup[k] = head
		in, out, segs := g.Content(i, nil)
		if in != 300 || out != 5 || len(segs) != 1 || segs[0].Tokens != 200 {
			t.Fatalf("content %d %d %v", in, out, segs)
		}
		if id, ok := segIDs[k]; ok && id != segs[0].ID {
			t.Errorf("group %d named %x and %x", k, id, segs[0].ID)
		}
		segIDs[k] = segs[0].ID
	}
	if len(byGroup) != 4 {
		t.Fatalf("40 requests fell in %d of 4 groups", len(byGroup))
	}
	distinct := map[string]bool{}
	for _, h := range byGroup {
		distinct[h] = true
	}
	if len(distinct) != 4 {
		t.Errorf("4 groups have %d distinct prefixes", len(distinct))
	}
	reused, total := g.PrefixReuse(40)
	if total != 40*300 || reused != (40-4)*200 {
		t.Errorf("reuse %d of %d, want %d of %d", reused, total, 36*200, 40*300)
	}
	if _, err := NewGenerator(Spec{Input: mustDist(t, "300"), Output: mustDist(t, "5"), PrefixGroups: 4}); err == nil {
		t.Error("prefix groups without a prefix length accepted")
	}
}
