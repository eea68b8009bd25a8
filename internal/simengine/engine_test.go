package simengine

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestLookupAliases(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"h100", "H100-SXM"}, {"H100-SXM", "H100-SXM"}, {"h100_sxm5", "H100-SXM"}, {"A100", "A100-80GB"},
		{"a100-40gb", "A100-40GB"}, {"H200", "H200"}, {"l4", "L4"},
	} {
		g, err := LookupGPU(c.in)
		if err != nil || g.Name != c.want {
			t.Errorf("LookupGPU(%q) = %q, %v; want %q", c.in, g.Name, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"llama-3.1-8b", "Llama-3.1-8B"}, {"meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B"}, {"LLAMA3.1-70B", "Llama-3.1-70B"},
		{"llama-2-7b", "Llama-2-7B"}, {"Llama-2-70b-chat-hf", "Llama-2-70B"}, {"qwen3-8b", "Qwen3-8B"},
		{"Qwen/Qwen2.5-0.5B-Instruct", "Qwen2.5-0.5B"}, {"Qwen/Qwen3-0.6B", "Qwen3-0.6B"},
	} {
		m, err := LookupModel(c.in)
		if err != nil || m.Name != c.want {
			t.Errorf("LookupModel(%q) = %q, %v; want %q", c.in, m.Name, err, c.want)
		}
	}
	gpus, models := Presets()
	if len(gpus) != 15 || len(models) != 27 {
		t.Errorf("Presets() = %v, %v; want 15 GPUs and 27 models", gpus, models)
	}
}

// The presets' parameter counts agree with the published model sizes.
func TestModelParams(t *testing.T) {
	for _, c := range []struct {
		name      string
		billions  float64
		kvPerTokK float64 // KiB of KV per token at tp 1
	}{{"llama-3.1-8b", 8.03, 128}, {"llama-3.1-70b", 70.6, 320}, {"llama-2-7b", 6.74, 512}, {"llama-2-70b", 69.0, 320}, {"qwen3-8b", 8.19, 144},
		{"mixtral-8x7b", 46.7, 128}, {"qwen3-30b-a3b", 30.5, 96}, {"codellama-34b", 33.7, 192}, {"llama-3.1-70b-fp8", 70.6, 320},
		{"qwen2.5-0.5b", 0.494, 12}, {"qwen3-0.6b", 0.596, 112}, {"qwen3-14b", 14.77, 160}, {"qwen3-235b-a22b", 235.1, 188}} {
		m, _ := LookupModel(c.name)
		got := m.Params() / 1e9
		if got < c.billions*0.98 || got > c.billions*1.02 {
			t.Errorf("%s: %.2fB parameters, want %.2fB ±2%%", c.name, got, c.billions)
		}
		if kv := m.KVBytesPerToken(1) / 1024; kv != c.kvPerTokK {
			t.Errorf("%s: %.0f KiB KV per token, want %.0f", c.name, kv, c.kvPerTokK)
		}
	}
	// Mixtures of experts: the active parameters per token, as published
	// (Mixtral 12.9B of 46.7B; Qwen3-30B-A3B 3.3B of 30.5B).
	for _, c := range []struct {
		name     string
		billions float64
	}{{"mixtral-8x7b", 12.9}, {"qwen3-30b-a3b", 3.3}, {"qwen3-235b-a22b", 22.2}, {"llama-3.1-8b", 8.03}} {
		m, _ := LookupModel(c.name)
		if got := m.ActiveParams() / 1e9; got < c.billions*0.97 || got > c.billions*1.03 {
			t.Errorf("%s: %.2fB active parameters, want %.2fB ±3%%", c.name, got, c.billions)
		}
	}
	// FP8 weights take half the bytes of BF16 ones, but for the
	// embedding table and LM head (2 × 128,256 × 8,192 weights), which FP8
	// checkpoints keep in 16 bits: 72.6 GB, not 70.6 / 2 × 2 = 70.6.
	bf, _ := LookupModel("llama-3.1-70b")
	f8, _ := LookupModel("llama-3.1-70b-fp8")
	emb := 2 * float64(bf.VocabSize) * float64(bf.HiddenSize)
	if got, want := f8.WeightBytes(), bf.Params()-emb+2*emb; math.Abs(got-want) > 1 {
		t.Errorf("Llama-3.1-70B-FP8 weights %.4g bytes, want %.4g (FP8 layers, 16-bit embedding and head)", got, want)
	}
	if r := f8.WeightBytes() / bf.WeightBytes(); r <= 0.5 || r > 0.52 {
		t.Errorf("FP8/BF16 weight bytes = %v, want just above 0.5", r)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := LookupGPU("h900"); err == nil || !strings.Contains(err.Error(), `"h900"`) || !strings.Contains(err.Error(), "H100-SXM") {
		t.Errorf("unknown GPU: %v; want the name and the known presets", err)
	}
	if _, err := LookupModel("gpt-5"); err == nil || !strings.Contains(err.Error(), "Llama-3.1-8B") {
		t.Errorf("unknown model: %v", err)
	}
	g, _ := LookupGPU("a100-40gb")
	m, _ := LookupModel("llama-3.1-70b")
	_, err := NewEngine(DefaultConfig(g, m, 1))
	if !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), "131.4 GiB of weights") || !strings.Contains(err.Error(), "36.0 GiB") {
		t.Errorf("70B on one A100-40GB: %v; want ErrDoesNotFit naming 131.4 GiB of weights and 36.0 GiB usable", err)
	}
	// Fits in weights, but the KV cache is smaller than one full context.
	l4, _ := LookupGPU("l4")
	m8, _ := LookupModel("llama-3.1-8b")
	cfg := DefaultConfig(l4, m8, 1)
	cfg.MaxModelLen = 131072
	_, err = NewEngine(cfg)
	if !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), "max model len is 131072") {
		t.Errorf("8B on L4 at full context: %v; want ErrDoesNotFit naming the max model len", err)
	}
	// Left to its default, the max model len shrinks to what the cache holds.
	if e, err := NewEngine(DefaultConfig(l4, m8, 1)); err != nil || e.Config().MaxModelLen != e.Stats().KVCapacityTokens || e.Config().MaxModelLen >= 131072 {
		t.Errorf("8B on L4, default max model len: %v", err)
	}
	h, _ := LookupGPU("h100")
	e, err := NewEngine(DefaultConfig(h, m8, 1))
	if err != nil {
		t.Fatal(err)
	}
	err = e.Submit(1, 131000, 500)
	if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "131000 prompt + 500 output = 131500 tokens") || !strings.Contains(err.Error(), "131072") {
		t.Errorf("too long: %v", err)
	}
	if err := e.Submit(2, 0, 5); !errors.Is(err, ErrBadRequest) {
		t.Errorf("empty prompt: %v", err)
	}
	if _, err := NewEngine(Config{GPU: h, Model: m8, TP: 3}); err == nil || !strings.Contains(err.Error(), "tp 3") {
		t.Errorf("tp 3 with 32 heads: %v", err)
	}
}

// stepAll steps until idle and returns per-request token times.
func stepAll(e *Engine) map[int64][]int64 {
	times := map[int64][]int64{}
	for e.HasWork() {
		e.Step(func(em Emission) { times[em.ID] = append(times[em.ID], em.Time) })
	}
	return times
}

func TestQueueLimitAndCancel(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) { c.QueueLimit = 2 })
	for id := int64(1); id <= 2; id++ {
		if err := e.Submit(id, 100, 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Submit(3, 100, 10); !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "limit 2") {
		t.Fatalf("third submit: %v; want ErrQueueFull naming the limit", err)
	}
	first := map[int64]int{}
	e.Step(func(em Emission) { first[em.ID]++ }) // both admitted: the queue empties
	// 100 prompt tokens computed each: 7 blocks of 16 each.
	if s := e.Stats(); s.Running != 2 || s.Waiting != 0 || s.KVBlocksUsed != 14 {
		t.Errorf("after one step: running %d waiting %d blocks %d; want 2, 0, 14", s.Running, s.Waiting, s.KVBlocksUsed)
	}
	used := e.Stats().KVBlocksUsed
	e.Cancel(1)
	s := e.Stats()
	if s.Running != 1 || s.Canceled != 1 || s.KVBlocksUsed != used/2 {
		t.Errorf("after cancel: running %d canceled %d blocks %d (was %d)", s.Running, s.Canceled, s.KVBlocksUsed, used)
	}
	times := stepAll(e)
	if n1, n2 := first[1]+len(times[1]), first[2]+len(times[2]); n1 != 1 || n2 != 10 {
		t.Errorf("tokens: canceled request %d (want 1, before the cancel), other %d (want 10)", n1, n2)
	}
	if s := e.Stats(); s.KVBlocksUsed != 0 || s.Running != 0 {
		t.Errorf("idle engine holds %d blocks, %d running", s.KVBlocksUsed, s.Running)
	}
}

// When blocks run out the newest running request is preempted, its blocks
// freed and its progress reset, and it goes back to the front of the queue;
// no request is admitted in that step. Every token is still emitted once.
func TestPreemptionNewestFirst(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	// Shrink the KV cache to 40 blocks (640 tokens).
	e.freeBlocks, e.st.KVBlocksTotal = 40, 40
	for id := int64(1); id <= 3; id++ {
		if err := e.Submit(id, 192, 200); err != nil { // 12 blocks of prompt each
			t.Fatal(err)
		}
	}
	var tokens = map[int64]int{}
	e.Step(func(em Emission) { tokens[em.ID]++ })
	if e.Stats().Running != 3 {
		t.Fatalf("running %d, want 3", e.Stats().Running)
	}
	// Request 4 waits behind them; the cache fills as they decode.
	if err := e.Submit(4, 16, 1); err != nil {
		t.Fatal(err)
	}
	for e.Stats().Preemptions == 0 {
		before := e.Stats()
		e.Step(func(em Emission) { tokens[em.ID]++ })
		if s := e.Stats(); s.Preemptions > 0 {
			if s.Running != before.Running-1 && s.Running != before.Running {
				t.Errorf("running %d → %d", before.Running, s.Running)
			}
			if front := e.reqs[e.waiting.front()]; front.id != 3 || front.computed != 0 || front.blocks != 0 {
				t.Errorf("front of queue is request %d (computed %d, blocks %d); want newest request 3, reset", front.id, front.computed, front.blocks)
			}
		}
	}
	rest := stepAll(e)
	for id, ts := range rest {
		tokens[id] += len(ts)
	}
	want := map[int64]int{1: 200, 2: 200, 3: 200, 4: 1}
	for id, n := range want {
		if tokens[id] != n {
			t.Errorf("request %d emitted %d tokens, want %d", id, tokens[id], n)
		}
	}
	if e.Stats().KVBlocksUsed != 0 {
		t.Errorf("blocks leaked: %d", e.Stats().KVBlocksUsed)
	}
}

// A long prompt arriving while others decode stalls them for one step of
// the whole prompt without chunking; with chunked prefill the stall is
// bounded by the token budget.
func TestChunkedPrefillBoundsITL(t *testing.T) {
	maxGap := func(chunked bool) int64 {
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) {
			c.ChunkedPrefill = chunked
			c.MaxModelLen = 16384
			c.MaxNumBatchedTokens = 512
			c.MaxNumSeqs = 64
			if !chunked {
				c.MaxNumBatchedTokens = 16384
			}
		})
		for id := int64(1); id <= 8; id++ {
			_ = e.Submit(id, 128, 64)
		}
		last := map[int64]int64{}
		var gap int64
		step := func(em Emission) {
			if em.ID <= 8 {
				if p, ok := last[em.ID]; ok && em.Time-p > gap {
					gap = em.Time - p
				}
				last[em.ID] = em.Time
			}
		}
		for range 10 {
			e.Step(step)
		}
		_ = e.Submit(100, 12000, 4)
		for e.HasWork() {
			e.Step(step)
		}
		return gap
	}
	chunked, whole := maxGap(true), maxGap(false)
	t.Logf("largest inter-token gap of running decodes: chunked %.1f ms, unchunked %.1f ms", float64(chunked)/1e6, float64(whole)/1e6)
	if chunked*5 > whole {
		t.Errorf("chunked prefill gap %d ns is not well below the unchunked %d ns", chunked, whole)
	}
	if chunked > 30e6 {
		t.Errorf("chunked prefill gap %.1f ms; a 512-token step should stay under 30 ms", float64(chunked)/1e6)
	}
}

// Submit arrivals never disturb the order: the same calls give the same
// emissions.
func TestEventQueueOrder(t *testing.T) {
	var q EventQueue
	q.Push(Event{Time: 5, Priority: 1, ID: 1})
	q.Push(Event{Time: 5, Priority: 0, ID: 2})
	q.Push(Event{Time: 3, Priority: 9, ID: 3})
	q.Push(Event{Time: 5, Priority: 0, ID: 4})
	q.Push(Event{Time: 7, ID: 5})
	var got []int64
	for q.Len() > 0 {
		got = append(got, q.Pop().ID)
	}
	want := []int64{3, 2, 4, 1, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestParsePresetErrors(t *testing.T) {
	if _, err := ParseGPU([]byte("name: x\nmemory_gib: lots\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad number: %v", err)
	}
	if _, err := ParseGPU([]byte("name: x\nflops: 3\n")); err == nil || !strings.Contains(err.Error(), `unknown key "flops"`) {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := ParseModel([]byte("name: m\nlayers: 2\nhidden_size: 64\nheads: 4\nkv_heads: 3\nhead_dim: 16\nffn_size: 128\nvocab_size: 100\nmax_context: 512\n")); err == nil || !strings.Contains(err.Error(), "multiple of kv_heads") {
		t.Errorf("bad heads: %v", err)
	}
}

// The hot loop allocates nothing: a step in steady state, with an emission
// callback, makes no allocation.
func TestStepDoesNotAllocate(t *testing.T) {
	e := mustEngine(t, "h100", "llama-3.1-8b", 1, nil)
	for id := int64(0); id < 200; id++ {
		if err := e.Submit(id, 300, 100000); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	emit := func(Emission) { n++ }
	for range 5 {
		e.Step(emit)
	}
	if allocs := testing.AllocsPerRun(200, func() { e.Step(emit) }); allocs != 0 {
		t.Errorf("Step allocates %.1f times per call", allocs)
	}
	if n < 200*200 {
		t.Errorf("only %d tokens emitted", n)
	}
}

// StepTimeScale slows every step by its factor; tensor parallelism speeds a
// compute-bound prefill but adds all-reduce time.
func TestStepTimeScaleAndTP(t *testing.T) {
	base := mustEngine(t, "h100", "llama-3.1-70b", 2, nil)
	slow := mustEngine(t, "h100", "llama-3.1-70b", 2, func(c *Config) { c.StepTimeScale = 3 })
	b1, _ := single(t, base, 2048, 8)
	s1, _ := single(t, slow, 2048, 8)
	if r := s1 / b1; r < 2.99 || r > 3.01 {
		t.Errorf("step time scale 3 gave a TTFT ratio of %.3f", r)
	}
	tp4 := mustEngine(t, "h100", "llama-3.1-70b", 4, nil)
	b4, _ := single(t, tp4, 2048, 8)
	if r := b1 / b4; r < 1.6 || r >= 2 {
		t.Errorf("TP2→TP4 prefill speed-up %.2f; want below 2 (all-reduce) and above 1.6", r)
	}
}

// TestStepCostTerms checks the exported terms against the engine's own
// pricing: a lone prompt's first token takes exactly one prefill step.
func TestStepCostTerms(t *testing.T) {
	for _, c := range []struct {
		model string
		tp    int
	}{{"llama-3.1-8b", 1}, {"llama-3.1-70b", 2}, {"llama-3.1-70b", 4}} {
		tp := c.tp
		e := mustEngine(t, "h100", c.model, tp, nil)
		if err := e.Submit(1, 1000, 4); err != nil {
			t.Fatal(err)
		}
		var first int64 = -1
		for first < 0 {
			e.Step(func(em Emission) {
				if em.Index == 0 {
					first = e.Now()
				}
			})
		}
		cfg := e.Config()
		k := StepCostTerms(cfg.GPU, cfg.Model, tp, PrefillShape(1000))
		p := DefaultCost
		em, ec := p.MemEfficiency, p.ComputeEfficiency
		want := float64(p.StepOverheadNS) + max(k.WeightNS/em, k.LinearNS/ec) + max(k.KVNS/em, k.AttnNS/ec) + k.AllReduceNS
		if d := float64(first) - want; d > 1 || d < -1 {
			t.Errorf("tp %d: first token at %d ns, terms give %.0f", tp, first, want)
		}
	}
}

// A large decode batch runs its GEMMs compute-bound and its attention
// memory-bound, one kernel after the other: the step takes the sum of the
// two, where one roofline over the whole step would take only the larger
// (TensorRT-LLM's 8B on an H200 decodes ~1,000 sequences in about that
// sum: docs/simulator.md, validation table).
func TestLargeDecodeBatchSumsItsKernels(t *testing.T) {
	e := mustEngine(t, "h200", "llama-3.1-8b-fp8", 1, nil)
	cfg := e.Config()
	const b, prompt = 512, 1100
	for i := range int64(b) {
		if err := e.Submit(i, prompt, 400); err != nil {
			t.Fatal(err)
		}
	}
	// Prefill every prompt (the first ones decode meanwhile), then time one
	// step that decodes all of them, over the context each has by then.
	emitted := make(map[int64]int64, b)
	for len(emitted) < b {
		e.Step(func(em Emission) { emitted[em.ID] = int64(em.Index) + 1 })
	}
	var ctx int64
	for _, n := range emitted {
		ctx += prompt + n
	}
	start := e.Now()
	n := 0
	e.Step(func(Emission) { n++ })
	if n != b {
		t.Fatalf("the decode step emitted %d tokens, want %d", n, b)
	}
	step := float64(e.Now() - start)
	k := StepCostTerms(cfg.GPU, cfg.Model, 1, StepShape{Seqs: b, NewTokens: b, Sampled: b, CtxTokens: ctx, AttnPairs: ctx})
	p := DefaultCost
	em, ec := p.MemEfficiency, p.ComputeEfficiency
	if !(k.LinearNS/ec > k.WeightNS/em && k.KVNS/em > k.AttnNS/ec) {
		t.Fatalf("want compute-bound GEMMs and memory-bound attention: %+v", k)
	}
	sum := float64(p.StepOverheadNS) + k.LinearNS/ec + k.KVNS/em
	oneRoofline := float64(p.StepOverheadNS) + max(k.MemNS()/em, k.CmpNS()/ec)
	if math.Abs(step-sum) > 0.001*sum {
		t.Errorf("decode step of %d sequences took %.2f ms, want the GEMMs' %.2f + attention's %.2f + T0 = %.2f ms (one roofline over the step: %.2f)",
			b, step/1e6, k.LinearNS/ec/1e6, k.KVNS/em/1e6, sum/1e6, oneRoofline/1e6)
	}
}

// Prefill computes at the GPU's measured achievable matmul rate, not its
// datasheet peak: the same prompt's compute term differs between the A100
// and the H100 by the ratio of their MAMF figures (794.5 / 271.2), not of
// their peaks (989 / 312); a GPU without a measured rate takes
// DefaultMatmulFraction of its peak; a measured rate above the peak is
// refused.
func TestComputeAtAchievableMatmulRate(t *testing.T) {
	a100, _ := LookupGPU("a100-80gb")
	h100, _ := LookupGPU("h100")
	m, _ := LookupModel("llama-3.1-8b")
	cmpA := StepCostTerms(a100, m, 1, PrefillShape(4096)).CmpNS()
	cmpH := StepCostTerms(h100, m, 1, PrefillShape(4096)).CmpNS()
	if got, want := cmpA/cmpH, 794.5/271.2; math.Abs(got/want-1) > 1e-9 {
		t.Errorf("A100/H100 prefill compute %.4f, want the achievable-rate ratio %.4f (peaks give %.4f)", got, want, 989.0/312)
	}
	l4, _ := LookupGPU("l4")
	if got := l4.AchievableBF16TFLOPS(); math.Abs(got-l4.BF16TFLOPS*DefaultMatmulFraction) > 1e-9 {
		t.Errorf("L4 (unmeasured) achievable rate %v, want %v × %v", got, l4.BF16TFLOPS, DefaultMatmulFraction)
	}
	if _, err := ParseGPU([]byte("name: x\nmemory_gib: 8\nbandwidth_gbps: 100\nbf16_tflops: 50\ninterconnect_gbps: 16\nbf16_matmul_tflops: 60\n")); err == nil || !strings.Contains(err.Error(), "bf16_matmul_tflops") {
		t.Errorf("matmul rate above the peak: %v", err)
	}
	g, err := ParseGPU([]byte("name: x\nmemory_gib: 8\nbandwidth_gbps: 100\nbf16_tflops: 50\ninterconnect_gbps: 16\nbf16_matmul_tflops: 40\n"))
	if err != nil || g.AchievableBF16TFLOPS() != 40 {
		t.Errorf("measured matmul rate: %v, %v", g.AchievableBF16TFLOPS(), err)
	}
}

// StepPerSeqNS prices every sequence a step runs: a decode step of 8
// sequences takes 8 × the cost more than the same step without it, and a
// lone prompt's step 1 × more.
func TestStepPerSeqCost(t *testing.T) {
	stepOf := func(perSeq int64, n int64) int64 {
		cost := DefaultCost
		cost.StepPerSeqNS = perSeq
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) { c.Cost = &cost })
		for i := range n {
			if err := e.Submit(i, 64, 8); err != nil {
				t.Fatal(err)
			}
		}
		e.Step(func(Emission) {}) // every prompt in one step
		start := e.Now()
		e.Step(func(Emission) {})
		return e.Now() - start
	}
	for _, n := range []int64{1, 8} {
		if d := stepOf(100_000, n) - stepOf(0, n); d != 100_000*n {
			t.Errorf("%d sequences: 100 µs a sequence made the decode step %d ns longer, want %d", n, d, 100_000*n)
		}
	}
}

// A request preempted by recompute finds its own blocks in the prefix
// cache when it is admitted again, as vLLM's (which hashes every full
// block, unique prompts' too), so it recomputes only what was evicted
// meanwhile; without prefix caching it recomputes all it had. Three
// requests of 192 + 200 tokens in a 640-token cache preempt each other as
// they grow.
func TestPreemptedRequestRecomputesOnlyEvictedBlocks(t *testing.T) {
	run := func(noCache bool) (recomputed, preemptions int64) {
		e := mustEngine(t, "h100", "llama-3.1-8b", 1, func(c *Config) { c.NoPrefixCaching = noCache })
		e.freeBlocks, e.st.KVBlocksTotal = 40, 40
		for id := int64(1); id <= 3; id++ {
			if err := e.Submit(id, 192, 200); err != nil {
				t.Fatal(err)
			}
		}
		tokens := map[int64]int{}
		for e.HasWork() {
			e.Step(func(em Emission) { tokens[em.ID]++ })
		}
		for id := int64(1); id <= 3; id++ {
			if tokens[id] != 200 {
				t.Errorf("request %d emitted %d tokens, want 200", id, tokens[id])
			}
		}
		if s := e.Stats(); s.KVBlocksUsed != 0 || s.PrefixCachedBlocks > s.KVBlocksTotal {
			t.Fatalf("blocks leaked: %d used, %d cached", s.KVBlocksUsed, s.PrefixCachedBlocks)
		}
		return e.Stats().PrefillTokens - 3*192, int64(e.Stats().Preemptions)
	}
	cached, nc := run(false)
	plain, np := run(true)
	t.Logf("recomputed %d tokens over %d preemptions with prefix caching, %d over %d without", cached, nc, plain, np)
	if np == 0 || nc == 0 {
		t.Fatalf("no preemption (%d, %d): the case does not test recompute", nc, np)
	}
	// Each preemption without the cache recomputes at least the prompt.
	if plain < np*192 {
		t.Errorf("without prefix caching %d tokens recomputed over %d preemptions, want at least the 192-token prompt each", plain, np)
	}
	if cached*2 > plain*nc/np {
		t.Errorf("with prefix caching %d tokens recomputed over %d preemptions, against %d over %d without: want under half as many a preemption", cached, nc, plain, np)
	}
}
