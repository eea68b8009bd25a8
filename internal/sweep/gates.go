package sweep

import (
	"fmt"
	"math"

	"github.com/knee-dev/knee/internal/record"
)

// The gates a sweep shares with knee bench, for real and simulated
// sweeps alike: a sweep whose every step measured mostly failures found no
// curve and must not pass as a success (bench exits 1 on the same load),
// and a target that is gone is not measured step after step.

// MaxErrorRate is the share of failed requests past which a step measured
// mostly failures: the bound knee bench applies to a run
// (runcheck.MaxErrorRate).
const MaxErrorRate = 0.5

// MeasurementFailure says why a sweep measured nothing worth its curve
// ("" when some step did): no step, no request, no completed request, or
// every step's requests mostly failed.
func MeasurementFailure(steps []Step) string {
	if len(steps) == 0 {
		return "the sweep measured no step"
	}
	kinds := map[string]int{}
	requests, completed := 0, 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range steps {
		sum := &steps[i].Summary
		if sum.Requests > 0 && sum.Completed > 0 && sum.ErrorRate <= MaxErrorRate {
			return ""
		}
		requests += sum.Requests
		completed += sum.Completed
		if sum.Requests > 0 {
			lo, hi = min(lo, sum.ErrorRate), max(hi, sum.ErrorRate)
		}
		for k, n := range sum.ErrorKinds {
			kinds[k] += n
		}
	}
	if requests == 0 {
		return fmt.Sprintf("every step of the sweep failed: none of its %d steps measured a request", len(steps))
	}
	top, most := "", 0
	for _, k := range record.ErrorKinds {
		if n := kinds[string(k)]; n > most {
			top, most = string(k), n
		}
	}
	if completed == 0 {
		return fmt.Sprintf("every step of the sweep failed: none of the %d requests of its %d steps completed (%s): %s",
			requests, len(steps), record.ErrorKindsLine(kinds), record.ErrorKind(top).Hint())
	}
	share := fmt.Sprintf("%.0f%%", 100*lo)
	if math.Round(100*hi) != math.Round(100*lo) {
		share = fmt.Sprintf("%.0f–%.0f%%", 100*lo, 100*hi)
	}
	return fmt.Sprintf("every step of the sweep failed mostly: %s of each step's requests failed (more than %.0f%%; %s), so the curve describes failures, not the server: %s",
		share, 100*MaxErrorRate, record.ErrorKindsLine(kinds), record.ErrorKind(top).Hint())
}
