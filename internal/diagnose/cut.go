package diagnose

import (
	"fmt"
	"github.com/knee-dev/knee/internal/redact"
	"io"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
)

// Cut is how knee diagnose cuts a run into the window it judges and the
// baseline it compares it with: --window A:B (the window), and at most one
// of --split T (before T the baseline, after it the window) and
// --baseline-window C:D; --baseline FILE is a baseline of its own.
type Cut struct {
	Window, Split, BaselineWindow string
}

// Apply cuts recs, read from path (of kind), into the window it returns and
// opts' baseline. baseline, when --baseline was given, reads that file's
// records and name. Errors are bad input naming the flag.
func (c Cut) Apply(recs []record.Request, path string, kind Format, baseline func() ([]record.Request, string, error), opts *Options) ([]record.Request, error) {
	win := recs
	if c.Window != "" {
		from, to, err := ParseSpan("--window", c.Window)
		if err != nil {
			return nil, err
		}
		win = Between(recs, from, to)
	}
	switch {
	case baseline != nil:
		var err error
		if opts.Baseline, opts.BaselineName, err = baseline(); err != nil {
			return nil, err
		}
	case c.Split != "":
		at, err := time.ParseDuration(c.Split)
		if err != nil || at <= 0 {
			return nil, badinput.Errorf("--split %q: want a positive duration from the run start, such as 60s", c.Split)
		}
		if !HasSendTimes(recs) {
			return nil, badinput.Errorf("--split: %s has no send times (a %s input without sent_ms/start_times); use --baseline FILE", path, kind)
		}
		opts.Baseline, win = Split(win, at)
		opts.BaselineName = "requests sent before " + c.Split
	case c.BaselineWindow != "":
		from, to, err := ParseSpan("--baseline-window", c.BaselineWindow)
		if err != nil {
			return nil, err
		}
		opts.Baseline = Between(recs, from, to)
		opts.BaselineName = "requests sent in " + c.BaselineWindow
	}
	if len(win) == 0 {
		return nil, badinput.Errorf("the window holds no measured requests: check --window/--split against the run's length")
	}
	if opts.Baseline != nil && len(opts.Baseline) == 0 {
		return nil, badinput.Errorf("the baseline holds no measured requests: check --split/--baseline-window")
	}
	return win, nil
}

// HasSendTimes reports whether any record says when it was sent.
func HasSendTimes(recs []record.Request) bool {
	for i := range recs {
		if recs[i].Sent > 0 {
			return true
		}
	}
	return false
}

// ParseSpan reads "A:B" durations from the run start; either may be empty.
func ParseSpan(flag, s string) (from, to time.Duration, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, badinput.Errorf("%s %q: want A:B, durations from the run start such as 60s:120s (either may be empty)", flag, s)
	}
	parse := func(v string) (time.Duration, error) {
		if strings.TrimSpace(v) == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return 0, badinput.Errorf("%s %q: %q is not a duration such as 60s", flag, s, v)
		}
		return d, nil
	}
	if from, err = parse(a); err != nil {
		return
	}
	if to, err = parse(b); err != nil {
		return
	}
	if to > 0 && to <= from {
		return 0, 0, badinput.Errorf("%s %q: the end must come after the start", flag, s)
	}
	return from, to, nil
}

// WriteText writes d as knee diagnose's text: the verdict, its evidence,
// the action, and the classes when there are several.
func WriteText(w io.Writer, path string, kind Format, d *Diagnosis) error {
	// The path is a flag's and the evidence quotes records (class names,
	// servers' error messages): control characters are escaped.
	w = redact.ControlWriter(w)
	fmt.Fprintf(w, "Diagnosis of %s (%s, %s; %s)\n\n", path, kind, d.Window.Counts(), d.Basis)
	fmt.Fprintf(w, "Verdict:  %s\n\nEvidence:\n", d.Verdict)
	for _, e := range d.Evidence {
		fmt.Fprintf(w, "  - %s\n", e.Text)
	}
	if _, err := fmt.Fprintf(w, "\nAction:   %s\n", d.Action); err != nil || d.Classes == nil {
		return err
	}
	fmt.Fprintf(w, "\nBy class: %s\n", d.Classes.Text)
	for _, c := range d.Classes.Classes {
		fmt.Fprintf(w, "  - %s: %d requests, waits %.1f ms, E2E %.1f ms; time goes to %s\n", c.Class, c.Facts.AllRequests(), c.WaitMS, c.Facts.E2EMS, c.Cause)
	}
	return nil
}
