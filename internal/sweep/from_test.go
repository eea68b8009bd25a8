package sweep

import (
	"math"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/ingest"
)

// A vLLM file carries both a concurrency and a rate; the load kind is the
// one the runs vary, and a run without it is left out with a note.
func TestResultStepsTakeTheLoadTheRunsVary(t *testing.T) {
	t.Parallel()
	runs := []ingest.Run{
		{Concurrency: 64, RateRPS: 1, Notes: []string{"n"}},
		{Concurrency: 64, RateRPS: 2, Notes: []string{"n"}},
		{}, // says no load
	}
	var cands []fromRun
	for i, w := range []string{"a.json", "b.json", "c.json"} {
		cands = append(cands, fromRun{where: w, run: &runs[i]})
	}
	steps, notes, err := resultSteps(cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("%d steps, want 2 (c.json says no load)", len(steps))
	}
	if steps[0].Load.Kind != Rate || steps[0].Load.Value != 1 || steps[1].Load.Value != 2 || steps[1].Source != "b.json" {
		t.Fatalf("steps %v from %s and %v from %s, want rate steps 1 and 2 from a.json and b.json", steps[0].Load, steps[0].Source, steps[1].Load, steps[1].Source)
	}
	if !math.IsNaN(steps[0].Summary.TTFT.P95) {
		t.Errorf("an unmeasured TTFT is %v, want NaN (missing)", steps[0].Summary.TTFT.P95)
	}
	if len(notes) != 2 || notes[0] != "n" || !strings.Contains(notes[1], "left out (no request rate") || !strings.Contains(notes[1], "c.json") {
		t.Errorf("notes = %q, want the run's note once and c.json left out", notes)
	}
	if _, _, err := resultSteps([]fromRun{{where: "x.json", run: &ingest.Run{}}}); err == nil || !strings.Contains(err.Error(), "x.json does not say at what load") {
		t.Errorf("a run with no load: %v", err)
	}
}
