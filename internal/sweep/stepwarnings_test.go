package sweep

import (
	"reflect"
	"testing"
)

// TestStepWarningsSaidOnce: a warning that every step gives (the load
// generator's notes) is one line naming the steps — with the first step's
// figures when theirs differ — and a step's own warning stays its own.
func TestStepWarningsSaidOnce(t *testing.T) {
	reuse := func(at string) string {
		return "the server closed kept-alive connections, so from " + at + "s into the run every request opened a connection of its own"
	}
	steps := []Step{
		{Load: Load{Kind: Concurrency, Value: 1}, Warnings: []string{"target answers slowly", reuse("1.2"), reuse("3.0")}},
		{Load: Load{Kind: Concurrency, Value: 2}, Warnings: []string{"target answers slowly", reuse("0.8")}},
		{Load: Load{Kind: Concurrency, Value: 4}, Warnings: []string{"target answers slowly", "partial step: interrupted after 2.0 s"}},
	}
	got := StepWarnings(steps)
	want := []string{
		"steps 1 in flight, 2 in flight, 4 in flight: target answers slowly",
		"steps 1 in flight, 2 in flight (figures of step 1 in flight; each step's own are in its warnings): " + reuse("1.2"),
		"step 1 in flight: " + reuse("3.0"),
		"step 4 in flight: partial step: interrupted after 2.0 s",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("step warnings:\n%q\nwant\n%q", got, want)
	}
	res, err := Analyze(steps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		n := 0
		for _, x := range res.Warnings {
			if x == w {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the sweep's warnings hold %q %d times, want once: %q", w, n, res.Warnings)
		}
	}
}
