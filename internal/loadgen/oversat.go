package loadgen

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// Over-saturation: an open-loop load above what the server can serve makes
// its queue, and so the client's requests in flight, grow without bound;
// the rest of such a run measures only the queue's growth. With
// Config.StopOversaturated the run watches in-flight requests and the TTFT
// of the requests that finish, window by window, and stops issuing as soon
// as both trend up (GuideLLM stops a benchmark the same way; its #438).

// StopOversaturated: the queue grew without bound (Result.Oversaturation
// says how).
const StopOversaturated = "oversaturated"

// DefaultOversaturationWindow is the watch's window when
// Config.OversaturationWindow is 0.
const DefaultOversaturationWindow = time.Second

// oversatWindows is how many consecutive windows must show growth.
const oversatWindows = 4

// oversatMinInFlight: below this many requests in flight no queue is
// called unbounded (a short burst of a light load).
const oversatMinInFlight = 16

// maxWindowTTFTs bounds the TTFT samples kept per window.
const maxWindowTTFTs = 4096

// ttftWindow collects the TTFTs of requests finished in the current window.
type ttftWindow struct {
	mu    sync.Mutex
	ttfts []time.Duration
}

func (w *ttftWindow) add(d time.Duration) {
	w.mu.Lock()
	if len(w.ttfts) < maxWindowTTFTs {
		w.ttfts = append(w.ttfts, d)
	}
	w.mu.Unlock()
}

// takeMedian returns the window's median TTFT (0: none finished) and
// starts the next window.
func (w *ttftWindow) takeMedian() time.Duration {
	w.mu.Lock()
	v := w.ttfts
	w.ttfts = nil
	w.mu.Unlock()
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// Oversaturated judges the last windows of a run: in-flight requests at
// each window's end and the median TTFT of requests finished in it (0:
// none). It returns why the queue grows without bound, or "" when it does
// not: in-flight rose in each of the last oversatWindows windows to at
// least twice where it started and oversatMinInFlight, while TTFT rose
// too (or no request finished at all).
func Oversaturated(inFlight []int64, ttft []time.Duration) string {
	n := oversatWindows
	if len(inFlight) <= n || len(ttft) < n {
		return ""
	}
	f := inFlight[len(inFlight)-n-1:]
	for i := 1; i < len(f); i++ {
		if f[i] <= f[i-1] {
			return ""
		}
	}
	first, last := f[0], f[len(f)-1]
	if last < 2*first || last < oversatMinInFlight {
		return ""
	}
	tt := ttft[len(ttft)-n:]
	var seen []time.Duration
	for _, d := range tt {
		if d > 0 {
			seen = append(seen, d)
		}
	}
	switch {
	case len(seen) == 0:
		return fmt.Sprintf("requests in flight grew from %d to %d over %d windows and none finished", first, last, n)
	case len(seen) >= 2 && seen[len(seen)-1] > seen[0]:
		return fmt.Sprintf("requests in flight grew from %d to %d over %d windows while the median TTFT of finished requests rose from %v to %v",
			first, last, n, seen[0].Round(time.Millisecond), seen[len(seen)-1].Round(time.Millisecond))
	}
	return ""
}

// watchOversaturation samples the run every window until issuing stops,
// and stops it when Oversaturated says so.
func (r *Run) watchOversaturation() {
	window := r.cfg.OversaturationWindow
	if window <= 0 {
		window = DefaultOversaturationWindow
	}
	t := time.NewTicker(window)
	defer t.Stop()
	var inFlight []int64
	var ttft []time.Duration
	for {
		select {
		case <-r.issueCtx.Done():
			return
		case <-t.C:
		}
		inFlight = append(inFlight, r.inFlight.Load())
		ttft = append(ttft, r.oversatTTFT.takeMedian())
		if why := Oversaturated(inFlight, ttft); why != "" {
			why = fmt.Sprintf("stopped at %v: over-saturated: %s", time.Since(r.start).Round(100*time.Millisecond), why)
			r.oversatWhy.Store(&why)
			r.stopFor(StopOversaturated)
			return
		}
		if len(inFlight) > 64 { // only the last windows matter
			inFlight, ttft = inFlight[len(inFlight)-oversatWindows-1:], ttft[len(ttft)-oversatWindows-1:]
		}
	}
}
