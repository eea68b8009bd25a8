package simengine

import "testing"

// loraRun submits n requests at once, cycling through adapters (0 is the
// base model), runs them to the end and returns the mean TTFT in ms of
// each adapter's requests, the most distinct adapters seen running in one
// step, and the loads.
func loraRun(t *testing.T, maxLoRAs int, adapters []int32, n int) (ttft map[int32]float64, maxDistinct int, loads int64) {
	t.Helper()
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
		c.LoRA = LoRAConfig{MaxLoRAs: maxLoRAs, MaxLoRARank: 16, LoadNS: 5e6}
	})
	adapterOf := map[int64]int32{}
	for i := range n {
		a := adapters[i%len(adapters)]
		adapterOf[int64(i)] = a
		if err := e.SubmitRequest(Request{ID: int64(i), InputTokens: 256, OutputTokens: 64, Adapter: a}); err != nil {
			t.Fatal(err)
		}
	}
	sum, cnt := map[int32]float64{}, map[int32]int{}
	for e.HasWork() {
		e.Step(func(em Emission) {
			if em.Index == 0 {
				a := adapterOf[em.ID]
				sum[a] += float64(em.Time) / 1e6
				cnt[a]++
			}
		})
		distinct := map[int32]bool{}
		for _, s := range e.running {
			if a := e.reqs[s].adapter; a != 0 {
				distinct[a] = true
			}
		}
		maxDistinct = max(maxDistinct, len(distinct))
	}
	ttft = map[int32]float64{}
	for a, s := range sum {
		ttft[a] = s / float64(cnt[a])
	}
	return ttft, maxDistinct, e.LoRALoads()
}

// TestLoRASlotsLimitTheBatch: with one adapter slot, a step never runs two
// adapters, so the second adapter's requests wait for the first's to end
// (and each switch pays a load); with two slots both run at once. The base
// model's requests are never held back.
func TestLoRASlotsLimitTheBatch(t *testing.T) {
	adapters := []int32{1, 2, 0}
	one, distinct1, loads1 := loraRun(t, 1, adapters, 48)
	two, distinct2, loads2 := loraRun(t, 2, adapters, 48)
	t.Logf("max-loras 1: TTFT %v ms, %d loads; max-loras 2: TTFT %v ms, %d loads", one, loads1, two, loads2)
	if distinct1 != 1 || distinct2 != 2 {
		t.Errorf("most distinct adapters in a step: %d with one slot, %d with two; want 1 and 2", distinct1, distinct2)
	}
	if loads1 < 2 || loads2 != 2 {
		t.Errorf("loads: %d with one slot (want >= 2: each adapter loaded), %d with two (want 2)", loads1, loads2)
	}
	if one[2] < 2*two[2] {
		t.Errorf("adapter 2's mean TTFT %.1f ms with one slot vs %.1f ms with two: the slot limit must make it wait", one[2], two[2])
	}
	if one[0] > 1.5*two[0] {
		t.Errorf("base model mean TTFT %.1f ms with one slot vs %.1f with two: base requests must not wait for a slot", one[0], two[0])
	}
}

func TestLoRAAdapterNeedsSlots(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	if err := e.SubmitRequest(Request{ID: 1, InputTokens: 8, OutputTokens: 1, Adapter: 1}); err == nil {
		t.Error("an adapter request on an engine without LoRA was accepted")
	}
	cfg := mustConfig(t, "h100", "llama-3.1-8b", 1)
	cfg.LoRA.MaxLoRAs = -1
	if _, err := NewEngine(cfg); err == nil {
		t.Error("negative max loras accepted")
	}
	// The derived load time: rank 16 over 32 layers of 4096 in BF16 at 25 GB/s.
	st, err := newLoRAState(LoRAConfig{MaxLoRAs: 1}, cfg.Model)
	if err != nil || st.loadNS < 1e6 || st.loadNS > 2e6 {
		t.Errorf("derived load %d ns (%v), want about 1.3 ms", st.loadNS, err)
	}
}
