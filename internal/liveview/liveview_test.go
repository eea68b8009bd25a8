package liveview

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

func TestRecentWindowKeepsLatest(t *testing.T) {
	w := NewRecent()
	for i := 1; i <= RecentSize+100; i++ {
		ms := time.Duration(i) * time.Millisecond
		w.Add(&record.Request{Sent: 0, FirstToken: ms, Done: ms + 10*time.Millisecond, OutputTokens: 11, TokenTimes: []time.Duration{ms}})
	}
	w.Add(&record.Request{Error: record.ErrHTTP5xx})
	s := w.Snapshot()
	if s.N != RecentSize {
		t.Fatalf("window holds %d, want %d", s.N, RecentSize)
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
	s := Snapshot{Elapsed: 2 * time.Second, Sent: 60, Completed: 50, InFlight: 10, Target: 100,
		OutputTokens: 6400, Recent: Latency{N: 50, TTFTP50: 120 * time.Millisecond, TTFTP95: 300 * time.Millisecond,
			ErrorKinds: map[record.ErrorKind]int{record.ErrRejected: 3}}}
	board := dashboard(s, Snapshot{}, time.Second)
	for _, want := range []string{"50/100 requests", "in flight 10", "TTFT p50 120.0 ms p95 300.0 ms", "rejected: 3", "6400 output tok/s"} {
		if !strings.Contains(board, want) {
			t.Errorf("dashboard lacks %q:\n%s", want, board)
		}
	}
	if plain := plainLine(s, Snapshot{}, time.Second); strings.Contains(plain, "\033") || !strings.Contains(plain, "ttft_p95_ms=300.0") {
		t.Errorf("plain line must carry no escapes and the recent TTFT: %q", plain)
	}
	// Only failures so far: "–", never a latency of 0.
	failed := Snapshot{Elapsed: time.Second, Sent: 5, Errors: 5, Target: 10,
		Recent: Latency{ErrorKinds: map[record.ErrorKind]int{record.ErrHTTP5xx: 5}}}
	if plain := plainLine(failed, Snapshot{}, time.Second); !strings.Contains(plain, "ttft_p50_ms=– ttft_p95_ms=– (no completed requests; errors: http_5xx: 5)") {
		t.Errorf("all-failed plain line: %q", plain)
	}
	if board := dashboard(failed, Snapshot{}, time.Second); !strings.Contains(board, "TTFT –: no completed requests yet") || strings.Contains(board, "0.0 ms") {
		t.Errorf("all-failed dashboard:\n%s", board)
	}
}

// Start writes a plain line every 5 s off a terminal, and on a terminal
// redraws the dashboard in place and clears it when stopped (virtual time).
func TestStartPlainAndTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n int64
		snap := func() Snapshot {
			n += 10
			return Snapshot{Elapsed: time.Duration(n) * time.Second / 10, Completed: n, Target: 100}
		}
		var plain strings.Builder
		stop := Start(t.Context(), &plain, false, snap)
		time.Sleep(11 * time.Second)
		stop()
		if lines := strings.Split(strings.TrimSpace(plain.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "progress: t=2s 20/100 requests") {
			t.Errorf("plain: %q", plain.String())
		}
		var term strings.Builder
		stop = Start(t.Context(), &term, true, snap)
		time.Sleep(600 * time.Millisecond)
		stop()
		out := term.String()
		if strings.Count(out, "knee bench  [") != 2 || !strings.Contains(out, "\033[4A") || !strings.HasSuffix(out, "\033[4A\033[J") {
			t.Errorf("terminal: %q", out)
		}
	})
}

// An embeddings or rerank run streams no tokens: the view shows items/s and
// E2E, never "0 output tok/s" or a TTFT it does not have.
func TestItemsRunShowsItemsPerSecond(t *testing.T) {
	w := NewRecent()
	for i := 1; i <= 10; i++ {
		w.Add(&record.Request{Sent: 0, Done: time.Duration(i) * 10 * time.Millisecond, Items: 8})
	}
	r := w.Snapshot()
	if r.N != 0 || r.ItemN != 10 || r.Items != 80 || r.E2EP50 != 60*time.Millisecond {
		t.Fatalf("window %+v: want no TTFT, 10 answers of 80 items, E2E p50 60ms", r)
	}
	s := Snapshot{Elapsed: 2 * time.Second, Sent: 10, Completed: 10, Target: 20, Recent: r}
	last := Snapshot{Completed: 5, Recent: Latency{Items: 40}}
	board := dashboard(s, last, 2*time.Second)
	for _, want := range []string{"2.5 req/s · 20 items/s", "last 10 answers of items: E2E p50 60.0 ms p95 100.0 ms"} {
		if !strings.Contains(board, want) {
			t.Errorf("dashboard lacks %q:\n%s", want, board)
		}
	}
	if strings.Contains(board, "tok/s") || strings.Contains(board, "TTFT") || strings.Contains(board, "waiting") {
		t.Errorf("items dashboard shows tokens, a TTFT or waiting:\n%s", board)
	}
	plain := plainLine(s, last, 2*time.Second)
	if !strings.Contains(plain, "items_per_s=20 e2e_p50_ms=60.0 e2e_p95_ms=100.0") || strings.Contains(plain, "output_tps") || strings.Contains(plain, "ttft") {
		t.Errorf("items plain line: %q", plain)
	}
	// A mix of chat and embeddings shows both rates and both latencies.
	w.Add(&record.Request{Sent: 0, FirstToken: 5 * time.Millisecond, Done: 50 * time.Millisecond, OutputTokens: 10, TokenTimes: []time.Duration{5 * time.Millisecond}})
	s.Recent, s.OutputTokens = w.Snapshot(), 100
	if plain := plainLine(s, last, 2*time.Second); !strings.Contains(plain, "output_tps=50 items_per_s=20 ttft_p50_ms=5.0") || !strings.Contains(plain, "e2e_p50_ms=60.0") {
		t.Errorf("mixed plain line: %q", plain)
	}
	if board := dashboard(s, last, 2*time.Second); !strings.Contains(board, "50 output tok/s · 20 items/s") || !strings.Contains(board, "TTFT p50 5.0 ms") {
		t.Errorf("mixed dashboard:\n%s", board)
	}
}
