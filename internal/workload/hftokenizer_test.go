package workload

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// testdata/tiny-tokenizer.json is a GPT-2-shaped byte-level BPE file built
// by hand: ids 0-255 are the bytes (id = byte value), then 26 merges
// forming " the", " cat", " dog", " sat", " on", " mat", "the", "cat",
// "hello", " world" and "\n\n", then the added token <|endoftext|> (282).
func TestTinyHFTokenizer(t *testing.T) {
	tk, err := LoadTokenizer("testdata/tiny-tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in   string
		want []int
	}{
		{"", nil},
		{" the cat sat on the mat", []int{258, 261, 266, 268, 258, 272}},
		{"the cat", []int{269, 261}},
		// The space before "world" attaches to it: [hello, Ġworld].
		{"hello world", []int{275, 280}},
		{"cats", []int{270, 's'}},
		{" dogs!", []int{264, 's', '!'}},
		{"x<|endoftext|>the", []int{'x', 282, 269}},
		{"a\n\n", []int{'a', 281}},
		{"a\n\nb", []int{'a', '\n', '\n', 'b'}}, // GPT-2's \s+(?!\S) leaves "\n" before b
		{"é", []int{0xC3, 0xA9}},                // no merges: one token per UTF-8 byte
	}
	for _, c := range cases {
		got := tk.Encode(c.in)
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("Encode(%q) = %v, want %v", c.in, got, c.want)
		}
		if dec := tk.Decode(got); dec != c.in {
			t.Errorf("Decode(Encode(%q)) = %q", c.in, dec)
		}
		if tk.Count(c.in) != len(c.want) {
			t.Errorf("Count(%q) = %d", c.in, tk.Count(c.in))
		}
	}
	if tk.Name() != "testdata/tiny-tokenizer.json" {
		t.Errorf("Name = %q", tk.Name())
	}
	// A directory holding tokenizer.json is accepted too.
	dir := t.TempDir()
	data, _ := os.ReadFile("testdata/tiny-tokenizer.json")
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644)
	if d, err := LoadTokenizer(dir); err != nil || d.Count(" the cat") != 2 {
		t.Errorf("loading from a directory: %v", err)
	}
}

func TestHFTokenizerErrors(t *testing.T) {
	base := func() map[string]any {
		var m map[string]any
		data, _ := os.ReadFile("testdata/tiny-tokenizer.json")
		json.Unmarshal(data, &m)
		return m
	}
	cases := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"wordpiece", func(m map[string]any) { m["model"].(map[string]any)["type"] = "WordPiece" }, `model type "WordPiece" is not supported`},
		{"metaspace", func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "Metaspace"} }, `pre_tokenizer "Metaspace" is not supported`},
		{"no bytelevel", func(m map[string]any) { m["pre_tokenizer"] = nil }, "no ByteLevel stage"},
		{"normalizer", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Lowercase"} }, `normalizer "Lowercase"`},
		{"bad merge", func(m map[string]any) {
			m["model"].(map[string]any)["merges"] = []any{"Ġ zz"}
		}, "missing from the vocab"},
		{"merge format", func(m map[string]any) { m["model"].(map[string]any)["merges"] = []any{"nospace"} }, "two tokens separated by a space"},
		{"missing byte", func(m map[string]any) { delete(m["model"].(map[string]any)["vocab"].(map[string]any), "Ġ") }, "lacks the byte-level token for byte 0x20"},
		{"no model", func(m map[string]any) { delete(m, "model") }, `no "model"`},
	}
	for _, c := range cases {
		m := base()
		c.edit(m)
		data, _ := json.Marshal(m)
		p := filepath.Join(t.TempDir(), "tokenizer.json")
		os.WriteFile(p, data, 0o644)
		_, err := LoadTokenizer(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to name the file and say %q", c.name, err, c.want)
		}
	}
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(p, []byte("{not json"), 0o644)
	if _, err := LoadTokenizer(p); err == nil || !strings.Contains(err.Error(), "not a tokenizer.json") {
		t.Errorf("garbage file: %v", err)
	}
	if _, err := LoadTokenizer("/nonexistent/tokenizer.json"); err == nil || !strings.Contains(err.Error(), "no such built-in encoding or file") {
		t.Errorf("missing file: %v", err)
	}
}

// TestHFMatchesTiktokenInLlama3Shape converts cl100k_base into a
// tokenizer.json laid out like Llama 3's (a Split stage with the tiktoken
// pattern, then ByteLevel without its regex, merges derived from the ranks,
// ignore_merges) and checks that the HF path encodes exactly like the
// built-in encoding. Llama 3's tokenizer was made the same way from a
// tiktoken file, so this exercises the real shape without a download.
func TestHFMatchesTiktokenInLlama3Shape(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100k-token vocabulary")
	}
	builtin, err := LoadTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	ranks := builtin.(*tiktokenTokenizer).model.(*rankBPE).ranks
	llama3 := map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": patCL100K}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
	}}
	for _, pair := range []struct {
		name         string
		ignoreMerges bool
		stringMerges bool
	}{
		{"llama3 (pair merges, ignore_merges)", true, false},
		{"llama3 (\"a b\" merges, full BPE)", false, true},
	} {
		path := writeHFFromRanks(t, ranks, llama3, pair.ignoreMerges, pair.stringMerges)
		hf, err := LoadTokenizer(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tokenizerSamples {
			if got, want := hf.Encode(s), builtin.Encode(s); !slices.Equal(got, want) {
				t.Errorf("%s Encode(%q)\n got %v\nwant %v", pair.name, s, got, want)
			}
			if dec := hf.Decode(hf.Encode(s)); dec != s {
				t.Errorf("%s Decode(Encode(%q)) = %q", pair.name, s, dec)
			}
		}
	}
}

// writeHFFromRanks derives BPE merges from tiktoken ranks (each token's
// bytes re-merged using only lower ranks must end in exactly two parts,
// which form its merge) and writes a tokenizer.json.
func writeHFFromRanks(t *testing.T, ranks map[string]int, pre any, ignoreMerges, stringMerges bool) string {
	t.Helper()
	type tokRank struct {
		tok  string
		rank int
	}
	all := make([]tokRank, 0, len(ranks))
	vocab := make(map[string]int, len(ranks))
	for tok, r := range ranks {
		all = append(all, tokRank{tok, r})
		vocab[byteLevelEncode(tok)] = r
	}
	sort.Slice(all, func(i, j int) bool { return all[i].rank < all[j].rank })
	var merges [][2]string
	for _, tr := range all {
		if len(tr.tok) < 2 {
			continue
		}
		parts := mergeUnder(ranks, tr.tok, tr.rank)
		if len(parts) != 2 {
			t.Fatalf("token %q (rank %d) does not split into two parts: %q", tr.tok, tr.rank, parts)
		}
		merges = append(merges, [2]string{byteLevelEncode(parts[0]), byteLevelEncode(parts[1])})
	}
	var mergesJSON any = merges
	if stringMerges {
		ss := make([]string, len(merges))
		for i, m := range merges {
			ss[i] = m[0] + " " + m[1]
		}
		mergesJSON = ss
	}
	file := map[string]any{
		"added_tokens":  []any{map[string]any{"id": 100257, "content": "<|endoftext|>", "special": true}},
		"normalizer":    nil,
		"pre_tokenizer": pre,
		"model":         map[string]any{"type": "BPE", "ignore_merges": ignoreMerges, "vocab": vocab, "merges": mergesJSON},
	}
	data, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mergeUnder(ranks map[string]int, tok string, limit int) []string {
	parts := make([]string, len(tok))
	for i := 0; i < len(tok); i++ {
		parts[i] = tok[i : i+1]
	}
	for len(parts) > 2 {
		best, bestK := limit, -1
		for k := 0; k+1 < len(parts); k++ {
			if r, ok := ranks[parts[k]+parts[k+1]]; ok && r < best {
				best, bestK = r, k
			}
		}
		if bestK < 0 {
			break
		}
		parts[bestK] += parts[bestK+1]
		parts = append(parts[:bestK+1], parts[bestK+2:]...)
	}
	return parts
}
