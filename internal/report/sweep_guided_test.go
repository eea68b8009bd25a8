package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// A guided sweep's report shows each step's prediction before it (with
// its range) beside the measurement, in the order measured, also when
// read back from storage (the steps carry their own log).
func TestSweepTextShowsGuidedSteps(t *testing.T) {
	t.Parallel()
	in := true
	mk := func(load float64, order int, pred *sweep.PredictedFigures, tps float64) sweep.Step {
		s := sweep.Step{Load: sweep.Load{Kind: sweep.Concurrency, Value: load}, Full: true, SLOMet: true,
			Summary: stats.Summary{Requests: 10, Completed: 10, OutputTokenThroughputTPS: tps}}
		s.Guided = &sweep.GuidedStep{Order: order, Load: s.Load, Why: "why " + string(rune('a'+order)), Predicted: pred,
			Measured: sweep.MeasuredFigures{Throughput: tps, SLOs: []float64{100}, SLOMet: true}}
		if pred != nil {
			s.Guided.InRange = &in
		}
		return s
	}
	pred := &sweep.PredictedFigures{Throughput: sweep.Figure{Value: 900, Low: 750, High: 1080},
		SLOs: []sweep.Figure{{Name: "p95(ttft)<300ms", Value: 250, Low: 200, High: 310}}}
	// Sorted by load, as a stored sweep reads back: 16 was measured second.
	res, err := sweep.Analyze([]sweep.Step{mk(1, 1, nil, 100), mk(16, 3, pred, 950), mk(8, 2, pred, 800)}, sweep.Options{SLOs: []string{"p95(ttft)<300ms"}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := SweepText(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, "Guided steps, in the order measured")
	if i < 0 {
		t.Fatalf("no guided table:\n%s", out)
	}
	table := out[i:]
	for _, want := range []string{"predicted tok/s", "predicted p95(ttft)<300ms", "900.0 (750.0–1080.0)", "250.0 (200.0–310.0)", "in range"} {
		if !strings.Contains(table, want) {
			t.Errorf("guided table lacks %q:\n%s", want, table)
		}
	}
	if a, c := strings.Index(table, "\n2  8 "), strings.Index(table, "\n3  16 "); a < 0 || c < a {
		t.Errorf("rows not in measuring order:\n%s", table)
	}
}
