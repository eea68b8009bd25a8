package compare

import (
	"bytes"
	"strings"
	"testing"
)

func TestTextOneUnitPerRowAndNotes(t *testing.T) {
	lo, hi := 4.7e6, 4.8e6
	r := &Result{A: "1", B: "2", Method: "m", MinChange: 0.05, MinDiffMS: 1, Verdict: "B is worse", LatencyComparable: true,
		Metrics: []Metric{
			{Name: "ttft_ms.p95", Label: "TTFT p95", Unit: "ms", A: 10, B: 4782446.1, Diff: 4782436.1, Change: 478243, CILow: &lo, CIHigh: &hi, Tested: true, Effect: "worse", Note: "few samples"},
			{Name: "error_rate", Label: "error rate", Unit: "ratio", A: 0.01, B: 0.02, Diff: 0.01, Effect: "untested", Note: "few samples"},
		},
		Cautions: []string{"different models"}}
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"knee compare: run 1 (A) → run 2 (B)", "TTFT p95 (min)", "79.7", "+1.00 pp", "worse ✗", "not judged",
		"note: TTFT p95, error rate: few samples", "caution: different models", "verdict: B is worse"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "4782446") {
		t.Errorf("80 minutes printed in ms:\n%s", out)
	}
}

func TestUnjudgedAndParsePercent(t *testing.T) {
	r := &Result{Verdict: "v", LatencyComparable: true, Metrics: []Metric{{Name: "error_rate", Tested: true}, {Name: "ttft_ms.p95", Label: "TTFT p95"}}}
	if r.Unjudged() != "v" {
		t.Error("a comparison that tested only the error rate was judged")
	}
	r.Metrics[1].Tested = true
	if r.Unjudged() != "" {
		t.Error("a tested latency was not judged")
	}
	r.LatencyComparable = false
	if r.Unjudged() != "v" {
		t.Error("runs without comparable latency were judged")
	}
	for in, want := range map[string]float64{"5%": 0.05, " 0.5% ": 0.005, "0.1": 0.1} {
		if got, err := ParsePercent(in); err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParsePercent("x%"); err == nil {
		t.Error("x% parsed")
	}
}
