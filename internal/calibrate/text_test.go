package calibrate

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/scrape"
)

// A held-out step predicted more than 10% off warns; within 10% does not.
func TestCalibrationWarnsOnHeldOutError(t *testing.T) {
	var res Result
	res.HoldOut.TTFTError, res.HoldOut.TPOTError, res.HoldOut.ThroughputError = 0.15, -0.04, 0.02
	w := res.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "TTFT p50 +15.0%") || strings.Contains(w[0], "TPOT") {
		t.Errorf("warnings %q", w)
	}
	res.HoldOut.TTFTError, res.HoldOut.ThroughputError = 0.03, -0.12
	if w := res.Warnings(); len(w) != 1 || !strings.Contains(w[0], "output tokens/s -12.0%") {
		t.Errorf("warnings %q", w)
	}
	res.HoldOut.ThroughputError = 0.099
	if w := res.Warnings(); len(w) != 0 {
		t.Errorf("warned within 10%%: %q", w)
	}
}

func TestParseDecodePoints(t *testing.T) {
	pts, err := ParseDecodePoints("1x64, 64x1024")
	if err != nil || len(pts) != 2 || pts[1] != (DecodePoint{Batch: 64, Input: 1024}) {
		t.Errorf("%v %v", pts, err)
	}
	if pts, err := ParseDecodePoints(" "); pts != nil || err != nil {
		t.Errorf("empty: %v %v", pts, err)
	}
	for _, bad := range []string{"64", "0x5", "ax5", "5x"} {
		if _, err := ParseDecodePoints(bad); err == nil || !strings.Contains(err.Error(), "want BATCHxPROMPT pairs") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestWriteServerSummary(t *testing.T) {
	var b strings.Builder
	WriteServerSummary(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no view: %q", b.String())
	}
	WriteServerSummary(&b, &scrape.View{Server: "vllm", URL: "http://h/metrics", Notes: []string{"n1"}, Window: &scrape.Window{Scrapes: 12,
		Gauges: map[scrape.Metric]scrape.GaugeStats{scrape.Running: {Max: 4}}, Deltas: map[scrape.Metric]float64{scrape.Preemptions: 3}}})
	if out := b.String(); !strings.Contains(out, "at http://h/metrics): running at most 4 (the batch or parallel slots used); 3 preemptions; 12 scrapes\n  - n1\n") {
		t.Errorf("%q", out)
	}
}
