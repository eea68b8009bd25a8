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
type Latency struct {
	N                int
	TTFTP50, TTFTP95 time.Duration
	TPOTP50, TPOTP95 time.Duration
	ErrorKinds       map[record.ErrorKind]int
}

// Recent keeps the latest completed requests' TTFT and TPOT so the
// dashboard can show current latency without touching the statistics.
type Recent struct {
	mu         sync.Mutex
	ttft, tpot []time.Duration
	next       int
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

// Snapshot is the window now.
func (w *Recent) Snapshot() Latency {
	w.mu.Lock()
	ttft := slices.Clone(w.ttft)
	tpot := slices.DeleteFunc(slices.Clone(w.tpot), func(d time.Duration) bool { return d < 0 })
	errs := make(map[record.ErrorKind]int, len(w.errs))
	for k, v := range w.errs {
		errs[k] = v
	}
	w.mu.Unlock()
	slices.Sort(ttft)
	slices.Sort(tpot)
	return Latency{N: len(ttft), TTFTP50: rank(ttft, 0.5), TTFTP95: rank(ttft, 0.95),
		TPOTP50: rank(tpot, 0.5), TPOTP95: rank(tpot, 0.95), ErrorKinds: errs}
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
	line("  throughput %.1f req/s · %.0f output tok/s", rateSince(s.Completed, last.Completed, d), rateSince(s.OutputTokens, last.OutputTokens, d))
	r := s.Recent
	if r.N > 0 {
		line("  last %d: TTFT p50 %s p95 %s · TPOT p50 %s p95 %s", r.N, msStr(r.TTFTP50), msStr(r.TTFTP95), msStr(r.TPOTP50), msStr(r.TPOTP95))
	} else if s.Errors > 0 {
		line("  TTFT –: no completed requests yet, only errors")
	} else {
		line("  waiting for the first completed request")
	}
	if len(r.ErrorKinds) > 0 {
		line("  errors: %s", ErrorKindsLine(r.ErrorKinds))
	}
	return b.String()
}

// ErrorKindsLine lists the failures by kind, in record.ErrorKinds' order,
// e.g. "connect: 12, http_5xx: 3"; stored summaries key them by string.
func ErrorKindsLine[K ~string](kinds map[K]int) string {
	var parts []string
	for _, k := range record.ErrorKinds {
		if n := kinds[K(k)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}

func plainLine(s, last Snapshot, d time.Duration) string {
	line := fmt.Sprintf("progress: t=%.0fs %s in_flight=%d completed=%d errors=%d output_tps=%.0f",
		s.Elapsed.Seconds(), completion(s), s.InFlight, s.Completed, s.Errors,
		rateSince(s.OutputTokens, last.OutputTokens, d))
	if r := s.Recent; r.N > 0 {
		line += fmt.Sprintf(" ttft_p50_ms=%.1f ttft_p95_ms=%.1f", float64(r.TTFTP50)/1e6, float64(r.TTFTP95)/1e6)
	} else if s.Errors > 0 {
		// Nothing completed: no latency to show, and 0 would read as fast.
		line += " ttft_p50_ms=– ttft_p95_ms=– (no completed requests; errors: " + ErrorKindsLine(r.ErrorKinds) + ")"
	}
	return line
}
