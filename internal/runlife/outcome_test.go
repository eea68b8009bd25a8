package runlife

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/runcheck"
	"github.com/knee-dev/knee/internal/stats"
)

// A run that stopped because the target was never reachable fails naming
// it; the notes keep the command's in order and end with the failure.
func TestOutcomeOfAnUnreachableTarget(t *testing.T) {
	t.Parallel()
	tally := NewTally(stats.Options{}, nil, nil, nil, 0)
	for i := range 3 {
		tally.Add(&record.Request{ID: int64(i), Sent: time.Millisecond, Error: record.ErrConnect, ErrorMessage: "connection refused"})
	}
	meter := runcheck.StartMeter()
	meter.Stop()
	o := End{Res: &loadgen.Result{StoppedBy: loadgen.StopUnreachable}, Tally: tally, Meter: meter,
		LimitNote: "ended by the request limit", UnreachableAfter: 5 * time.Second, Target: "http://x:1"}.Outcome()
	if o.Status != "complete" || o.Summary.Requests != 3 {
		t.Errorf("status %q, %d requests", o.Status, o.Summary.Requests)
	}
	if !strings.HasPrefix(o.Failure, "stopped early: every request of the first 5s failed to connect to http://x:1") {
		t.Errorf("failure %q", o.Failure)
	}
	if len(o.Notes) < 2 || o.Notes[0] != "ended by the request limit" || o.Notes[len(o.Notes)-1] != "warning: "+o.Failure {
		t.Errorf("notes %q", o.Notes)
	}
	if len(o.Said) != 0 {
		t.Errorf("said %q, want nothing printed", o.Said)
	}
	o = End{Res: &loadgen.Result{}, Tally: NewTally(stats.Options{}, nil, nil, nil, 0), Meter: meter, Interrupted: true}.Outcome()
	if o.Status != "interrupted" || o.Failure != "" {
		t.Errorf("interrupted: status %q failure %q", o.Status, o.Failure)
	}
}
