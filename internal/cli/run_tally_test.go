package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchPastItsRecordBudget: a bench whose records outgrow what it may
// keep in memory still reports every request, streams all of them to
// records.jsonl, and draws report.html's curves from the percentiles,
// saying so, instead of from a part of the run.
func TestBenchPastItsRecordBudget(t *testing.T) {
	saved := keptRecordsBytes
	t.Cleanup(func() { keptRecordsBytes = saved })
	keptRecordsBytes = 4 << 10 // a few records
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--requests", "12", "--concurrency", "3",
		"--input-tokens", "16", "--output-tokens", "4", "--seed", "3", "--quiet", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := len(readRecords(t, filepath.Join(out, "records.jsonl"))); got != 12 {
		t.Errorf("records.jsonl holds %d records, want 12", got)
	}
	if !strings.Contains(stdout, "12 measured · 12 completed") {
		t.Errorf("the report does not count all 12 requests:\n%s", stdout)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "No per-request records here (none were kept, or more than a report draws): the curves join the percentiles") || strings.Contains(string(html), "Waterfall of sampled requests") {
		t.Errorf("report.html does not draw its curves from the percentiles alone")
	}
}
