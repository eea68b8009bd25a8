package stats

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Embeddings and rerank records: E2E from send to the answer's end, items
// per second, no TTFT, and not counted as answers without content.
func TestItemsRecordsSummarized(t *testing.T) {
	var recs []record.Request
	for i := range 4 {
		at := time.Duration(i) * 250 * time.Millisecond
		recs = append(recs, record.Request{ID: int64(i), Scheduled: at, Sent: at, Done: at + 40*time.Millisecond,
			StreamEnd: at + 40*time.Millisecond, Items: 8, InputTokens: 100, TokenSource: record.TokensFromUsage})
	}
	s := Summarize(recs, Options{})
	if s.Items != 32 || s.E2E.Count != 4 || s.E2E.P50 != 40 || s.TTFT.Count != 0 {
		t.Fatalf("items %d, e2e count %d p50 %v, ttft count %d", s.Items, s.E2E.Count, s.E2E.P50, s.TTFT.Count)
	}
	if want := 32 / s.DurationS; s.ItemThroughputPS != want || want <= 0 {
		t.Errorf("items/s %v, want %v", s.ItemThroughputPS, want)
	}
	for _, w := range s.Warnings {
		if strings.Contains(w, "no content") {
			t.Errorf("warning %q for answers of items", w)
		}
	}
}
