package simengine

import "testing"

// TestSeparatePrefillPausesDecodes: under SGLang's default scheduler a step
// runs prompt work or decodes, never both, prompt work first. A request
// decoding when a three-chunk prompt arrives makes no progress until the
// prompt's last chunk has run; with vLLM's mixed steps it decodes in each.
func TestSeparatePrefillPausesDecodes(t *testing.T) {
	for _, separate := range []bool{false, true} {
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
			c.MaxNumBatchedTokens = 2048
			c.SeparatePrefill = separate
			c.NoAsyncScheduling = true
		})
		if err := e.Submit(1, 100, 50); err != nil {
			t.Fatal(err)
		}
		for range 5 { // its prefill, then decodes
			e.Step(nil)
		}
		if err := e.Submit(2, 3*2048-10, 5); err != nil {
			t.Fatal(err)
		}
		decodedDuringPrompt, mixed := 0, 0
		for step := 0; step < 3; step++ {
			e.Step(func(em Emission) {
				if em.ID == 1 {
					decodedDuringPrompt++
				}
			})
			st := e.Stats()
			if st.LastStepPrefillTokens > 0 && st.LastStepNewTokens > st.LastStepPrefillTokens {
				mixed++
			}
			if separate && st.LastStepBatch != 1 {
				t.Errorf("separate: step %d runs %d requests, want the prompt alone", step, st.LastStepBatch)
			}
		}
		switch {
		case separate && (decodedDuringPrompt != 0 || mixed != 0):
			t.Errorf("separate: the decode made %d tokens in the prompt's 3 chunks (%d mixed steps), want 0", decodedDuringPrompt, mixed)
		case !separate && (decodedDuringPrompt != 3 || mixed != 3):
			t.Errorf("mixed: the decode made %d tokens in the prompt's 3 chunks (%d mixed steps), want 3", decodedDuringPrompt, mixed)
		}
		// Then both decode together.
		n := 0
		e.Step(func(em Emission) { n++ })
		if n != 2 || e.Stats().LastStepPrefillTokens != 0 {
			t.Errorf("separate=%v: the step after the prompt emits %d tokens (%d prefill tokens), want 2 decodes", separate, n, e.Stats().LastStepPrefillTokens)
		}
	}
}

// TestSeparatePrefillAdmitsWholePrompts: SGLang admits a request only when
// its whole prompt fits beside the prompts already running, where vLLM
// starts a prompt whose first chunk fits and preempts later if it must.
func TestSeparatePrefillAdmitsWholePrompts(t *testing.T) {
	for _, separate := range []bool{false, true} {
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
			c.MaxNumBatchedTokens = 2048
			c.MaxModelLen = 32768
			c.SeparatePrefill = separate
			c.NoAsyncScheduling = true
		})
		// Fill the cache with running requests, one at a time, until
		// fewer than 12,000 tokens are free.
		id := int64(1)
		freeTokens := func() int { st := e.Stats(); return (st.KVBlocksTotal - st.KVBlocksUsed) * BlockTokens }
		for freeTokens() > 12000 {
			if err := e.Submit(id, min(6000, freeTokens()-6000), 20000); err != nil {
				t.Fatal(err)
			}
			id++
			for e.Stats().Waiting > 0 || e.Stats().LastStepPrefillTokens > 0 {
				e.Step(nil) // until its whole prompt has run
			}
		}
		free := e.Stats().KVBlocksTotal - e.Stats().KVBlocksUsed
		if free*BlockTokens < 2048 {
			t.Fatalf("%d free blocks: the first chunk would not fit", free)
		}
		// A prompt longer than the free blocks but whose first chunk fits.
		long := (free + 20) * BlockTokens
		if err := e.Submit(id, long, 1); err != nil {
			t.Fatal(err)
		}
		e.Step(nil)
		admitted := e.Stats().Waiting == 0
		if admitted == separate {
			t.Errorf("separate=%v: a %d-token prompt with %d free blocks admitted=%v", separate, long, free, admitted)
		}
	}
}

// TestRunningCapFromKV: SGLang's max_running_requests from the KV cache
// (half its tokens, its request pool of max(tokens / context × 512, 2048)
// up to 4096); a cap given stays.
func TestRunningCapFromKV(t *testing.T) {
	e := mustEngine(t, "h200", "llama-3.1-8b", 1, func(c *Config) { c.RunningCapFromKV = true })
	kv := e.Stats().KVCapacityTokens
	want := min(kv/2, min(max(kv*512/e.Config().Model.MaxContext, 2048), 4096))
	if got := e.Config().MaxNumSeqs; got != want || got <= 1024 {
		t.Errorf("cap from %d KV tokens = %d, want %d (above vLLM's 1024)", kv, got, want)
	}
	e = mustEngine(t, "h200", "llama-3.1-8b", 1, func(c *Config) { c.RunningCapFromKV, c.MaxNumSeqs = true, 64 })
	if got := e.Config().MaxNumSeqs; got != 64 {
		t.Errorf("a given cap of 64 became %d", got)
	}
}
