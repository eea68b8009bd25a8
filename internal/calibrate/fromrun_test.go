package calibrate

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// A stored run with nothing to fit (no step, no completed request) is bad
// input naming the run as given.
func TestSourcesOfRunWithNothingToFit(t *testing.T) {
	t.Parallel()
	for _, lr := range []*runs.Loaded{
		{Info: &store.RunInfo{}, Report: &report.Run{}},
		{Info: &store.RunInfo{}, Report: &report.Run{}, Sweep: &sweep.Result{Steps: []sweep.Step{sweep.NewStep(sweep.Rate, 2)}}},
	} {
		_, err := SourcesOfRun(lr, 3, "last")
		if !badinput.Is(err) || !strings.Contains(err.Error(), "--from run:last: the run has no completed request with a TTFT or TPOT to fit") {
			t.Errorf("sweep %v: %v", lr.Sweep != nil, err)
		}
	}
}
