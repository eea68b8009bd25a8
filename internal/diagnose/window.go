package diagnose

import (
	"sort"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Between returns the measured records sent in [from, to) (to ≤ 0: no end).
func Between(recs []record.Request, from, to time.Duration) []record.Request {
	var out []record.Request
	for i := range recs {
		r := &recs[i]
		if r.Warmup || r.Sent < from || (to > 0 && r.Sent >= to) {
			continue
		}
		out = append(out, *r)
	}
	return out
}

// Split cuts one run at a send time: the requests sent before it are the
// baseline, those sent at or after it the window.
func Split(recs []record.Request, at time.Duration) (baseline, window []record.Request) {
	return Between(recs, 0, at), Between(recs, at, 0)
}

// thirds returns the first and last third of the measured records by send
// time, when there are enough completed ones and the sends are spread.
func thirds(recs []record.Request) (first, last []record.Request, ok bool) {
	var m []record.Request
	for i := range recs {
		if !recs[i].Warmup {
			m = append(m, recs[i])
		}
	}
	if len(m) < TrendMinRequests {
		return nil, nil, false
	}
	sort.SliceStable(m, func(i, j int) bool { return m[i].Sent < m[j].Sent })
	n := len(m) / 3
	if m[0].Sent == m[len(m)-1].Sent {
		return nil, nil, false
	}
	return m[:n], m[len(m)-n:], true
}
