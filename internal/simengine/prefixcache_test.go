package simengine

import "testing"

// runOne submits rq, steps until idle and returns its phases.
func runOne(t *testing.T, e *Engine, rq Request) Phases {
	t.Helper()
	rq.At = e.Now()
	if err := e.SubmitRequest(rq); err != nil {
		t.Fatal(err)
	}
	var ph Phases
	for e.HasWork() {
		e.Step(func(em Emission) {
			if em.ID == rq.ID && em.Finished {
				ph = em.Phases
			}
		})
	}
	return ph
}

// A second request with the same 1000-token system prompt finds its 62 full
// blocks cached, computes only the rest, and reaches its first token sooner;
// with caching off it pays the whole prefill again.
func TestPrefixHitSkipsPrefill(t *testing.T) {
	for _, off := range []bool{false, true} {
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) { c.NoPrefixCaching = off })
		sys := []Segment{{ID: 7, Tokens: 1000}}
		a := runOne(t, e, Request{ID: 1, InputTokens: 1024, OutputTokens: 10, Content: sys})
		before := e.Stats()
		b := runOne(t, e, Request{ID: 2, InputTokens: 1024, OutputTokens: 10, Content: sys})
		s := e.Stats()
		if off {
			if s.PrefixCacheQueries != 0 || s.PrefixCacheHits != 0 || s.PrefixCachedBlocks != 0 {
				t.Errorf("caching off: %d queries, %d hits, %d cached blocks; want none", s.PrefixCacheQueries, s.PrefixCacheHits, s.PrefixCachedBlocks)
			}
			if b.Prefill != a.Prefill {
				t.Errorf("caching off: prefill %d then %d ns; want equal", a.Prefill, b.Prefill)
			}
			if got := s.PrefillTokens - before.PrefillTokens; got != 1024 {
				t.Errorf("caching off: second request computed %d prompt tokens, want 1024", got)
			}
			continue
		}
		if s.PrefixCacheQueries != 2048 || s.PrefixCacheHits != 992 {
			t.Errorf("queries %d hits %d; want 2048 and 992 (62 blocks of the shared 1000 tokens)", s.PrefixCacheQueries, s.PrefixCacheHits)
		}
		if got := s.PrefillTokens - before.PrefillTokens; got != 1024-992 {
			t.Errorf("second request computed %d prompt tokens, want %d", got, 1024-992)
		}
		if b.Prefill >= a.Prefill/2 {
			t.Errorf("prefill %d ns with a hit vs %d ns without; want well under half", b.Prefill, a.Prefill)
		}
		if s.KVBlocksUsed != 0 || s.PrefixCachedBlocks != 62 {
			t.Errorf("idle: %d blocks used, %d cached; want 0 and 62", s.KVBlocksUsed, s.PrefixCachedBlocks)
		}
	}
}

// A prompt seen in full still computes its last token, as vLLM's
// max_cache_hit_length = num_tokens - 1 makes it.
func TestFullHitComputesLastToken(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	p := []Segment{{ID: 3, Tokens: 64}}
	runOne(t, e, Request{ID: 1, InputTokens: 64, OutputTokens: 1, Content: p})
	runOne(t, e, Request{ID: 2, InputTokens: 64, OutputTokens: 1, Content: p})
	if s := e.Stats(); s.PrefixCacheHits != 48 || s.PrefillTokens != 64+16 {
		t.Errorf("hits %d, prompt tokens computed %d; want 48 and 80", s.PrefixCacheHits, s.PrefillTokens)
	}
}

// Free cached blocks are evicted oldest-freed first and, within a request,
// tail first: after X then Y are cached and 5 blocks are needed, X's last
// five go and its first five still hit.
func TestLRUEvictsOldestTailFirst(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	e.freeBlocks, e.st.KVBlocksTotal = 20, 20
	x := []Segment{{ID: 10, Tokens: 160}}
	y := []Segment{{ID: 11, Tokens: 160}}
	runOne(t, e, Request{ID: 1, InputTokens: 160, OutputTokens: 1, Content: x})
	runOne(t, e, Request{ID: 2, InputTokens: 160, OutputTokens: 1, Content: y})
	if s := e.Stats(); s.PrefixCachedBlocks != 20 || s.KVBlocksUsed != 0 {
		t.Fatalf("after X and Y: %d cached, %d used; want 20 and 0", s.PrefixCachedBlocks, s.KVBlocksUsed)
	}
	runOne(t, e, Request{ID: 3, InputTokens: 80, OutputTokens: 1}) // unique: 5 blocks evicted
	h0 := e.Stats().PrefixCacheHits
	runOne(t, e, Request{ID: 4, InputTokens: 160, OutputTokens: 1, Content: x}) // 5 hit + 5 plain new blocks
	if got := e.Stats().PrefixCacheHits - h0; got != 80 {
		t.Errorf("X after eviction hit %d tokens, want 80 (its first 5 blocks)", got)
	}
	h1 := e.Stats().PrefixCacheHits
	runOne(t, e, Request{ID: 5, InputTokens: 161, OutputTokens: 1, Content: y})
	if got := e.Stats().PrefixCacheHits - h1; got != 160 {
		t.Errorf("Y hit %d tokens, want 160 (all 10 blocks kept)", got)
	}
}

// A conversation's next turn repeats the last prompt and answer: the blocks
// computed while decoding the answer (named by OutputID) hit too.
func TestAnswerBlocksHitNextTurn(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	runOne(t, e, Request{ID: 1, InputTokens: 100, OutputTokens: 50, Content: []Segment{{ID: 1, Tokens: 100}}, OutputID: 9})
	h0 := e.Stats().PrefixCacheHits
	runOne(t, e, Request{ID: 2, InputTokens: 180, OutputTokens: 5, Content: []Segment{{ID: 1, Tokens: 100}, {ID: 9, Tokens: 50}}})
	// The first turn computed 149 tokens (its last answer token is never fed
	// back): 9 full blocks, 144 tokens.
	if got := e.Stats().PrefixCacheHits - h0; got != 144 {
		t.Errorf("second turn hit %d tokens, want 144", got)
	}
}

// Content may name the answer's tokens too, block by block as a server
// that knows its answer does, with a block straddling the prompt's end: the
// answer's blocks register as decoding fills them, and a next turn naming
// the same blocks hits all those computed. Content past the answer is
// ignored; answer tokens Content does not reach are OutputID's.
func TestContentNamesAnswerBlocks(t *testing.T) {
	blocks := func(ids ...uint64) []Segment {
		s := make([]Segment, len(ids))
		for i, id := range ids {
			s[i] = Segment{ID: id, Tokens: BlockTokens}
		}
		return s
	}
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	// 40 prompt + 40 answer tokens = 5 blocks; the third straddles.
	runOne(t, e, Request{ID: 1, InputTokens: 40, OutputTokens: 40, Content: blocks(1, 2, 3, 4, 5, 6, 7)})
	if got := e.Stats().PrefixCachedBlocks; got != 4 {
		t.Errorf("%d blocks cached, want 4 (79 computed tokens; the named sixth and seventh are past the answer)", got)
	}
	h0 := e.Stats().PrefixCacheHits
	runOne(t, e, Request{ID: 2, InputTokens: 100, OutputTokens: 1, Content: blocks(1, 2, 3, 4, 5, 6)})
	if got := e.Stats().PrefixCacheHits - h0; got != 4*BlockTokens {
		t.Errorf("next turn hit %d tokens, want %d", got, 4*BlockTokens)
	}
	// Named content stopping inside the answer: OutputID names the rest.
	e = mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	runOne(t, e, Request{ID: 1, InputTokens: 40, OutputTokens: 40, Content: blocks(1, 2, 3), OutputID: 9})
	h0 = e.Stats().PrefixCacheHits
	runOne(t, e, Request{ID: 2, InputTokens: 100, OutputTokens: 1, Content: append(blocks(1, 2, 3), Segment{ID: 9, Tokens: 32})})
	if got := e.Stats().PrefixCacheHits - h0; got != 4*BlockTokens {
		t.Errorf("with OutputID: next turn hit %d tokens, want %d", got, 4*BlockTokens)
	}
}
