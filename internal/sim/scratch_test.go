package sim

import (
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
)

func TestScratchL4(t *testing.T) {
	for _, c := range []int{1, 2, 4, 8, 16, 32} {
		cfg := engineConfig(t, "l4", "llama-3.1-8b", 1)
		m := simengine.Model{Name: "Qwen2.5-0.5B", Layers: 24, HiddenSize: 896, Heads: 14, KVHeads: 2, HeadDim: 64,
			FFNSize: 4864, VocabSize: 151936, MaxContext: 32768, WeightPrecision: "bf16", TiedEmbeddings: true}
		cfg.Model = m
		cfg.GPUMemoryUtilization, cfg.MaxModelLen = 0.6, 8192
		var ttft, itl []float64
		var tokens int
		res, err := Run(t.Context(), Config{Engine: cfg, Gen: fixed{256, 128}, Concurrency: c, Requests: int64(c * 20), KeepTokenTimes: true}, nil)
		_ = res
		_ = err
		_ = ttft
		_ = itl
		_ = tokens
		recs, r2, err := Collect(t.Context(), Config{Engine: cfg, Gen: fixed{256, 128}, Concurrency: c, Requests: int64(c * 20)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			v, _ := r.TTFT()
			ttft = append(ttft, float64(v)/1e6)
			itl = append(itl, float64(r.Done-r.FirstToken)/1e6/127)
			tokens += r.OutputTokens
		}
		t.Logf("C=%d TTFT p50 %.1f ITL(mean gap) p50 %.2f out tok/s %.0f", c, quantile(ttft, 0.5), quantile(itl, 0.5), float64(tokens)/r2.End.Seconds())
	}
}
