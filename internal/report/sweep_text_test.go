package report

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// sweepFixture is a small closed-loop sweep with a knee, an SLO-safe point
// and a failing step, analysed by the sweep package.
func sweepFixture(t *testing.T) *sweep.Result {
	t.Helper()
	loads := []float64{1, 2, 4, 8, 16, 32}
	tps := []float64{120, 240, 470, 900, 1500, 1560}
	ttft := []float64{40, 42, 45, 60, 300, 2600}
	var steps []sweep.Step
	for i := range loads {
		g := tps[i] / 120
		s := sweep.Step{Load: sweep.Load{Kind: sweep.Concurrency, Value: loads[i]}, SLOMet: ttft[i] < 2000,
			Summary: stats.Summary{RequestThroughputRPS: tps[i] / 120, OutputTokenThroughputTPS: tps[i], GoodputRPS: &g,
				TTFT: stats.Dist{Count: 100, P50: ttft[i] / 2, P95: ttft[i], P99: ttft[i] * 1.2},
				ITL:  stats.Dist{Count: 100, P95: 10 + float64(i)}, E2E: stats.Dist{Count: 100, P95: 1000 + ttft[i]}}}
		s.SLOs = []sweep.Check{{Objective: "p95(ttft)<2s", Value: ttft[i], Met: s.SLOMet}}
		steps = append(steps, s)
	}
	r, err := sweep.Analyze(steps, sweep.Options{SLOs: []string{"p95(ttft)<2s"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSweepTextGolden(t *testing.T) {
	r := sweepFixture(t)
	var txt, md bytes.Buffer
	if err := SweepText(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := SweepMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "sweep.txt", txt.Bytes())
	golden(t, "sweep.md", md.Bytes())
	if !strings.Contains(txt.String(), "◀ knee") || !strings.Contains(txt.String(), "◀ SLO-safe") {
		t.Errorf("marks missing:\n%s", txt.String())
	}
}

// A table that gives only some columns shows the others as "–", never 0.
func TestSweepTextMissingColumns(t *testing.T) {
	tab, err := sweep.ReadCSV(strings.NewReader("concurrency,throughput_rps,ttft_p95_ms\n1,1,40\n2,2,45\n4,3,\n8,3.1,900\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := sweep.Analyze(tab.Steps, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := SweepText(&txt, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(txt.String(), "\n")
	// The row's cells, across the tables a wide table splits into (each
	// repeats the load column).
	var row4 string
	for _, l := range lines {
		if strings.HasPrefix(l, "4 ") {
			if row4 != "" {
				l = strings.TrimPrefix(l, "4 ")
			}
			row4 += " " + strings.ReplaceAll(l, "◀ knee", "") // the marks repeat in each table
		}
	}
	f := strings.Fields(row4)
	// concurrency req/s out-tok/s goodput TTFT-p50 TTFT-p95 TTFT-p99 ITL-p95 E2E-p95 errors
	if len(f) < 10 || f[1] != "3.00" || f[2] != "–" || f[5] != "–" || f[9] != "–" {
		t.Errorf("row for 4 in flight: %q; want req/s 3.00 and – for output tokens/s, TTFT p95 and errors\n%s", row4, txt.String())
	}
	if strings.Contains(txt.String(), "0.00%") || strings.Contains(txt.String(), " 0 ") {
		t.Errorf("a missing value printed as 0:\n%s", txt.String())
	}
}

// TestSweepClassesRendered: a mix's sweep names its breaking class and
// lists every class at every step in text, Markdown and HTML.
func TestSweepClassesRendered(t *testing.T) {
	r := sweepFixture(t)
	for i := range r.Steps {
		s := &r.Steps[i]
		ttft := s.Summary.TTFT.P95
		for _, c := range []struct {
			name  string
			ttft  float64
			limit float64
		}{{"chat", ttft * 2, 150}, {"batch", ttft, 5000}} {
			met := c.ttft < c.limit
			s.Classes = append(s.Classes, sweep.ClassStep{Name: c.name, Summary: stats.Summary{Requests: 10, TTFT: stats.Dist{Count: 10, P95: c.ttft}},
				SLOMet: met, SLOs: []sweep.Check{{Objective: "p95(ttft)<" + strings.TrimSuffix(fnum(c.limit, 0), ".0") + "ms", Value: c.ttft, Met: met}}})
			s.SLOMet = s.SLOMet && met
		}
	}
	r, err := sweep.Analyze(r.Steps, sweep.Options{SLOs: r.SLOs})
	if err != nil {
		t.Fatal(err)
	}
	var txt, md, page bytes.Buffer
	if err := SweepText(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := SweepMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, &Run{Kind: "sweep", Sweep: r, Summary: r.Steps[0].Summary}, HTMLData{}); err != nil {
		t.Fatal(err)
	}
	// chat's p95 TTFT is 2×300 = 600 ms at 16 in flight, past 150 ms.
	want := "class chat fails first, at 16 in flight: p95(ttft)<150ms (measured 600 ms); every other class still holds there"
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String(), "html": html.UnescapeString(page.String())} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) { // text wraps at 100 columns
			t.Errorf("%s lacks %q:\n%s", name, want, out)
		}
		if !strings.Contains(out, "Per class (latency in ms)") || !strings.Contains(out, "batch") {
			t.Errorf("%s lacks the per-class table", name)
		}
	}
}
