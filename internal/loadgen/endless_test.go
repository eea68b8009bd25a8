package loadgen

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/knee-dev/knee/internal/hostile"
	"github.com/knee-dev/knee/internal/record"
)

// TestEndlessStreamsBoundedPerRun: against a server that streams without
// end, every request fails at its chunk bound, and the chunk times the
// run's failed records keep stay within the run's bound, however many of
// them there are: the records past it keep their first token, end and
// count only, and the notes say so.
func TestEndlessStreamsBoundedPerRun(t *testing.T) {
	hs := hostile.New(func(int64) hostile.Fault { return hostile.NeverEnding })
	ts := httptest.NewServer(hs)
	defer ts.Close()
	const bound = 2000
	n := 40
	res := run(t, Config{BaseURL: ts.URL, Concurrency: 4, Requests: int64(n), failedTimesBound: bound}, func(i int64) Request {
		return Request{Prompt: "go on " + hostile.Marker(i), PromptTokens: 3, MaxTokens: 8}
	})
	if len(res.Records) != n {
		t.Fatalf("%d records, want %d", len(res.Records), n)
	}
	kept, bare := 0, 0
	for _, r := range res.Records {
		if r.Error != record.ErrBadPayload || !strings.Contains(r.ErrorMessage, "content chunks") {
			t.Fatalf("request %d: %s: %s, want bad_payload at the chunk bound", r.ID, r.Error, r.ErrorMessage)
		}
		kept += len(r.TokenTimes) + len(r.ServerTokenTimes) + len(r.ServerWriteTimes)
		if len(r.TokenTimes) == 0 {
			bare++
			// (Done may precede FirstToken by nanoseconds: two kernel
			// stamps mapped through different wall-clock fixes.)
			if !r.HasFirstToken() || r.Done <= 0 {
				t.Errorf("request %d: first token %v, done %v: a bare record keeps them", r.ID, r.FirstToken, r.Done)
			}
		} else if cap(r.TokenTimes) > len(r.TokenTimes)+len(r.TokenTimes)/4+8 {
			t.Errorf("request %d: %d chunk times in a slice of %d", r.ID, len(r.TokenTimes), cap(r.TokenTimes))
		}
	}
	// 2·8+256 = 272 chunks each: 7 records fit in 2,000.
	if kept > bound || bare != n-bound/272 {
		t.Errorf("failed records keep %d chunk times (bound %d), %d keep none; want at most the bound and %d bare", kept, bound, bare, n-bound/272)
	}
	found := false
	for _, note := range res.Notes {
		found = found || strings.Contains(note, "keep no per-chunk times")
	}
	if !found {
		t.Errorf("notes %q, want one on the records kept bare", res.Notes)
	}
}

// TestDiscardRecordsKeepsNone: with DiscardRecords the run hands every
// record to OnRecord, whole (an endless stream's chunk times too), and
// keeps none itself, so the caller's sink and accumulators are all the
// memory the records cost (bench and sweep run this way).
func TestDiscardRecordsKeepsNone(t *testing.T) {
	hs := hostile.New(func(int64) hostile.Fault { return hostile.NeverEnding })
	ts := httptest.NewServer(hs)
	defer ts.Close()
	const n = 12
	var mu sync.Mutex
	seen, chunks := map[int64]bool{}, 0
	res := run(t, Config{BaseURL: ts.URL, Concurrency: 4, Requests: n, DiscardRecords: true, OnRecord: func(r *record.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen[r.ID] = true
		chunks += len(r.TokenTimes)
	}}, func(i int64) Request {
		return Request{Prompt: "go on " + hostile.Marker(i), PromptTokens: 3, MaxTokens: 8}
	})
	if len(res.Records) != 0 {
		t.Errorf("the result holds %d records, want none", len(res.Records))
	}
	if len(seen) != n || chunks != n*(2*8+256) {
		t.Errorf("OnRecord saw %d records with %d chunk times, want %d with %d", len(seen), chunks, n, n*(2*8+256))
	}
}
