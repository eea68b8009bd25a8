package sweep

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
)

// mixRunner is a service with two classes: "fast" with a tight own
// objective whose p95 TTFT grows with load, "slow" with a loose one.
type mixRunner struct{}

func (mixRunner) Run(_ context.Context, l Load) (Step, error) {
	class := func(name string, ttft float64, own string) ClassStep {
		var s stats.Summary
		s.Requests, s.Completed = 50, 50
		s.TTFT = stats.Dist{Count: 50, P95: ttft}
		return ClassStep{Name: name, Summary: s, Own: []string{own}}
	}
	var s stats.Summary
	s.Requests, s.Completed = 100, 100
	s.RequestThroughputRPS, s.OutputTokenThroughputTPS = l.Value, 100*l.Value
	s.TTFT = stats.Dist{Count: 100, P95: 20 * l.Value}
	return Step{Summary: s, Full: true, Classes: []ClassStep{
		class("fast", 20*l.Value, "p95(ttft)<100ms"),  // fails from 5 on
		class("slow", 30*l.Value, "p95(ttft)<250ms")}, // fails from 8.4 on
	}, nil
}

// TestClassesJudgedAndBreaksFirst: with no run objective, the classes' own
// decide the SLO-safe point, and breaks_first names the class failing at
// the lowest load with its value; JSON keeps what a stored sweep needs to
// find it again.
func TestClassesJudgedAndBreaksFirst(t *testing.T) {
	res, err := Run(context.Background(), mixRunner{}, Plan{Kind: Rate, Loads: []float64{1, 2, 4, 6, 10}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.SLOSafe.Found() || res.SLOSafe.Load != 4 {
		t.Errorf("SLO-safe point %+v; want 4 req/s (fast fails at 6)", res.SLOSafe)
	}
	if !strings.Contains(res.SLOSafe.Reason, "class fast: p95(ttft)<100ms (measured 120 ms)") {
		t.Errorf("the SLO-safe point's reason %q does not name the failing class and value", res.SLOSafe.Reason)
	}
	b := res.BreaksFirst
	if b == nil || b.Class != "fast" || b.Load != 6 || b.Objective != "p95(ttft)<100ms" || b.Value != 120 || len(b.Also) != 0 {
		t.Fatalf("breaks_first %+v; want fast alone at 6 req/s, 120 ms", b)
	}
	if got := res.ClassSLOs; len(got) != 2 || got[0] != "fast: p95(ttft)<100ms" {
		t.Errorf("class_slos %v", got)
	}
	// At 10 req/s both fail; the one further past its objective would be
	// named had it been first: fast (200/100) before slow (300/250).
	last := res.Steps[len(res.Steps)-1]
	if last.SLOMet || last.Classes[0].SLOMet || last.Classes[1].SLOMet {
		t.Errorf("at 10 req/s both classes must fail: %+v", last.Classes)
	}
	if b := findBreaksFirst(res.Steps[len(res.Steps)-1:]); b == nil || b.Class != "fast" || len(b.Also) != 1 || b.Also[0] != "slow" {
		t.Errorf("both failing at one load: %+v; want fast named, slow also", b)
	}

	// A stored sweep keeps its steps; its verdicts follow from them.
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	back.BreaksFirst, back.ClassSLOs = nil, nil
	back.ClassVerdicts()
	if back.BreaksFirst == nil || back.BreaksFirst.Load != 6 {
		t.Errorf("read back: breaks_first %+v", back.BreaksFirst)
	}
}

// TestClassRatesOverTheStep: a class's rates are over the step's span, so
// the classes add up to the step.
func TestClassRatesOverTheStep(t *testing.T) {
	good := 30
	s := stats.Summary{DurationS: 5, RequestThroughputRPS: 8, OutputTokenThroughputTPS: 800, GoodRequests: &good}
	g := 6.0
	s.GoodputRPS = &g
	overStep(&s, 10)
	if s.RequestThroughputRPS != 4 || s.OutputTokenThroughputTPS != 400 || *s.GoodputRPS != 3 || s.DurationS != 10 {
		t.Errorf("over a 10 s step: %v req/s, %v tok/s, goodput %v, %v s", s.RequestThroughputRPS, s.OutputTokenThroughputTPS, *s.GoodputRPS, s.DurationS)
	}
	if x := excess(Check{Objective: "p95(ttft)<100ms", Value: 150}); math.Abs(x-1.5) > 1e-9 {
		t.Errorf("excess %v; want 1.5", x)
	}
}
