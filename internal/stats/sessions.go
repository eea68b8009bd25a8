package stats

import (
	"fmt"
	"slices"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// SessionNotes report the conversations: TTFT of first turns against later
// ones (later turns resend a history a prefix cache can hold) and how long
// a conversation took.
func SessionNotes(recs []record.Request) []string {
	var first, later []float64
	start, end := map[string]time.Duration{}, map[string]time.Duration{}
	turns := 0
	for i := range recs {
		r := &recs[i]
		if r.Session == "" {
			continue
		}
		if t, ok := start[r.Session]; !ok || r.Sent < t {
			start[r.Session] = r.Sent
		}
		end[r.Session] = max(end[r.Session], r.StreamEnd)
		turns = max(turns, r.Turn)
		ttft, ok := r.TTFT()
		if !ok || !r.OK() || r.Warmup {
			continue
		}
		if r.Turn == 1 {
			first = append(first, float64(ttft)/1e6)
		} else {
			later = append(later, float64(ttft)/1e6)
		}
	}
	if len(start) == 0 {
		return nil
	}
	var spans []float64
	for s, t := range start {
		spans = append(spans, (end[s] - t).Seconds())
	}
	notes := []string{fmt.Sprintf("sessions: %d conversations of up to %d turns; per-conversation time p50 %.2f s, max %.2f s", len(start), turns, Median(spans), slices.Max(spans))}
	if len(first) > 0 && len(later) > 0 {
		notes = append(notes, fmt.Sprintf("TTFT by turn: first turns p50 %.1f ms (%d), later turns p50 %.1f ms (%d): later turns resend the history, which a prefix cache can hold",
			Median(first), len(first), Median(later), len(later)))
	}
	return notes
}
