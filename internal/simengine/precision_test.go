package simengine

import (
	"strings"
	"testing"
)

// gpt-oss ships its experts in MXFP4 (4-bit values, one 8-bit scale a 32)
// and every other weight in BF16: the presets' weights agree with the
// checkpoint sizes the model card gives (60.8 and 12.8 GiB), where taking
// every weight at 4 bits gave 54.4 and 9.7.
func TestMixedPrecisionWeights(t *testing.T) {
	for _, c := range []struct {
		name string
		gib  float64
	}{{"gpt-oss-120b", 60.8}, {"gpt-oss-20b", 12.8}} {
		m, err := LookupModel(c.name)
		if err != nil {
			t.Fatal(err)
		}
		got := m.WeightBytes() / (1 << 30)
		if got < c.gib*0.98 || got > c.gib*1.02 {
			t.Errorf("%s: %.2f GiB of weights, want %.1f GiB ±2%%", c.name, got, c.gib)
		}
		experts := float64(m.Layers) * float64(m.Experts) * m.expertParams()
		if want := experts*0.53125 + (m.Params()-experts)*2; m.WeightBytes() != want {
			t.Errorf("%s: WeightBytes %v, want experts at 4.25 bits and the rest at 16: %v", c.name, m.WeightBytes(), want)
		}
	}
	// A step reads the dense weights at their own precision: a decode
	// of one token reads more than with every weight at 4 bits.
	m, _ := LookupModel("gpt-oss-120b")
	g, _ := LookupGPU("h100")
	all4 := m
	all4.WeightPrecision, all4.DenseWeightPrecision = "fp4", ""
	mixed, uniform := StepCostTerms(g, m, 1, DecodeShape(1, 1000)), StepCostTerms(g, all4, 1, DecodeShape(1, 1000))
	if mixed.WeightNS <= uniform.WeightNS {
		t.Errorf("one decode's weight reads: %.0f ns with BF16 attention and embeddings, %.0f with all at 4 bits; want more", mixed.WeightNS, uniform.WeightNS)
	}
	// Only a mixture of experts has weights outside its experts to set apart.
	base := "name: x\nlayers: 4\nhidden_size: 64\nheads: 4\nkv_heads: 2\nhead_dim: 16\nffn_size: 128\nvocab_size: 100\nmax_context: 4096\nweight_precision: mxfp4\n"
	if _, err := ParseModel([]byte(base + "dense_weight_precision: bf16\n")); err == nil || !strings.Contains(err.Error(), "dense_weight_precision") {
		t.Errorf("dense model with dense_weight_precision: err %v, want one naming it", err)
	}
	if m, err := ParseModel([]byte(base + "experts: 4\nexperts_per_token: 1\nexpert_ffn_size: 32\ndense_weight_precision: bf16\n")); err != nil || m.DenseWeightPrecision != "bf16" {
		t.Errorf("mixture with dense_weight_precision: %+v, %v", m, err)
	}
}
