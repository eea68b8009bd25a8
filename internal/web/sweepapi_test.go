package web

import (
	"context"
	"testing"

	"github.com/knee-dev/knee/internal/sweep"
)

// A sweep step is the simulator page's run at that load, so the page's
// current point lies on the curve (issue 44: at 64 users the point read
// 37.4 req/s and p95 TTFT 78 ms, the curve 33.7 req/s and 600 ms).
func TestSweepStepIsThePagesRun(t *testing.T) {
	for _, c := range []struct {
		kind string
		load float64
	}{{"concurrency", 64}, {"concurrency", 256}, {"rate", 30}} {
		p := learnBase(c.load)
		p.LoadKind = c.kind
		su, err := p.setup()
		if err != nil {
			t.Fatal(err)
		}
		page, err := su.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		kind := sweep.Concurrency
		if c.kind == "rate" {
			kind = sweep.Rate
		}
		st, err := (&sweepRunner{su: su}).Run(context.Background(), sweep.Load{Kind: kind, Value: c.load})
		if err != nil {
			t.Fatal(err)
		}
		f := page.Summary
		t.Logf("%s %g: page %.2f req/s, p95 TTFT %.1f ms; sweep step %.2f req/s, %.1f ms", c.kind, c.load,
			f.ThroughputRPS, f.TTFTMS.P95, st.Summary.RequestThroughputRPS, st.Summary.TTFT.P95)
		if st.Summary.RequestThroughputRPS != f.ThroughputRPS || st.Summary.TTFT.P95 != f.TTFTMS.P95 || st.Summary.TTFT.P95 == 0 {
			t.Errorf("%s %g: the sweep step (%.2f req/s, p95 TTFT %.1f ms) is not the page's run (%.2f req/s, %.1f ms)", c.kind, c.load,
				st.Summary.RequestThroughputRPS, st.Summary.TTFT.P95, f.ThroughputRPS, f.TTFTMS.P95)
		}
	}
}
