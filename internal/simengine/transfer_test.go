package simengine

import "testing"

// A request whose prompt KV arrives with it (disaggregated prefill) starts
// with a one-token step, a decode's cost, and holds blocks for the whole
// prompt; the same request computed here pays the prefill.
func TestTransferredTokensSkipPrefill(t *testing.T) {
	const in, out = 8000, 32
	local := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	ttftLocal, tpotLocal := single(t, local, in, out)
	moved := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	if err := moved.SubmitRequest(Request{ID: 1, InputTokens: in, OutputTokens: out, TransferredTokens: in - 1}); err != nil {
		t.Fatal(err)
	}
	var first, last int64
	moved.Step(func(em Emission) { first = em.Time })
	if s := moved.Stats(); s.KVBlocksUsed != int(blocksFor(in)) || s.PrefillTokens != 0 || s.PrefixCacheQueries != 0 {
		t.Fatalf("after the first step: %d blocks used (want %d), %d prefill tokens (want 0: the last prompt token steps as a decode), %d prefix queries (want 0)",
			s.KVBlocksUsed, blocksFor(in), s.PrefillTokens, s.PrefixCacheQueries)
	}
	for moved.HasWork() {
		moved.Step(func(em Emission) { last = em.Time })
	}
	ttftMoved := float64(first) / 1e6
	tpotMoved := float64(last-first) / 1e6 / (out - 1)
	t.Logf("8000-token prompt: TTFT %.1f ms computed here, %.1f ms with its KV transferred; TPOT %.2f vs %.2f ms", ttftLocal, ttftMoved, tpotLocal, tpotMoved)
	if ttftMoved > 1.5*tpotLocal || ttftLocal < 10*ttftMoved {
		t.Errorf("first step with transferred KV %.1f ms, want about one decode step (%.1f ms), far below the local prefill %.1f ms", ttftMoved, tpotLocal, ttftLocal)
	}
	if d := tpotMoved - tpotLocal; d > 0.01*tpotLocal || d < -0.01*tpotLocal {
		t.Errorf("TPOT %.3f ms with transferred KV, %.3f ms local: the decode should not differ", tpotMoved, tpotLocal)
	}
	for _, bad := range []int{-1, in} {
		if err := moved.SubmitRequest(Request{ID: 2, InputTokens: in, OutputTokens: out, TransferredTokens: bad}); err == nil {
			t.Errorf("TransferredTokens %d of %d: want an error", bad, in)
		}
	}
}
