package report

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// wideLines are the lines of out wider than textWidth.
func wideLines(out string) []string {
	var wide []string
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > textWidth {
			wide = append(wide, l)
		}
	}
	return wide
}

// TestTextFitsHundredColumns: the text report of a run with classes and
// probes, and a mix sweep's text, fit 100 columns: wide tables split into
// narrower ones that repeat the row names, long lines wrap.
func TestTextFitsHundredColumns(t *testing.T) {
	run := fixture(t)
	big := stats.Dist{Count: 1000, Mean: 12345.6, P50: 12345.6, P90: 23456.7, P95: 34567.8, P99: 45678.9, P999: 56789.1, Max: 67890.1}
	good := 1234.56
	for _, name := range []string{"interactive-chat-tenant", "batch-summaries", "probe"} {
		run.Classes = append(run.Classes, Class{Name: name, Probe: name == "probe",
			Summary: stats.Summary{Requests: 123456, Completed: 123456, Errors: 12345, RequestThroughputRPS: 1234.56,
				OutputTokenThroughputTPS: 123456.7, GoodputRPS: &good, TTFT: big, ITL: big, E2E: big}})
	}
	var txt bytes.Buffer
	if err := Text(&txt, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "probe*") || !strings.Contains(txt.String(), "probes beside the load") {
		t.Errorf("the per-class table does not mark the probes:\n%s", txt.String())
	}
	if wide := wideLines(txt.String()); len(wide) > 0 {
		t.Errorf("the text report has %d lines over %d columns, e.g.\n%s\n\n%s", len(wide), textWidth, wide[0], txt.String())
	}

	r := sweepFixture(t)
	for i := range r.Steps {
		s := &r.Steps[i]
		for _, name := range []string{"interactive-chat-tenant", "batch-summaries"} {
			s.Classes = append(s.Classes, sweep.ClassStep{Name: name, Summary: stats.Summary{Requests: 10, TTFT: stats.Dist{Count: 10, P95: 2 * s.Summary.TTFT.P95}},
				SLOs: []sweep.Check{{Objective: "p95(ttft)<150ms", Value: 2 * s.Summary.TTFT.P95, Met: false}}})
		}
		s.SLOMet = false
	}
	r, err := sweep.Analyze(r.Steps, sweep.Options{SLOs: r.SLOs})
	if err != nil {
		t.Fatal(err)
	}
	var sw bytes.Buffer
	if err := SweepText(&sw, r); err != nil {
		t.Fatal(err)
	}
	if wide := wideLines(sw.String()); len(wide) > 0 {
		t.Errorf("the mix sweep's text has %d lines over %d columns, e.g.\n%s\n\n%s", len(wide), textWidth, wide[0], sw.String())
	}
}

// TestLongTitleWraps: a section title longer than a line (the server's time
// distributions say how they were computed) wraps as other lines do.
func TestLongTitleWraps(t *testing.T) {
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	writeSections(bw, []section{{title: strings.Repeat("title words ", 20), kv: [][2]string{{"k", "v"}}}})
	bw.Flush()
	if wide := wideLines(b.String()); len(wide) > 0 {
		t.Errorf("a long title printed wider than %d columns:\n%s", textWidth, b.String())
	}
}
