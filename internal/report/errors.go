package report

import (
	"sort"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/redact"
)

// ErrorMessage is one distinct failure message and how many measured
// requests failed with it.
type ErrorMessage struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Count   int    `json:"count"`
}

// maxErrorMessage is how much of one message a report shows: enough for a
// server's error body, not a whole HTML error page.
const maxErrorMessage = 240

// CommonErrors returns the n most common (kind, message) pairs among the
// measured failed requests, most frequent first: what a person reads to
// know why requests failed (knee records RUN --errors lists every one).
func CommonErrors(recs []record.Request, n int) []ErrorMessage {
	counts := map[[2]string]int{}
	for i := range recs {
		r := &recs[i]
		if r.OK() || r.Warmup {
			continue
		}
		// Escaped here, so that every renderer (and summary.json, which the
		// HTML page and knee report read back) shows the same safe text.
		msg := redact.Control(strings.Join(strings.Fields(r.ErrorMessage), " "))
		if rs := []rune(msg); len(rs) > maxErrorMessage {
			msg = string(rs[:maxErrorMessage-1]) + "…"
		}
		if msg == "" {
			msg = "(no message)"
		}
		counts[[2]string{string(r.Error), msg}]++
	}
	out := make([]ErrorMessage, 0, len(counts))
	for k, c := range counts {
		out = append(out, ErrorMessage{Kind: k[0], Message: k[1], Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Message < out[j].Message
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}
