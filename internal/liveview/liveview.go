// Package liveview is the progress knee bench shows while a load runs: a
// redrawn dashboard on a terminal, a plain line every few seconds otherwise
// (as in CI logs), with the latency of the latest completed requests. It
// reads snapshots any load source can fill and never touches the run's
// statistics.
package liveview

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Snapshot is what the live view shows; any load source can fill it.
type Snapshot struct {
	Elapsed         time.Duration
	Sent, Completed int64
	Errors          int64
	InFlight        int
	OutputTokens    int64
	Target          int64 // requests planned (0: bounded by time)
	Duration        time.Duration
	Recent          Latency
}

// Latency summarises the last completed requests for the live view.
// Answers given whole (embeddings, rerank) have no first token: they are
// counted apart, by E2E and items, so an items run never reads 0 tok/s.
type Latency struct {
	N                int
	TTFTP50, TTFTP95 time.Duration
	TPOTP50, TPOTP95 time.Duration
	ErrorKinds       map[record.ErrorKind]int

	ItemN          int // answers of items in the window
	E2EP50, E2EP95 time.Duration
	Items          int64 // items answered since the start (a counter, for items/s)
}

// Recent keeps the latest completed requests' TTFT and TPOT so the
// dashboard can show current latency without touching the statistics.
type Recent struct {
	mu         sync.Mutex
	ttft, tpot []time.Duration
	next       int
	e2e        []time.Duration // answers of items
	nextE2E    int
	items      int64
	errs       map[record.ErrorKind]int
}

// RecentSize is how many of the latest completed requests the view reads.
const RecentSize = 512

// NewRecent is an empty window.
func NewRecent() *Recent {
	return &Recent{errs: map[record.ErrorKind]int{}}
}

// Add counts r: its latency when it completed, its error kind when not.
func (w *Recent) Add(r *record.Request) {
	ttft, ok := r.TTFT()
	tpot, tok := r.TPOT()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !r.OK() {
		w.errs[r.Error]++
		return
	}
	if !ok {
		if e2e, whole := r.E2E(); whole && r.Items > 0 {
			w.items += int64(r.Items)
			w.e2e, w.nextE2E = push(w.e2e, w.nextE2E, e2e)
		}
		return
	}
	if !tok {
		tpot = -1
	}
	if len(w.ttft) < RecentSize {
		w.ttft, w.tpot = append(w.ttft, ttft), append(w.tpot, tpot)
		return
	}
	w.ttft[w.next], w.tpot[w.next] = ttft, tpot
	w.next = (w.next + 1) % RecentSize
}

// push adds d to a ring of RecentSize.
func push(ring []time.Duration, next int, d time.Duration) ([]time.Duration, int) {
	if len(ring) < RecentSize {
		return append(ring, d), next
	}
	ring[next] = d
	return ring, (next + 1) % RecentSize
}

// Snapshot is the window now.
func (w *Recent) Snapshot() Latency {
	w.mu.Lock()
	ttft := slices.Clone(w.ttft)
	e2e := slices.Clone(w.e2e)
	items := w.items
	tpot := slices.DeleteFunc(slices.Clone(w.tpot), func(d time.Duration) bool { return d < 0 })
	errs := make(map[record.ErrorKind]int, len(w.errs))
	for k, v := range w.errs {
		errs[k] = v
	}
	w.mu.Unlock()
	slices.Sort(ttft)
	slices.Sort(tpot)
	slices.Sort(e2e)
	return Latency{N: len(ttft), TTFTP50: rank(ttft, 0.5), TTFTP95: rank(ttft, 0.95),
		TPOTP50: rank(tpot, 0.5), TPOTP95: rank(tpot, 0.95), ErrorKinds: errs,
		ItemN: len(e2e), E2EP50: rank(e2e, 0.5), E2EP95: rank(e2e, 0.95), Items: items}
}

// rank is a nearest-rank quantile, good enough for a live view (the report
// uses the stats package).
func rank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Start prints a live view until stopped: a redrawn dashboard on a
// terminal, plain periodic lines otherwise (as in CI logs).
func Start(ctx context.Context, w io.Writer, terminal bool, snap func() Snapshot) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	interval := 5 * time.Second
	if terminal {
		interval = 250 * time.Millisecond
	}
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		var last Snapshot
		lines := 0
		for {
			select {
			case <-ctx.Done():
				if terminal && lines > 0 {
					fmt.Fprintf(w, "\033[%dA\033[J", lines) // leave the screen to the report
				}
				return
			case <-t.C:
			}
			s := snap()
			if terminal {
				board := dashboard(s, last, interval)
				if lines > 0 {
					fmt.Fprintf(w, "\033[%dA", lines)
				}
				fmt.Fprint(w, board)
				lines = strings.Count(board, "\n")
			} else {
				fmt.Fprintln(w, plainLine(s, last, interval))
			}
			last = s
		}
	}()
	return func() { cancel(); <-done }
}

func rateSince(now, before int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(now-before) / d.Seconds()
}

func completion(s Snapshot) string {
	switch {
	case s.Target > 0:
		return fmt.Sprintf("%d/%d requests", s.Completed+s.Errors, s.Target)
	case s.Duration > 0:
		return fmt.Sprintf("%.0f%% of %v", 100*min(1, s.Elapsed.Seconds()/s.Duration.Seconds()), s.Duration)
	}
	return fmt.Sprintf("%d requests", s.Completed+s.Errors)
}

func fraction(s Snapshot) float64 {
	switch {
	case s.Target > 0:
		return float64(s.Completed+s.Errors) / float64(s.Target)
	case s.Duration > 0:
		return s.Elapsed.Seconds() / s.Duration.Seconds()
	}
	return 0
}

func msStr(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// dashboard renders the terminal view; every line ends in "\033[K\n" so a
// redraw clears what a longer previous line left.
func dashboard(s, last Snapshot, d time.Duration) string {
	const width = 30
	n := max(0, min(width, int(width*fraction(s))))
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\033[K\n", args...) }
	line("knee bench  [%s%s] %s  %.1fs", strings.Repeat("█", n), strings.Repeat("·", width-n), completion(s), s.Elapsed.Seconds())
	line("  in flight %-6d sent %-8d done %-8d errors %d", s.InFlight, s.Sent, s.Completed, s.Errors)
	r := s.Recent
	switch {
	case r.ItemN > 0 && r.N == 0: // items only: no tokens stream
		line("  throughput %.1f req/s · %.0f items/s", rateSince(s.Completed, last.Completed, d), rateSince(r.Items, last.Recent.Items, d))
	case r.ItemN > 0: // a mix of both
		line("  throughput %.1f req/s · %.0f output tok/s · %.0f items/s", rateSince(s.Completed, last.Completed, d),
			rateSince(s.OutputTokens, last.OutputTokens, d), rateSince(r.Items, last.Recent.Items, d))
	default:
		line("  throughput %.1f req/s · %.0f output tok/s", rateSince(s.Completed, last.Completed, d), rateSince(s.OutputTokens, last.OutputTokens, d))
	}
	if r.N > 0 {
		line("  last %d: TTFT p50 %s p95 %s · TPOT p50 %s p95 %s", r.N, msStr(r.TTFTP50), msStr(r.TTFTP95), msStr(r.TPOTP50), msStr(r.TPOTP95))
	}
	if r.ItemN > 0 {
		line("  last %d answers of items: E2E p50 %s p95 %s", r.ItemN, msStr(r.E2EP50), msStr(r.E2EP95))
	}
	switch {
	case r.N > 0 || r.ItemN > 0:
	case s.Errors > 0:
		line("  TTFT –: no completed requests yet, only errors")
	default:
		line("  waiting for the first completed request")
	}
	if len(r.ErrorKinds) > 0 {
		line("  errors: %s", record.ErrorKindsLine(r.ErrorKinds))
	}
	return b.String()
}

func plainLine(s, last Snapshot, d time.Duration) string {
	r := s.Recent
	line := fmt.Sprintf("progress: t=%.0fs %s in_flight=%d completed=%d errors=%d",
		s.Elapsed.Seconds(), completion(s), s.InFlight, s.Completed, s.Errors)
	if r.N > 0 || r.ItemN == 0 {
		line += fmt.Sprintf(" output_tps=%.0f", rateSince(s.OutputTokens, last.OutputTokens, d))
	}
	if r.ItemN > 0 {
		line += fmt.Sprintf(" items_per_s=%.0f", rateSince(r.Items, last.Recent.Items, d))
	}
	switch {
	case r.N > 0:
		line += fmt.Sprintf(" ttft_p50_ms=%.1f ttft_p95_ms=%.1f", float64(r.TTFTP50)/1e6, float64(r.TTFTP95)/1e6)
		if r.ItemN > 0 {
			line += fmt.Sprintf(" e2e_p50_ms=%.1f e2e_p95_ms=%.1f", float64(r.E2EP50)/1e6, float64(r.E2EP95)/1e6)
		}
	case r.ItemN > 0:
		line += fmt.Sprintf(" e2e_p50_ms=%.1f e2e_p95_ms=%.1f", float64(r.E2EP50)/1e6, float64(r.E2EP95)/1e6)
	case s.Errors > 0:
		// Nothing completed: no latency to show, and 0 would read as fast.
		line += " ttft_p50_ms=– ttft_p95_ms=– (no completed requests; errors: " + record.ErrorKindsLine(r.ErrorKinds) + ")"
	}
	return line
}
