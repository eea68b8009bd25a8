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

// The HTML report of a guided sweep draws the last refit's curve as a
// band (its range) with a dashed line, each step's prediction before it
// as a bar at the step's load, and lists the steps in measuring order.
func TestSweepHTMLDrawsTheGuidedBand(t *testing.T) {
	t.Parallel()
	mk := func(load float64, order int, pred *sweep.PredictedFigures, curve []sweep.CurvePoint) sweep.Step {
		s := sweep.Step{Load: sweep.Load{Kind: sweep.Concurrency, Value: load}, Full: true, SLOMet: true,
			Summary: stats.Summary{Requests: 10, Completed: 10, OutputTokenThroughputTPS: 100 * load, TTFT: stats.Dist{Count: 10, P50: 50, P95: 60}}}
		s.Guided = &sweep.GuidedStep{Order: order, Load: s.Load, Why: "why", Predicted: pred, Curve: curve,
			Measured: sweep.MeasuredFigures{Throughput: 100 * load, SLOs: []float64{60}, SLOMet: true, Requests: 10, ElapsedS: 2}}
		return s
	}
	fig := func(v, r float64) sweep.Figure { return sweep.Figure{Value: v, Low: v / (1 + r), High: v * (1 + r)} }
	curve := func(r float64) []sweep.CurvePoint {
		var c []sweep.CurvePoint
		for _, l := range []float64{1, 2, 4, 8} {
			c = append(c, sweep.CurvePoint{Load: l, Throughput: fig(100*l, r), TTFTP95: fig(60, r)})
		}
		return c
	}
	pred := &sweep.PredictedFigures{Throughput: fig(777, 0.2), SLOs: []sweep.Figure{fig(55, 0.2)}}
	// The first refit's wide curve on step 1, the last one's narrow on step 2.
	res, err := sweep.Analyze([]sweep.Step{mk(1, 1, nil, curve(0.5)), mk(8, 2, pred, curve(0.1))}, sweep.Options{SLOs: []string{"p95(ttft)<300ms"}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := HTML(&b, &Run{Sweep: res}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Guided steps, in the order measured", "2 steps, 20 requests",
		`class="data band"`, "refitted model after step 2 (a prediction, with its range)",
		"predicted before the step (with its range): 777 (647.5–932.4) at 8", // the throughput bar
		"predicted before the step (with its range): 55 (45.8–66) at 8",      // the p95 TTFT bar
	} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if n := strings.Count(out, `class="data band"`); n != 2 {
		t.Errorf("%d bands; want one on the throughput chart and one on the TTFT chart", n)
	}
	// The band is the last refit's, after step 2, not the first's.
	if !strings.Contains(out, "refitted model after step 2") || strings.Contains(out, "after step 1") {
		t.Errorf("the band is not the last refit's")
	}
}

// A guided mix sweep's table has each class's objectives: the prediction
// with its range and the measurement.
func TestSweepTextShowsGuidedClasses(t *testing.T) {
	t.Parallel()
	mk := func(load float64, order int, pred *sweep.PredictedFigures) sweep.Step {
		s := sweep.Step{Load: sweep.Load{Kind: sweep.Concurrency, Value: load}, Full: true, SLOMet: true,
			Summary: stats.Summary{Requests: 10, Completed: 10, OutputTokenThroughputTPS: 100 * load}}
		s.Guided = &sweep.GuidedStep{Order: order, Load: s.Load, Why: "why", Predicted: pred,
			Measured: sweep.MeasuredFigures{Throughput: 100 * load, SLOMet: true, Classes: []sweep.MeasuredClass{{Name: "chat", SLOs: []float64{123}, SLOMet: true}}}}
		return s
	}
	pred := &sweep.PredictedFigures{Throughput: sweep.Figure{Value: 800, Low: 700, High: 900},
		Classes: []sweep.ClassFigures{{Name: "chat", SLOs: []sweep.Figure{{Name: "p95(ttft)<200ms", Value: 150, Low: 125, High: 180}}, SLOMet: true}}}
	res, err := sweep.Analyze([]sweep.Step{mk(1, 1, nil), mk(8, 2, pred)}, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := SweepText(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"predicted chat: p95(ttft)<200ms", "150.0 (125.0–180.0)", "123.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("guided table lacks %q:\n%s", want, out)
		}
	}
}
