package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

func TestRecentWindowKeepsLatest(t *testing.T) {
	w := newRecentWindow()
	for i := 1; i <= recentSize+100; i++ {
		ms := time.Duration(i) * time.Millisecond
		w.add(&record.Request{Sent: 0, FirstToken: ms, Done: ms + 10*time.Millisecond, OutputTokens: 11, TokenTimes: []time.Duration{ms}})
	}
	w.add(&record.Request{Error: record.ErrHTTP5xx})
	s := w.snapshot()
	if s.N != recentSize {
		t.Fatalf("window holds %d, want %d", s.N, recentSize)
	}
	// The oldest 100 (1..100 ms) were overwritten: the median of 101..612 is 357 ms.
	if s.TTFTP50 != 357*time.Millisecond || s.TPOTP50 != time.Millisecond {
		t.Errorf("p50 TTFT %v TPOT %v, want 357ms and 1ms", s.TTFTP50, s.TPOTP50)
	}
	if s.ErrorKinds[record.ErrHTTP5xx] != 1 {
		t.Errorf("error kinds %v, want one http_5xx", s.ErrorKinds)
	}
}

func TestDashboardLines(t *testing.T) {
	s := progressSnapshot{Elapsed: 2 * time.Second, Sent: 60, Completed: 50, InFlight: 10, Target: 100,
		OutputTokens: 6400, Recent: recentLatency{N: 50, TTFTP50: 120 * time.Millisecond, TTFTP95: 300 * time.Millisecond,
			ErrorKinds: map[record.ErrorKind]int{record.ErrRejected: 3}}}
	board := dashboard(s, progressSnapshot{}, time.Second)
	for _, want := range []string{"50/100 requests", "in flight 10", "TTFT p50 120.0 ms p95 300.0 ms", "rejected: 3", "6400 output tok/s"} {
		if !strings.Contains(board, want) {
			t.Errorf("dashboard lacks %q:\n%s", want, board)
		}
	}
	if plain := plainLine(s, progressSnapshot{}, time.Second); strings.Contains(plain, "\033") || !strings.Contains(plain, "ttft_p95_ms=300.0") {
		t.Errorf("plain line must carry no escapes and the recent TTFT: %q", plain)
	}
	// Only failures so far: "–", never a latency of 0.
	failed := progressSnapshot{Elapsed: time.Second, Sent: 5, Errors: 5, Target: 10,
		Recent: recentLatency{ErrorKinds: map[record.ErrorKind]int{record.ErrHTTP5xx: 5}}}
	if plain := plainLine(failed, progressSnapshot{}, time.Second); !strings.Contains(plain, "ttft_p50_ms=– ttft_p95_ms=– (no completed requests; errors: http_5xx: 5)") {
		t.Errorf("all-failed plain line: %q", plain)
	}
	if board := dashboard(failed, progressSnapshot{}, time.Second); !strings.Contains(board, "TTFT –: no completed requests yet") || strings.Contains(board, "0.0 ms") {
		t.Errorf("all-failed dashboard:\n%s", board)
	}
}
