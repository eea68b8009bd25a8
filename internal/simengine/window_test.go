package simengine

import (
	"strings"
	"testing"
)

// fullAttention is m with its sliding-window layers counted as full
// attention: knee's accounting before it modelled the window.
func fullAttention(m Model) Model {
	m.SlidingWindow, m.SlidingLayers = 0, 0
	return m
}

// gptOSSWindow is gpt-oss's attention as its config.json has it
// (layer_types: every other layer of 36 sliding_attention; sliding_window
// 128).
func gptOSSWindow(m Model) Model {
	m.SlidingWindow, m.SlidingLayers = 128, 18
	return m
}

func gptOSS120b(t *testing.T) Model {
	t.Helper()
	m, err := LookupModel("gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	return gptOSSWindow(m)
}

// gpt-oss-120b alternates windowed (128) and full layers: on one H100 the
// pool holds twice the tokens it would if every layer kept the whole
// context (half the layers cache per token), and a request's windowed
// layers hold a bounded number of blocks however long it grows.
func TestSlidingWindowKVCapacity(t *testing.T) {
	m := gptOSS120b(t)
	// 18 full layers × 8 KV heads × 64 × K and V × 2 bytes.
	if got := m.FullKVBytesPerToken(1); got != 18*8*64*2*2 {
		t.Errorf("full-attention KV per token %v bytes, want %d", got, 18*8*64*2*2)
	}
	if got, want := m.KVBytes(100_000, 1), 100_000*m.FullKVBytesPerToken(1)+128*m.WindowKVBytesPerToken(1); got != want {
		t.Errorf("KVBytes(100000) = %v, want %v (windowed layers hold 128 tokens)", got, want)
	}
	win := mustEngine(t, "h100", "gpt-oss-120b", 1, func(c *Config) { c.Model = gptOSSWindow(c.Model) })
	full := mustEngine(t, "h100", "gpt-oss-120b", 1, func(c *Config) { c.Model = fullAttention(c.Model) })
	wc, fc := win.Stats().KVCapacityTokens, full.Stats().KVCapacityTokens
	t.Logf("gpt-oss-120b, one H100: %d tokens of KV with the window, %d without", wc, fc)
	if r := float64(wc) / float64(fc); r < 1.99 || r > 2.01 {
		t.Errorf("KV capacity with the window %d tokens, without %d: ratio %.3f, want 2", wc, fc, r)
	}

	// One 20,000-token prompt, then decoding: once a decode step has run
	// (the last prompt chunk's blocks are freed as they leave the window)
	// the windowed layers hold the window's blocks (128/16, or one more
	// when it starts inside a block) beside the full layers'
	// blocksFor(context), in pool blocks (one windowed layer per full one).
	if err := win.Submit(1, 20_000, 50); err != nil {
		t.Fatal(err)
	}
	tokens := 0
	for win.HasWork() {
		win.Step(func(Emission) { tokens++ })
		if tokens < 2 || !win.HasWork() {
			continue
		}
		ctx := int32(20_000 + tokens - 1) // computed tokens after this step
		used := win.Stats().KVBlocksUsed
		if lim := int(blocksFor(ctx)) + 128/BlockTokens + 1; used > lim || used < int(blocksFor(ctx))+128/BlockTokens {
			t.Fatalf("after %d tokens of context %d blocks in use, want %d full ones and 8 or 9 windowed", ctx, used, blocksFor(ctx))
		}
	}
	if used := win.Stats().KVBlocksUsed; used != 0 {
		t.Errorf("%d blocks still in use after the request finished", used)
	}
}

// A windowed layer's attention reads at most its window: a decode's KV
// read and pairs stop growing with the context, a prompt chunk's pairs are
// Σ min(position, window).
func TestSlidingWindowAttentionBounded(t *testing.T) {
	for _, c := range []struct{ c, n, w, want int64 }{
		{0, 1, 128, 1}, {127, 1, 128, 128}, {10_000, 1, 128, 128},
		{0, 1000, 128, 128*129/2 + (1000-128)*128}, {100, 10, 128, 101 + 102 + 103 + 104 + 105 + 106 + 107 + 108 + 109 + 110},
		{120, 20, 128, (121+128)*8/2 + 12*128},
	} {
		if got := windowPairs(c.c, c.n, c.w); got != c.want {
			t.Errorf("windowPairs(%d, %d, %d) = %d, want %d", c.c, c.n, c.w, got, c.want)
		}
	}
	// The step's KV time for one decode: the full layers read the whole
	// context, the windowed ones 128 tokens; without the window all 36
	// layers read it all.
	m := gptOSS120b(t)
	g, _ := LookupGPU("h100")
	for _, ctx := range []int64{4096, 32_000} {
		s := DecodeShape(1, ctx)
		s.WinCtxTokens, s.WinAttnPairs = 128, 128
		w := StepCostTerms(g, m, 1, s)
		f := StepCostTerms(g, fullAttention(m), 1, DecodeShape(1, ctx))
		want := float64(ctx+1+128) / float64(2*(ctx+1)) // (18 × ctx + 18 × 128) / (36 × ctx)
		if r := w.KVNS / f.KVNS; r < want*0.999 || r > want*1.001 {
			t.Errorf("context %d: windowed KV read %.4g of full attention's, want %.4g", ctx, r, want)
		}
		if r := w.AttnNS / f.AttnNS; r < want*0.999 || r > want*1.001 {
			t.Errorf("context %d: windowed attention arithmetic %.4g of full attention's, want %.4g", ctx, r, want)
		}
	}
	// The engine prices its own steps so: a decode at a long context costs
	// less with the window than without it.
	var dt [2]int64
	for i, mod := range []func(*Config){func(c *Config) { c.Model = gptOSSWindow(c.Model) }, nil} {
		e := mustEngine(t, "h100", "gpt-oss-120b", 1, mod)
		if err := e.Submit(1, 30_000, 3); err != nil {
			t.Fatal(err)
		}
		for e.HasWork() {
			dt[i] = e.Step(func(Emission) {})
		}
	}
	if dt[0] >= dt[1] {
		t.Errorf("last decode step at 30,000 tokens: %d ns with the window, %d without; want less", dt[0], dt[1])
	}
}

func TestSlidingWindowPresetFormat(t *testing.T) {
	base := "name: x\nlayers: 4\nhidden_size: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\nffn_size: 128\nvocab_size: 100\nmax_context: 4096\nweight_precision: bf16\n"
	m, err := ParseModel([]byte(base + "sliding_window: 512\nsliding_layers: 3\n"))
	if err != nil || m.SlidingWindow != 512 || m.SlidingLayers != 3 {
		t.Fatalf("ParseModel: %+v, %v; want window 512 over 3 layers", m, err)
	}
	for _, bad := range []string{"sliding_window: 512\n", "sliding_layers: 2\n", "sliding_window: 512\nsliding_layers: 5\n", "sliding_window: -1\nsliding_layers: 2\n"} {
		if _, err := ParseModel([]byte(base + bad)); err == nil || !strings.Contains(err.Error(), "sliding") {
			t.Errorf("ParseModel with %q: err %v, want one naming the sliding window", bad, err)
		}
	}
}
