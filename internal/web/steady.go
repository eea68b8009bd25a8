package web

import (
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// steadyWindow measures a closed loop's steady-state throughput by Little's
// law: c users, each sending its next request when the last one ends, are
// served at c / mean end-to-end latency. Counting the measured requests
// from their first send to their last end, as a summary does, takes in
// the start-up queue and the drain after the last send; with thousands of
// users that read as throughput falling past saturation, which a real
// engine's does not do.
type steadyWindow struct {
	users int
	e2e   time.Duration // summed over the measured completed requests
	n     int
}

func (w *steadyWindow) add(r *record.Request) {
	if r.Warmup || !r.OK() {
		return
	}
	if e, ok := r.E2E(); ok {
		w.e2e += e
		w.n++
	}
}

// rate is the steady-state requests per second; false without enough
// completed requests to say.
func (w *steadyWindow) rate() (float64, bool) {
	if w.users <= 0 || w.n < 10 || w.e2e <= 0 {
		return 0, false
	}
	return float64(w.users) / (w.e2e.Seconds() / float64(w.n)), true
}

// applySteady rescales a closed loop's throughputs (requests, tokens and
// goodput alike: the lengths do not depend on when a request ran) to the
// steady-state rate.
func applySteady(s *stats.Summary, w *steadyWindow) {
	rps, ok := w.rate()
	if !ok || s.RequestThroughputRPS <= 0 {
		return
	}
	f := rps / s.RequestThroughputRPS
	s.RequestThroughputRPS = rps
	s.InputTokenThroughputTPS *= f
	s.OutputTokenThroughputTPS *= f
	s.TotalTokenThroughputTPS *= f
	if s.GoodputRPS != nil {
		g := *s.GoodputRPS * f
		s.GoodputRPS = &g
	}
}
