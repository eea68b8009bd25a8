package diagnose

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// The JSON counts a window's requests as the text header does: item
// answers (embeddings, rerank) included in requests and completed, and
// item_answers says how many of them they were; the rules still read the
// streamed ones (Requests). 10 item answers, 29 streamed answers, one
// failure.
func TestItemAnswersCountedAlikeInJSONAndText(t *testing.T) {
	var recs []record.Request
	for i := range 40 {
		at := time.Duration(i) * 100 * time.Millisecond
		r := record.Request{ID: int64(i), Scheduled: at, Sent: at, FirstToken: at + 10*time.Millisecond, Done: at + 50*time.Millisecond,
			StreamEnd: at + 50*time.Millisecond, InputTokens: 16, OutputTokens: 8}
		switch {
		case i%4 == 0:
			r.FirstToken, r.OutputTokens, r.Items = 0, 0, 4
		case i == 1:
			r.Error, r.FirstToken, r.Done = record.ErrHTTP5xx, 0, 0
		}
		recs = append(recs, r)
	}
	d := Diagnose(recs, Options{})
	if got, want := d.Window.Counts(), "40 requests, 39 completed (10 embeddings or rerank answers)"; got != want {
		t.Errorf("text counts %q, want %q", got, want)
	}
	if d.Window.Requests != 30 || d.Window.Completed != 29 {
		t.Errorf("the rules read %d requests, %d completed; want the 30 streamed or failed, 29 completed", d.Window.Requests, d.Window.Completed)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Window struct {
			Requests    int     `json:"requests"`
			Completed   int     `json:"completed"`
			ItemAnswers int     `json:"item_answers"`
			ErrorRate   float64 `json:"error_rate"`
		} `json:"window_facts"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j.Window.Requests != 40 || j.Window.Completed != 39 || j.Window.ItemAnswers != 10 {
		t.Errorf("JSON window_facts: %d requests, %d completed, %d item answers; want 40, 39, 10 as the text says", j.Window.Requests, j.Window.Completed, j.Window.ItemAnswers)
	}
	if j.Window.ErrorRate != d.Window.ErrorRate || j.Window.ErrorRate <= 0 {
		t.Errorf("JSON error_rate %v, facts %v", j.Window.ErrorRate, d.Window.ErrorRate)
	}
}
