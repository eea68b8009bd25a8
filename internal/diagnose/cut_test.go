package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
)

func TestParseSpan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in       string
		from, to time.Duration
		err      string
	}{
		{"60s:120s", 60 * time.Second, 120 * time.Second, ""},
		{":30s", 0, 30 * time.Second, ""},
		{"10s:", 10 * time.Second, 0, ""},
		{"60s", 0, 0, "want A:B"},
		{"5s:x", 0, 0, `"x" is not a duration`},
		{"20s:10s", 0, 0, "the end must come after the start"},
	} {
		from, to, err := ParseSpan("--window", c.in)
		if c.err != "" {
			if !badinput.Is(err) || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "--window") {
				t.Errorf("%q: %v, want bad input naming --window and %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || from != c.from || to != c.to {
			t.Errorf("%q: %v %v %v, want %v %v", c.in, from, to, err, c.from, c.to)
		}
	}
}

// --split cuts the window at a send time; a run without send times, or a
// cut leaving one side empty, is refused naming what to check.
func TestCutSplitsAtASendTime(t *testing.T) {
	t.Parallel()
	var recs []record.Request
	for i := range 10 {
		recs = append(recs, record.Request{ID: int64(i), Sent: time.Duration(i) * time.Second})
	}
	var opts Options
	win, err := Cut{Split: "4s"}.Apply(recs, "r.jsonl", FormatRecords, nil, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(win) != 6 || len(opts.Baseline) != 4 || opts.BaselineName != "requests sent before 4s" {
		t.Errorf("window %d, baseline %d (%q); want 6 and 4", len(win), len(opts.Baseline), opts.BaselineName)
	}
	opts = Options{}
	if win, err = (Cut{Window: "2s:8s", BaselineWindow: ":2s"}).Apply(recs, "r.jsonl", FormatRecords, nil, &opts); err != nil || len(win) != 6 || len(opts.Baseline) != 2 {
		t.Errorf("--window 2s:8s --baseline-window :2s: window %d baseline %d, %v", len(win), len(opts.Baseline), err)
	}
	for _, c := range []struct {
		cut  Cut
		recs []record.Request
		want string
	}{
		{Cut{Split: "4s"}, []record.Request{{ID: 1}}, "r.jsonl has no send times"},
		{Cut{Split: "20s"}, recs, "the window holds no measured requests"},
		{Cut{Split: "-1s"}, recs, "--split \"-1s\": want a positive duration"},
	} {
		if _, err := c.cut.Apply(c.recs, "r.jsonl", FormatRecords, nil, &Options{}); !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cut, err, c.want)
		}
	}
}
