package sweep

import (
	"context"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
)

// failStep is a step of 100 requests, failed of them HTTP 5xx.
func failStep(load float64, failed int) Step {
	s := NewStep(Concurrency, load)
	s.Summary = stats.Summary{Requests: 100, Completed: 100 - failed, Errors: failed, ErrorRate: float64(failed) / 100,
		ErrorKinds: map[string]int{"http_5xx": failed}}
	s.Full = true
	return s
}

// A sweep whose every step mostly failed (77–83%, as a server shedding
// load answers) is a failed measurement, as knee bench's run of the same
// load is; one healthy step is enough for a curve.
func TestMeasurementFailure(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []Step
		want  string
	}{
		{"none", nil, "the sweep measured no step"},
		{"mostly failed", []Step{failStep(1, 77), failStep(2, 83), failStep(4, 80)},
			"every step of the sweep failed mostly: 77–83% of each step's requests failed (more than 50%; http_5xx"},
		{"all failed", []Step{failStep(1, 100), failStep(2, 100)}, "none of the 200 requests of its 2 steps completed"},
		{"one good step", []Step{failStep(1, 10), failStep(2, 90)}, ""},
		{"at the bound", []Step{failStep(1, 50)}, ""},
	} {
		got := MeasurementFailure(c.steps)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

type deadRunner struct {
	capRunner
	deadFrom float64
}

func (d *deadRunner) Run(ctx context.Context, l Load) (Step, error) {
	s, err := d.capRunner.Run(ctx, l)
	if l.Value >= d.deadFrom {
		s.Unreachable = "every request of the first 5s failed to connect"
	}
	return s, err
}

// A target gone in one step is not measured again step after step: the
// explicit loads after it are left out and named, and an automatic sweep
// stops growing and bisecting there.
func TestUnreachableStepEndsTheSweep(t *testing.T) {
	r := &deadRunner{capRunner{capacity: 100}, 2}
	res, err := Run(context.Background(), r, Plan{Kind: Concurrency, Loads: []float64{1, 2, 4, 8}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.seen) != 2 {
		t.Fatalf("measured %v, want 1 and 2, nothing after the unreachable step", r.seen)
	}
	if n := strings.Join(res.Notes, "\n"); !strings.Contains(n, "the sweep stopped at 2 in flight: every request of the first 5s failed to connect") ||
		!strings.Contains(n, "left out: 4 in flight, 8 in flight") {
		t.Errorf("notes %q", res.Notes)
	}
	r = &deadRunner{capRunner{capacity: 100}, 8}
	if _, err := Run(context.Background(), r, Plan{Kind: Concurrency, Min: 1, Max: 1000}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if last := r.seen[len(r.seen)-1]; last != 8 || len(r.seen) != 4 {
		t.Errorf("automatic sweep measured %v, want 1, 2, 4, 8 and no step after the unreachable 8", r.seen)
	}
}
