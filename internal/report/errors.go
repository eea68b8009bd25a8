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
	var t ErrorTally
	for i := range recs {
		t.Add(&recs[i])
	}
	return t.Top(n)
}

// maxErrorKinds bounds the distinct (kind, message) pairs an ErrorTally
// counts one by one: a server that puts a counter or a time in every
// message must not grow a run's memory with its length. Messages first
// seen past it are counted together under otherMessages, per kind.
const maxErrorKinds = 4096

// otherMessages stands for the messages an ErrorTally met past its bound.
const otherMessages = "(other messages, not told apart: over 4096 distinct ones)"

// ErrorTally counts failure messages as records finish, in bounded memory,
// for CommonErrors' list without keeping the records. The zero value is
// ready; not safe for concurrent use.
type ErrorTally struct {
	counts map[[2]string]int
}

// Add counts r if it is a measured failure.
func (t *ErrorTally) Add(r *record.Request) {
	if r.OK() || r.Warmup {
		return
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
	if t.counts == nil {
		t.counts = map[[2]string]int{}
	}
	key := [2]string{string(r.Error), msg}
	if _, ok := t.counts[key]; !ok && len(t.counts) >= maxErrorKinds {
		key[1] = otherMessages
	}
	t.counts[key]++
}

// Top returns the n most common pairs counted, most frequent first (all
// of them when n <= 0).
func (t *ErrorTally) Top(n int) []ErrorMessage {
	out := make([]ErrorMessage, 0, len(t.counts))
	for k, c := range t.counts {
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
