package web

import (
	"context"
	"testing"
)

// The one-step-at-a-time view's steps are the engine's own: each step's
// decode and prefill requests fill at most max_num_seqs slots, its tokens
// (one a decoding request, the prompt chunks) fit max_num_batched_tokens,
// the first step only prefills, a prefill chunk joins a decode batch, and a
// run whose KV cache overflows shows the steps that preempted.
func TestEngineStepsAreTheEngines(t *testing.T) {
	for _, c := range []struct {
		name    string
		p       SimParams
		preempt bool
	}{
		{"rate 20", SimParams{LoadKind: "rate", Load: 20, InputTokens: "512", OutputTokens: "128", MaxNumSeqs: 256, Lifecycle: true}, false},
		{"long answers, 256 users", SimParams{LoadKind: "concurrency", Load: 256, InputTokens: "4096", OutputTokens: "2048", MaxNumSeqs: 256, Lifecycle: true}, true},
	} {
		su, err := c.p.setup()
		if err != nil {
			t.Fatal(err)
		}
		out, err := su.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st := out.Steps
		if st == nil || len(st.StartMS) == 0 {
			t.Fatalf("%s: no engine steps", c.name)
		}
		mixed, preempted := 0, 0
		for i := range st.StartMS {
			slots, tokens := st.Decode[i]+st.Prefill[i], st.Decode[i]+st.PrefillTokens[i]
			if slots > st.MaxNumSeqs || tokens > st.MaxNumBatchedTokens || (st.Prefill[i] > 0) != (st.PrefillTokens[i] > 0) {
				t.Fatalf("%s step %d: %d decode + %d prefill requests (%d prompt tokens) against %d slots and %d tokens a step",
					c.name, st.First+i, st.Decode[i], st.Prefill[i], st.PrefillTokens[i], st.MaxNumSeqs, st.MaxNumBatchedTokens)
			}
			if st.Decode[i] > 0 && st.Prefill[i] > 0 {
				mixed++
			}
			preempted += st.Preempted[i]
		}
		t.Logf("%s: %d steps shown of %d from step %d; %d mix a prefill chunk into a decode batch; %d preemptions shown, %d in the run",
			c.name, len(st.StartMS), st.Total, st.First, mixed, preempted, out.Summary.Preemptions)
		if st.First == 0 && (st.Decode[0] != 0 || st.Prefill[0] == 0) {
			t.Errorf("%s: the first step decodes %d and prefills %d: want only prefill", c.name, st.Decode[0], st.Prefill[0])
		}
		if mixed == 0 {
			t.Errorf("%s: no step joins a prefill chunk to a decode batch", c.name)
		}
		if c.preempt && (out.Summary.Preemptions == 0 || preempted == 0) {
			t.Errorf("%s: %d preemptions in the run, %d in the steps shown: want the view to show them", c.name, out.Summary.Preemptions, preempted)
		}
	}
}
