package diagnose

import (
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Embeddings or rerank answers have no phases to read: the diagnosis says
// so rather than calling the requests failed.
func TestItemAnswersAreNotFailures(t *testing.T) {
	var recs []record.Request
	for i := range 10 {
		at := time.Duration(i) * 100 * time.Millisecond
		recs = append(recs, record.Request{ID: int64(i), Scheduled: at, Sent: at, Done: at + 30*time.Millisecond, StreamEnd: at + 30*time.Millisecond, Items: 4})
	}
	d := Diagnose(recs, Options{})
	if d.Verdict == Errors || len(d.Evidence) == 0 || d.Evidence[0].Metric != "item_answers" || d.Window.ItemAnswers != 10 {
		t.Errorf("verdict %s, evidence %+v", d.Verdict, d.Evidence)
	}
	// The header counts them: never "0 requests, 0 completed".
	if got, want := d.Window.Counts(), "10 requests, 10 completed (10 embeddings or rerank answers)"; got != want {
		t.Errorf("counts %q, want %q", got, want)
	}
	recs[3].Error, recs[3].Items = record.ErrHTTP5xx, 0
	if d := Diagnose(recs, Options{}); d.Window.Requests != 1 || d.Window.ItemAnswers != 9 {
		t.Errorf("a failed one counts as a request: %d requests, %d item answers", d.Window.Requests, d.Window.ItemAnswers)
	} else if got, want := d.Window.Counts(), "10 requests, 9 completed (9 embeddings or rerank answers)"; got != want {
		t.Errorf("counts %q, want %q", got, want)
	}
}
