package web

import (
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Answers of items are charted by the second they ended in, with their
// items and E2E; streamed answers and failures are left to the summary.
func TestItemSeries(t *testing.T) {
	ms := time.Millisecond
	recs := []record.Request{
		{Sent: 100 * ms, Done: 300 * ms, Items: 4},   // second 0, 200 ms
		{Sent: 500 * ms, Done: 900 * ms, Items: 4},   // second 0, 400 ms
		{Sent: 2900 * ms, Done: 3000 * ms, Items: 2}, // second 3, 100 ms
		{Sent: 0, Done: 1500 * ms, Error: record.ErrHTTP5xx},
		{Sent: 0, FirstToken: 10 * ms, Done: 1200 * ms, OutputTokens: 5, TokenTimes: []time.Duration{10 * ms}},
	}
	got := itemSeries(recs)
	want := []itemSecond{{T: 0, Items: 8, E2EP50MS: 400, E2EP95MS: 400}, {T: 3, Items: 2, E2EP50MS: 100, E2EP95MS: 100}}
	if len(got) != len(want) {
		t.Fatalf("series %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("second %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := itemSeries(recs[3:]); s != nil {
		t.Errorf("a streamed run has an items series: %+v", s)
	}
}
