package refit

import (
	"context"
	"math"
	"testing"

	"github.com/knee-dev/knee/internal/simengine/enginetest"
	"github.com/knee-dev/knee/internal/sweep"
)

type fixed struct{ in, out int }

func (f fixed) Lengths(int64) (int, int) { return f.in, f.out }

// A host twice as slow as the simulator's preset, measured (in virtual
// time) at two loads: after the refit the model reproduces the measured
// steps (its residuals pass through them) and predicts a load between
// them closer to the host than the prior did; the same steps give the
// same prediction.
func TestRefitMovesTowardTheHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := enginetest.H100Llama8B(t, 1)
	host := base
	host.StepTimeScale = 2
	runner := func() *sweep.SimRunner {
		return &sweep.SimRunner{Engine: base, Gen: fixed{512, 64}, Requests: 120}
	}
	truth := &sweep.SimRunner{Engine: host, Gen: fixed{512, 64}, Requests: 120}
	at := func(r *sweep.SimRunner, c float64) sweep.Step {
		s, err := r.Run(ctx, sweep.Load{Kind: sweep.Concurrency, Value: c})
		if err != nil {
			t.Fatal(err)
		}
		s.Load = sweep.Load{Kind: sweep.Concurrency, Value: c}
		return s
	}
	measured := []sweep.Step{at(truth, 1), at(truth, 16)}
	mid := at(truth, 4).Summary.OutputTokenThroughputTPS

	m := New(runner(), PriorRanges("H100-SXM", "Llama-3.1-8B"), 1)
	before, err := m.Predict(ctx, sweep.Load{Kind: sweep.Concurrency, Value: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Refit(ctx, measured); err != nil {
		t.Fatal(err)
	}
	for _, s := range measured {
		p, err := m.Predict(ctx, s.Load)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.Step.Summary.OutputTokenThroughputTPS, s.Summary.OutputTokenThroughputTPS; math.Abs(got/want-1) > 1e-9 {
			t.Errorf("%s: refitted %.1f tok/s, measured %.1f", s.Load, got, want)
		}
		if got, want := p.Step.Summary.TTFT.P95, s.Summary.TTFT.P95; math.Abs(got/want-1) > 1e-9 {
			t.Errorf("%s: refitted p95 TTFT %.1f ms, measured %.1f", s.Load, got, want)
		}
	}
	after, err := m.Predict(ctx, sweep.Load{Kind: sweep.Concurrency, Value: 4})
	if err != nil {
		t.Fatal(err)
	}
	errBefore := math.Abs(before.Step.Summary.OutputTokenThroughputTPS/mid - 1)
	errAfter := math.Abs(after.Step.Summary.OutputTokenThroughputTPS/mid - 1)
	t.Logf("at 4 in flight: error %.1f%% before the refit, %.1f%% after", 100*errBefore, 100*errAfter)
	if errAfter >= errBefore || errAfter > 0.15 {
		t.Errorf("at 4 in flight: error %.0f%% before the refit, %.0f%% after (want smaller, within 15%%)", 100*errBefore, 100*errAfter)
	}
	if r := after.Ranges; r.Throughput < MinRange || r.Throughput > MaxRange {
		t.Errorf("refitted range %+v outside %v–%v", r, MinRange, MaxRange)
	}
	m2 := New(runner(), PriorRanges("H100-SXM", "Llama-3.1-8B"), 1)
	if err := m2.Refit(ctx, measured); err != nil {
		t.Fatal(err)
	}
	again, _ := m2.Predict(ctx, sweep.Load{Kind: sweep.Concurrency, Value: 4})
	if again.Step.Summary.OutputTokenThroughputTPS != after.Step.Summary.OutputTokenThroughputTPS {
		t.Errorf("same steps, different predictions: %v, %v", again.Step.Summary.OutputTokenThroughputTPS, after.Step.Summary.OutputTokenThroughputTPS)
	}
}
