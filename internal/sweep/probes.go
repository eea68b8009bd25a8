package sweep

import (
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// SplitProbes returns recs without the probes, and the probes' p95 TTFT in
// ms (nil: no probe answered): a step's summary and verdicts are the main
// load's alone, the probes' TTFT is its own column.
func SplitProbes(recs []record.Request) (main []record.Request, probeTTFTP95 *float64) {
	var probes []record.Request
	for i := range recs {
		if recs[i].Class == record.ProbeClass {
			probes = append(probes, recs[i])
		} else {
			main = append(main, recs[i])
		}
	}
	if probes == nil {
		return recs, nil
	}
	if sum := stats.Summarize(probes, stats.Options{}); sum.TTFT.Count > 0 {
		v := sum.TTFT.P95
		probeTTFTP95 = &v
	}
	return main, probeTTFTP95
}
