package simengine

import (
	"math/rand/v2"
	"testing"
)

// Random submits, cancels and steps on a small KV cache keep the engine's
// books straight: blocks held add up, limits hold, and every request that is
// not canceled emits exactly its output tokens, in order, once each.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	var preemptions, rejected int64
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
			c.MaxNumSeqs = 1 + rng.IntN(16)
			c.MaxNumBatchedTokens = max(c.MaxNumSeqs, 16+rng.IntN(600))
			c.QueueLimit = rng.IntN(20)
			c.ChunkedPrefill = true
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
				if err := e.Submit(next, in, out); err == nil {
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
			held := 0
			for _, slot := range e.running {
				held += int(e.reqs[slot].blocks)
			}
			s := e.Stats()
			if held != s.KVBlocksUsed || s.KVBlocksUsed < 0 || s.KVBlocksUsed > blocks {
				t.Fatalf("seed %d op %d: running hold %d blocks, stats say %d of %d", seed, op, held, s.KVBlocksUsed, blocks)
			}
			if s.Running > e.cfg.MaxNumSeqs {
				t.Fatalf("seed %d: %d running > max %d", seed, s.Running, e.cfg.MaxNumSeqs)
			}
			for i := 0; i < e.waiting.len(); i++ {
				if w := e.reqs[e.waiting.buf[(e.waiting.head+i)%len(e.waiting.buf)]]; w.blocks != 0 || w.computed != 0 {
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
	}
	if preemptions == 0 || rejected == 0 {
		t.Errorf("the random runs should exercise preemption (%d) and rejection (%d)", preemptions, rejected)
	}
	t.Logf("%d preemptions, %d rejections", preemptions, rejected)
}
