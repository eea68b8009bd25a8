package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/sweep"
)

// TestPartialStepMarked: a step cut short (a sharded sweep's step another
// shard stopped) is marked in the steps table, and its warning is in the
// text and Markdown whether the sweep was just analysed or read back from
// the database, which keeps each step's warnings but not the sweep's list.
func TestPartialStepMarked(t *testing.T) {
	const warn = "partial step: shard 1 stopped; its figures cover the 30 requests all shards measured"
	analysed := sweepFixture(t)
	last := &analysed.Steps[len(analysed.Steps)-1]
	last.Warnings = append(last.Warnings, warn)
	analysed, err := sweep.Analyze(analysed.Steps, sweep.Options{SLOs: analysed.SLOs})
	if err != nil {
		t.Fatal(err)
	}
	stored := *analysed
	stored.Warnings = nil // as store.SweepResult reads it back
	for name, r := range map[string]*sweep.Result{"analysed": analysed, "stored": &stored} {
		var txt, md bytes.Buffer
		if err := SweepText(&txt, r); err != nil {
			t.Fatal(err)
		}
		if err := SweepMarkdown(&md, r); err != nil {
			t.Fatal(err)
		}
		row := ""
		for _, l := range strings.Split(txt.String(), "\n") {
			if strings.HasPrefix(l, "32 ") {
				row += l
			}
		}
		if !strings.Contains(row, "(partial)") {
			t.Errorf("%s: the 32-in-flight step is not marked partial: %q\n%s", name, row, txt.String())
		}
		line := "step 32 in flight: " + warn
		for format, out := range map[string]string{"text": txt.String(), "markdown": md.String()} {
			flat := strings.Join(strings.Fields(out), " ")
			if n := strings.Count(flat, line); n != 1 {
				t.Errorf("%s %s: says %q %d times, want once:\n%s", name, format, line, n, out)
			}
		}
	}
}
