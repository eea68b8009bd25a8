package runlife

import (
	"fmt"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runcheck"
	"github.com/knee-dev/knee/internal/stats"
)

// End is a finished load against a target as its report reads it: the
// load generator's result, the records' tally and the client meter, and
// what the command knows beside them.
type End struct {
	Res         *loadgen.Result
	Tally       *Tally
	Meter       *runcheck.Meter
	Interrupted bool          // by Ctrl-C
	Grace       time.Duration // the load generator's (0: its default; <0: none)
	// LimitNote says which limit ended the issuing, SplitNote how a mix's
	// requests were split ("" for none); PromptOffNote says when the
	// served prompts were off the requested length (nil: never).
	LimitNote, SplitNote string
	PromptOffNote        func(*stats.PromptCheck) string
	TraceErr             error  // why a replayed trace stopped early
	Warmup               string // --warmup, as given
	UnreachableAfter     time.Duration
	Target               string // redacted, for messages
}

// Outcome is what a finished load says beside its figures.
type Outcome struct {
	Summary stats.Summary
	Classes []report.Class
	Status  string   // complete or interrupted
	Notes   []string // in report order, after the run's own
	Said    []string // also printed as the run ends, in order
	// Failure is why the run measured nothing worth its figures ("" when
	// it did): the run exits 1 saying so.
	Failure string
}

// Outcome summarises the load and says what bounds what its figures mean.
func (e End) Outcome() Outcome {
	res, tally := e.Res, e.Tally
	var o Outcome
	note := func(n string) {
		if n != "" {
			o.Notes = append(o.Notes, n)
		}
	}
	note(e.LimitNote)
	if res.Oversaturation != "" {
		note(res.Oversaturation + "; the figures cover the run until then, a load beyond the server's capacity")
		o.Said = append(o.Said, res.Oversaturation)
	}
	note(e.SplitNote)
	if res.Interrupted > 0 {
		note(fmt.Sprintf("%d requests in flight at the interrupt were canceled and left out of the statistics (records.jsonl keeps them as canceled)", res.Interrupted))
	}
	o.Notes = append(o.Notes, res.Notes...)
	if res.CanceledAtStop > 0 {
		grace := e.Grace
		if grace == 0 {
			grace = loadgen.DefaultGrace
		}
		note(fmt.Sprintf("%d requests still in flight %v (--grace) after the over-saturation stop were canceled and left out of the statistics (records.jsonl keeps them as canceled): each had waited at least that long, so the latency figures understate this load",
			res.CanceledAtStop, max(grace, 0)))
	}
	sum, classes := tally.Summary()
	report.OverRun(classes, sum.DurationS) // one window: the classes add up to the run
	o.Summary, o.Classes, o.Status = sum, classes, "complete"
	if e.Interrupted {
		o.Status = "interrupted"
		note("interrupted: the report covers what was measured before the stop")
	}
	if e.PromptOffNote != nil {
		note(e.PromptOffNote(sum.PromptCheck))
	}
	o.Notes = append(o.Notes, tally.Sessions.Notes()...)
	if e.TraceErr != nil {
		note(fmt.Sprintf("warning: the trace could not be read to its end (%v): the replay stopped there", e.TraceErr))
	}
	o.Notes = append(o.Notes, runcheck.TimestampNote(res))
	o.Notes = append(o.Notes, runcheck.ClientFloorWarnings(sum, res, e.Meter)...)
	if w := stats.OverloadWarning(sum); w != "" {
		note(w)
		o.Said = append(o.Said, w)
	}
	if !e.Interrupted {
		o.Failure = runcheck.MeasurementFailure(sum, int(tally.Count), e.Warmup)
	}
	switch {
	case res.StoppedBy == loadgen.StopTargetGone:
		o.Failure = fmt.Sprintf("stopped early: the target went away (every request failed to connect for %v; %s)", e.UnreachableAfter, record.ErrorKindsLine(sum.ErrorKinds))
	case res.StoppedBy == loadgen.StopOversaturated && sum.Completed == 0:
		// Not a short grace: the load was beyond the server from the start.
		o.Failure = "no measured request completed before the over-saturation stop (" + res.Oversaturation + "): the load is beyond the server from the start; lower --rate"
	case res.StoppedBy == loadgen.StopUnreachable:
		o.Failure = fmt.Sprintf("stopped early: every request of the first %v failed to connect to %s (%s)",
			e.UnreachableAfter, e.Target, record.ErrorKindsLine(sum.ErrorKinds))
	}
	if o.Failure != "" {
		note("warning: " + o.Failure)
	}
	return o
}
