package simengine

import (
	"errors"
	"testing"
)

// An engine without chunked prefill that refuses long prompts
// (TensorRT-LLM) starts with a budget under its max model len, refuses a
// prompt over the budget as too long, and serves a prompt within it
// however long its answer; without RefuseLongPrompts (vLLM) that budget
// is a configuration error.
func TestRefuseLongPrompts(t *testing.T) {
	mod := func(c *Config) {
		c.ChunkedPrefill, c.RefuseLongPrompts = false, true
		c.MaxNumBatchedTokens, c.MaxNumSeqs = 256, 4
	}
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, mod)
	if got := e.Config().MaxModelLen; got <= 256 {
		t.Fatalf("max model len %d, want the model's context, over the 256-token budget", got)
	}
	err := e.Submit(1, 257, 4)
	if !errors.Is(err, ErrPromptOverBudget) || !errors.Is(err, ErrTooLong) {
		t.Errorf("a 257-token prompt on a 256-token budget: %v, want ErrPromptOverBudget (an ErrTooLong)", err)
	}
	if err := e.Submit(2, 256, 1000); err != nil {
		t.Fatalf("a 256-token prompt with 1,000 tokens to answer: %v", err)
	}
	if got := len(stepAll(e)[2]); got != 1000 {
		t.Errorf("request 2 emitted %d tokens, want 1000", got)
	}

	cfg := mustConfig(t, "h100", "llama-3.1-8b", 1)
	m := cfg.Model
	mod(&cfg)
	cfg.RefuseLongPrompts = false
	if _, err := NewEngine(cfg); !errors.Is(err, ErrBadEngineCfg) {
		t.Errorf("vLLM without chunked prefill, budget 256 under max model len %d: %v, want ErrBadEngineCfg", m.MaxContext, err)
	}
}

// A request preempted after its prompt and answer so far outgrew the
// whole step budget is recomputed in chunks: unchunked, it would wait
// for a step that can never hold it and stall the queue behind it.
func TestRefuseLongPromptsRecomputesInChunks(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
		c.ChunkedPrefill, c.RefuseLongPrompts = false, true
		c.MaxNumBatchedTokens, c.MaxNumSeqs = 256, 4
		c.NoPrefixCaching = true // a cached prompt would shorten the recompute
	})
	// 40 blocks (640 tokens): two 240-token prompts fit, and preempt one
	// another once each has ~80 tokens of answer (320 > 256 to recompute).
	e.freeBlocks, e.st.KVBlocksTotal = 40, 40
	for id := int64(1); id <= 3; id++ {
		if err := e.Submit(id, 240, 200); err != nil {
			t.Fatal(err)
		}
	}
	tokens := map[int64]int{}
	for steps := 0; e.HasWork(); steps++ {
		if steps > 10_000 {
			t.Fatalf("still working after %d steps: %+v (a recompute over the budget stalled)", steps, e.Stats())
		}
		e.Step(func(em Emission) { tokens[em.ID]++ })
	}
	if e.Stats().Preemptions == 0 {
		t.Fatal("no preemption: the case does not test a recompute over the budget")
	}
	for id := int64(1); id <= 3; id++ {
		if tokens[id] != 200 {
			t.Errorf("request %d emitted %d tokens, want 200", id, tokens[id])
		}
	}
	if e.Stats().KVBlocksUsed != 0 {
		t.Errorf("blocks leaked: %d", e.Stats().KVBlocksUsed)
	}
}
