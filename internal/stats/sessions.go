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
	var t SessionTally
	for i := range recs {
		t.Add(&recs[i])
	}
	return t.Notes()
}

// SessionTally gathers what SessionNotes says from records added one at a
// time, in any order, without keeping them: per conversation its start and
// end, per measured turn its TTFT (8 bytes). The zero value is ready; not
// safe for concurrent use.
type SessionTally struct {
	start, end   map[string]time.Duration
	turns        int
	first, later []float64 // TTFT (ms) of first and later turns
}

// Add counts r when it is a conversation's turn.
func (t *SessionTally) Add(r *record.Request) {
	if r.Session == "" {
		return
	}
	if t.start == nil {
		t.start, t.end = map[string]time.Duration{}, map[string]time.Duration{}
	}
	if s, ok := t.start[r.Session]; !ok || r.Sent < s {
		t.start[r.Session] = r.Sent
	}
	t.end[r.Session] = max(t.end[r.Session], r.StreamEnd)
	t.turns = max(t.turns, r.Turn)
	ttft, ok := r.TTFT()
	if !ok || !r.OK() || r.Warmup {
		return
	}
	if r.Turn == 1 {
		t.first = append(t.first, float64(ttft)/1e6)
	} else {
		t.later = append(t.later, float64(ttft)/1e6)
	}
}

// Notes are SessionNotes' lines for the turns added (none without any).
func (t *SessionTally) Notes() []string {
	if len(t.start) == 0 {
		return nil
	}
	var spans []float64
	for s, at := range t.start {
		spans = append(spans, (t.end[s] - at).Seconds())
	}
	notes := []string{fmt.Sprintf("sessions: %d conversations of up to %d turns; per-conversation time p50 %.2f s, max %.2f s", len(t.start), t.turns, Median(spans), slices.Max(spans))}
	if len(t.first) > 0 && len(t.later) > 0 {
		notes = append(notes, fmt.Sprintf("TTFT by turn: first turns p50 %.1f ms (%d), later turns p50 %.1f ms (%d): later turns resend the history, which a prefix cache can hold",
			Median(t.first), len(t.first), Median(t.later), len(t.later)))
	}
	return notes
}
