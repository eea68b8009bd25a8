package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// TestClassRatesAddUpToTheRun: a mix's classes' req/s and tok/s are over
// the run's window, so they add up to the run's, where each class's own
// first-to-last span made them add to more; the table says which window.
func TestClassRatesAddUpToTheRun(t *testing.T) {
	var recs []record.Request
	for i := range 20 {
		// chat spans the whole second; batch only its first half.
		r := ok(int64(i), float64(i*50), float64(i*50), float64(i*50+10), float64(i*50+20))
		r.Class = "chat"
		recs = append(recs, r)
		if i < 10 {
			b := ok(int64(100+i), float64(i*50), float64(i*50), float64(i*50+10), float64(i*50+20))
			b.Class = "batch"
			recs = append(recs, b)
		}
	}
	objs, err := slo.ParseAll([]string{"request_throughput>15rps"})
	if err != nil {
		t.Fatal(err)
	}
	overall, classes := ClassSummaries(recs, stats.Options{}, objs, nil, nil)
	run := stats.Summarize(overall, stats.Options{})
	OverRun(classes, run.DurationS)
	var rps, tps float64
	for _, c := range classes {
		rps += c.Summary.RequestThroughputRPS
		tps += c.Summary.OutputTokenThroughputTPS
	}
	if math.Abs(rps-run.RequestThroughputRPS) > 1e-9 || math.Abs(tps-run.OutputTokenThroughputTPS) > 1e-6 {
		t.Errorf("classes add to %.4f req/s, %.4f tok/s; the run has %.4f, %.4f", rps, tps, run.RequestThroughputRPS, run.OutputTokenThroughputTPS)
	}
	for _, c := range classes {
		if len(c.SLOs) != 1 || c.SLOs[0].Value != c.Summary.RequestThroughputRPS {
			t.Errorf("class %s judged on %v, not its restated %.4f req/s", c.Name, c.SLOs, c.Summary.RequestThroughputRPS)
		}
	}
	var txt bytes.Buffer
	if err := Text(&txt, &Run{Summary: run, Classes: classes}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "over the run's measured window") {
		t.Errorf("the per-class table does not say which window its rates use:\n%s", txt.String())
	}
}
