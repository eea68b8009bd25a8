package simengine

import (
	"strings"
	"testing"
)

// A prediction on a GPU without a validated source gets a range at least
// as wide on each side as on a validated one, strictly wider on some
// metric, and says why; a validated GPU and an unnamed one get the
// baseline with no reason. The large-batch class reads its own table.
func TestRangeInWidensOffTheValidatedDomain(t *testing.T) {
	base := Domain{GPU: "H100-SXM", Model: "Llama-3.1-8B"}
	off := Domain{GPU: "B200", Model: "Llama-3.1-8B"}
	if w := base.Widened(); len(w) != 0 {
		t.Errorf("H100-SXM has sources; widened: %q", w)
	}
	if w := (Domain{}).Widened(); len(w) != 0 {
		t.Errorf("no GPU named: widened %q", w)
	}
	w := off.Widened()
	if len(w) != 1 || !strings.Contains(w[0], "no source on B200: range widened") {
		t.Fatalf("B200: widened %q, want the reason", w)
	}
	if b := RangeBasisIn(off); !strings.Contains(b, "no source on B200") {
		t.Errorf("basis %q lacks the reason", b)
	}
	strictly := false
	for _, m := range []string{"ttft_ms", "tpot_ms", "e2e_ms", "output_token_throughput_tps"} {
		for _, inFlight := range []float64{4, 64} {
			base.InFlight, off.InFlight = inFlight, inFlight
			a, ok1 := RangeIn(m, HeldOutShare, base)
			b, ok2 := RangeIn(m, HeldOutShare, off)
			if !ok1 || !ok2 {
				t.Fatalf("%s: no range", m)
			}
			if !(a.Low < 1 && a.High > 1) {
				t.Errorf("%s at %v in flight: baseline %+v does not hold the prediction", m, inFlight, a)
			}
			if b.Low > a.Low || b.High < a.High {
				t.Errorf("%s at %v in flight: off-domain %+v narrower than %+v on a side", m, inFlight, b, a)
			}
			if b.Low < a.Low || b.High > a.High {
				strictly = true
			}
		}
	}
	if !strictly {
		t.Error("no metric's range is wider on a GPU without a source")
	}
	// A model without a source: widened, and said; with a new GPU too,
	// both reasons and at least the wider of the two.
	known, _ := RangeIn("ttft_ms", HeldOutShare, Domain{GPU: "H100-SXM", Model: "Llama-3.1-8B"})
	newModel := Domain{GPU: "H100-SXM", Model: "Llama-4-Scout"}
	if w := newModel.Widened(); len(w) != 1 || !strings.Contains(w[0], "no source on Llama-4-Scout: range widened") {
		t.Errorf("Llama-4-Scout: widened %q", w)
	}
	nm, _ := RangeIn("ttft_ms", HeldOutShare, newModel)
	if nm.Low > known.Low || nm.High < known.High || nm == known {
		t.Errorf("TTFT of a model without a source %+v, not wider than %+v", nm, known)
	}
	both := Domain{GPU: "B200", Model: "Llama-4-Scout"}
	bt, _ := RangeIn("ttft_ms", HeldOutShare, both)
	ng, _ := RangeIn("ttft_ms", HeldOutShare, Domain{GPU: "B200", Model: "Llama-3.1-8B"})
	if len(both.Widened()) != 2 || bt.Low > min(nm.Low, ng.Low) || bt.High < max(nm.High, ng.High) {
		t.Errorf("new GPU and model: %+v (%q), want at least the wider of %+v and %+v", bt, both.Widened(), nm, ng)
	}
	small, _ := RangeIn("tpot_ms", HeldOutShare, Domain{InFlight: BatchLargeFrom - 1})
	large, _ := RangeIn("tpot_ms", HeldOutShare, Domain{InFlight: BatchLargeFrom})
	if small == large {
		t.Errorf("TPOT: the same range %+v at small and large batches", small)
	}
	if d := DomainOf("L4", "Qwen3-8B", 10, 2000, 2); d.InFlight != 10 || d.GPU != "L4" || d.Model != "Qwen3-8B" {
		t.Errorf("DomainOf: %+v, want 10 in flight a replica on L4", d)
	}
}

// The running-batch class follows the mean requests in flight: one at a
// time under BatchSmallFrom (but not 0, which is "not known" and reads
// the small-batch class, as plan's headroom line does), large from
// BatchLargeFrom; each class reads its own range.
func TestBatchClassOfRegimes(t *testing.T) {
	for _, c := range []struct {
		inFlight float64
		want     string
	}{{0, BatchSmall}, {0.4, BatchOne}, {1, BatchOne}, {BatchSmallFrom, BatchSmall}, {16, BatchSmall}, {BatchLargeFrom, BatchLarge}, {500, BatchLarge}} {
		if got := BatchClassOf(c.inFlight); got != c.want {
			t.Errorf("BatchClassOf(%v) = %q, want %q", c.inFlight, got, c.want)
		}
	}
	for _, s := range []string{SchemePublisher, SchemeGPU, SchemeModel} {
		for _, m := range []string{RangeTTFT, RangeTPOT, RangeThroughput} {
			for _, class := range BatchClasses {
				key := RangeKey(m, class)
				if _, ok := HeldOutLevels[s][key]; !ok {
					t.Errorf("HeldOutLevels[%q] has no %q", s, key)
				}
				if q := HeldOutLogQuantiles[s][key]; q[0] >= q[20] {
					t.Errorf("HeldOutLogQuantiles[%q][%q] = %v: no spread", s, key, q)
				}
			}
		}
	}
	one, _ := RangeIn("ttft_ms", HeldOutShare, Domain{InFlight: 1})
	small, _ := RangeIn("ttft_ms", HeldOutShare, Domain{InFlight: 4})
	if one == small {
		t.Errorf("TTFT: the same range %+v one at a time and at 4 in flight", one)
	}
	if one.Low >= 1 || small.Low >= 1 {
		t.Errorf("TTFT ranges %+v, %+v do not reach below the prediction", one, small)
	}
}
