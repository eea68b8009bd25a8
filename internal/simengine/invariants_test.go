package simengine

import (
	"math/rand/v2"
	"testing"
)

// Random submits, cancels and steps on a small KV cache keep the engine's
// books straight: blocks held add up, limits hold, and every request that is
// not canceled emits exactly its output tokens, in order, once each.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	var preemptions, rejected, hits int64
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
			c.MaxNumSeqs = 1 + rng.IntN(16)
			c.MaxNumBatchedTokens = max(c.MaxNumSeqs, 16+rng.IntN(600))
			c.QueueLimit = rng.IntN(20)
			c.ChunkedPrefill = true
			c.NoPrefixCaching = seed%4 == 0
		})
		blocks := 20 + rng.IntN(200)
		e.freeBlocks, e.st.KVBlocksTotal = blocks, blocks
		e.cfg.MaxModelLen = blocks * BlockTokens
		want := map[int64]int{}
		got := map[int64]int{}
		canceled := map[int64]bool{}
		finished := map[int64]bool{}
		next := int64(0)
		emit := func(em Emission) {
			if em.Index != got[em.ID] {
				t.Fatalf("seed %d: request %d emitted token %d after %d tokens", seed, em.ID, em.Index, got[em.ID])
			}
			got[em.ID]++
			if em.Finished {
				finished[em.ID] = true
				if got[em.ID] != want[em.ID] {
					t.Fatalf("seed %d: request %d finished after %d of %d tokens", seed, em.ID, got[em.ID], want[em.ID])
				}
				if p := em.Phases; p.Queue < 0 || p.Prefill <= 0 || p.Decode < 0 {
					t.Fatalf("seed %d: phases %+v", seed, p)
				}
			}
		}
		for op := 0; op < 3000; op++ {
			switch r := rng.IntN(10); {
			case r < 3:
				in, out := 1+rng.IntN(e.cfg.MaxModelLen/3), 1+rng.IntN(e.cfg.MaxModelLen/3)
				// Half the prompts share content: one of three system
				// prompts, maybe a repeated earlier answer, then unique text.
				rq := Request{ID: next, InputTokens: in, OutputTokens: out, At: e.Now(), OutputID: uint64(1000 + next)}
				if rng.IntN(2) == 0 {
					rq.Content = []Segment{{ID: uint64(1 + rng.IntN(3)), Tokens: int32(1 + rng.IntN(300))}}
					if next > 0 && rng.IntN(2) == 0 {
						rq.Content = append(rq.Content, Segment{ID: uint64(1000 + rng.Int64N(next)), Tokens: int32(1 + rng.IntN(100))})
					}
				}
				if err := e.SubmitRequest(rq); err == nil {
					want[next] = out
				}
				next++
			case r == 3 && next > 0:
				id := rng.Int64N(next)
				if _, ok := want[id]; ok && !finished[id] {
					canceled[id] = true
				}
				e.Cancel(id)
			default:
				e.Step(emit)
			}
			// Plain blocks are held by one request; cached ones are shared
			// and counted once, by their reference counts.
			held := 0
			refs := map[int32]int32{}
			for _, slot := range e.running {
				r := &e.reqs[slot]
				held += int(r.blocks) - len(r.cached)
				for _, k := range r.cached {
					refs[k]++
				}
			}
			held += len(refs)
			for k, n := range refs {
				if e.pc.ent[k].ref != n {
					t.Fatalf("seed %d op %d: cached block %d has ref %d, held by %d requests", seed, op, k, e.pc.ent[k].ref, n)
				}
			}
			s := e.Stats()
			if held != s.KVBlocksUsed || s.KVBlocksUsed < 0 || s.KVBlocksUsed > blocks || e.freeBlocks+e.pc.evictable+held != blocks {
				t.Fatalf("seed %d op %d: running hold %d blocks, stats say %d of %d (%d free, %d cached free)", seed, op, held, s.KVBlocksUsed, blocks, e.freeBlocks, e.pc.evictable)
			}
			if s.PrefixCacheHits > s.PrefixCacheQueries || (e.cfg.NoPrefixCaching && s.PrefixCachedBlocks != 0) {
				t.Fatalf("seed %d: %d hits of %d queries, %d cached blocks", seed, s.PrefixCacheHits, s.PrefixCacheQueries, s.PrefixCachedBlocks)
			}
			if s.Running > e.cfg.MaxNumSeqs {
				t.Fatalf("seed %d: %d running > max %d", seed, s.Running, e.cfg.MaxNumSeqs)
			}
			for i := 0; i < e.waiting.len(); i++ {
				if w := e.reqs[e.waiting.buf[(e.waiting.head+i)%len(e.waiting.buf)]]; w.blocks != 0 || w.computed != 0 || len(w.cached) != 0 {
					t.Fatalf("seed %d: waiting request %d holds %d blocks", seed, w.id, w.blocks)
				}
			}
		}
		for e.HasWork() {
			e.Step(emit)
		}
		for id, n := range want {
			if !canceled[id] && (!finished[id] || got[id] != n) {
				t.Fatalf("seed %d: request %d got %d of %d tokens (finished %v)", seed, id, got[id], n, finished[id])
			}
		}
		s := e.Stats()
		if s.KVBlocksUsed != 0 || len(e.byID) != 0 {
			t.Fatalf("seed %d: idle engine holds %d blocks and %d requests", seed, s.KVBlocksUsed, len(e.byID))
		}
		preemptions += s.Preemptions
		rejected += s.Rejected
		hits += s.PrefixCacheHits
	}
	if preemptions == 0 || rejected == 0 || hits == 0 {
		t.Errorf("the random runs should exercise preemption (%d), rejection (%d) and prefix hits (%d tokens)", preemptions, rejected, hits)
	}
	t.Logf("%d preemptions, %d rejections, %d prefix-hit tokens", preemptions, rejected, hits)
}
