package scrape

import (
	"fmt"
	"math"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Where the server's side of the TTFT split came from.
const (
	SourcePerRequest = "per-request server timings"
	SourceHistograms = "scraped histograms"
)

// OverheadWarnShare and OverheadWarnMS: the client-side share of TTFT at or
// above which the split warns (both must hold).
const (
	OverheadWarnShare = 0.25
	OverheadWarnMS    = 5.0
)

// TTFTSplit divides the time a user waits for the first token (mean over the
// measured, completed requests): client lag (sent late by the client), then
// TTFT itself = network and HTTP overhead + server queue + server prefill.
type TTFTSplit struct {
	Source   string `json:"source"` // SourcePerRequest or SourceHistograms
	Requests int    `json:"requests"`

	ClientLagMS     float64 `json:"client_lag_ms"`
	ClientTTFTMS    float64 `json:"client_ttft_ms"`
	ServerTTFTMS    float64 `json:"server_ttft_ms"`
	ServerQueueMS   float64 `json:"server_queue_ms"`
	ServerPrefillMS float64 `json:"server_prefill_ms"`
	// HasPhases: the server gave queue and prefill separately (else only
	// its TTFT).
	HasPhases bool `json:"has_phases"`
	// OverheadMS = client TTFT − server TTFT: network, HTTP, the server's
	// front end before its clock starts, and the client's own reading.
	OverheadMS    float64 `json:"overhead_ms"`
	OverheadShare float64 `json:"overhead_share"`
	Warning       string  `json:"warning,omitempty"`
}

// Join splits the client's TTFT using per-request server timings when every
// measured request carries them, else the window's scraped histograms. Nil
// when neither is there or no request completed.
func Join(recs []record.Request, w *Window) *TTFTSplit {
	var t JoinTally
	for i := range recs {
		t.Add(&recs[i])
	}
	return t.Split(w)
}

// JoinTally gathers what Join needs from records added one at a time, in
// any order, in a few counters: sums in integer nanoseconds, so the split
// does not depend on the order the records came in. The zero value is
// ready; not safe for concurrent use.
type JoinTally struct {
	n, withPhases         int
	lag, ttft, q, prefill time.Duration
}

// Add counts r if it is a measured, completed request with a TTFT.
func (t *JoinTally) Add(r *record.Request) {
	if r.Warmup || !r.OK() {
		return
	}
	ttft, ok := r.TTFT()
	if !ok {
		return
	}
	t.n++
	t.lag += r.Lag()
	t.ttft += ttft
	if ph := r.ServerPhases; ph != nil && !ph.QueueUnknown { // without the queue there is no split
		t.withPhases++
		t.q += ph.Queue
		t.prefill += ph.Prefill
	}
}

// Split is Join's answer for the records added.
func (t *JoinTally) Split(w *Window) *TTFTSplit {
	n, withPhases := t.n, t.withPhases
	lag, ttft, q, p := ms(t.lag), ms(t.ttft), ms(t.q), ms(t.prefill)
	if n == 0 {
		return nil
	}
	sp := &TTFTSplit{Requests: n, ClientLagMS: lag / float64(n), ClientTTFTMS: ttft / float64(n)}
	switch {
	case withPhases == n:
		sp.Source, sp.HasPhases = SourcePerRequest, true
		sp.ServerQueueMS, sp.ServerPrefillMS = q/float64(n), p/float64(n)
		sp.ServerTTFTMS = sp.ServerQueueMS + sp.ServerPrefillMS
	case w != nil:
		hq, okQ := w.Hists[Queue]
		hp, okP := w.Hists[Prefill]
		ht, okT := w.Hists[TTFT]
		switch {
		case okQ && okP:
			sp.HasPhases = true
			sp.ServerQueueMS, sp.ServerPrefillMS = hq.MeanMS, hp.MeanMS
			sp.ServerTTFTMS = hq.MeanMS + hp.MeanMS
			if okT {
				// The server's own TTFT also counts its front end
				// (tokenizing, scheduling) before the queue.
				sp.ServerTTFTMS = math.Max(ht.MeanMS, sp.ServerTTFTMS)
			}
		case okT:
			sp.ServerTTFTMS = ht.MeanMS
		default:
			return nil
		}
		sp.Source = SourceHistograms
	default:
		return nil
	}
	sp.OverheadMS = sp.ClientTTFTMS - sp.ServerTTFTMS
	if sp.ClientTTFTMS > 0 {
		sp.OverheadShare = sp.OverheadMS / sp.ClientTTFTMS
	}
	if sp.OverheadShare >= OverheadWarnShare && sp.OverheadMS >= OverheadWarnMS {
		sp.Warning = fmt.Sprintf("warning: %.0f%% of client TTFT (%.1f ms of %.1f ms) is outside the server's own TTFT: network, HTTP, proxies or the client. Server-side tuning cannot remove it",
			100*sp.OverheadShare, sp.OverheadMS, sp.ClientTTFTMS)
	}
	return sp
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// Point is the server's state over one scrape interval, for charts.
type Point struct {
	TS          float64  `json:"t_s"` // end of the interval, seconds since the run start
	Running     *float64 `json:"running,omitempty"`
	Waiting     *float64 `json:"waiting,omitempty"`
	KVUsage     *float64 `json:"kv_usage,omitempty"`
	Preemptions *float64 `json:"preemptions,omitempty"`   // in the interval
	TTFTMeanMS  *float64 `json:"ttft_mean_ms,omitempty"`  // requests whose first token came in the interval
	QueueMeanMS *float64 `json:"queue_mean_ms,omitempty"` // requests that finished in the interval
}

// View is what reports show of the server: the run's window, the TTFT
// split, the per-interval points and the notes.
type View struct {
	URL    string     `json:"url"`
	Server string     `json:"server"`
	Window *Window    `json:"window,omitempty"`
	Split  *TTFTSplit `json:"ttft_split,omitempty"`
	Points []Point    `json:"points,omitempty"`
	Notes  []string   `json:"notes,omitempty"`
}

// BuildView joins a run's series with its records over [fromMS, toMS].
func BuildView(s *Series, recs []record.Request, fromMS, toMS float64) *View {
	var t JoinTally
	for i := range recs {
		t.Add(&recs[i])
	}
	return BuildViewOf(s, &t, fromMS, toMS)
}

// BuildViewOf is BuildView from a run's JoinTally instead of its records.
func BuildViewOf(s *Series, t *JoinTally, fromMS, toMS float64) *View {
	if s == nil {
		return nil
	}
	v := &View{URL: s.URL, Server: s.Server, Notes: append([]string(nil), s.Notes...)}
	if s.Server != "" {
		v.Window = s.Window(fromMS, toMS)
	}
	v.Split = t.Split(v.Window)
	if v.Split != nil && v.Split.Warning != "" {
		v.Notes = append(v.Notes, v.Split.Warning)
	}
	if s.Server == "" {
		return v
	}
	var prev *Sample
	for i := range s.Samples {
		c := &s.Samples[i]
		if !c.OK() {
			continue
		}
		if prev != nil {
			pt := Point{TS: c.TMS / 1000}
			if x, ok := c.Values[Running]; ok {
				pt.Running = ptr(x)
			}
			if x, ok := c.Values[Waiting]; ok {
				pt.Waiting = ptr(x)
			}
			if x, ok := c.Values[KVUsage]; ok {
				pt.KVUsage = ptr(x)
			}
			if x, ok := c.Values[Preemptions]; ok {
				if px, ok := prev.Values[Preemptions]; ok {
					pt.Preemptions = ptr(math.Max(x-px, 0))
				}
			}
			mean := func(m Metric) *float64 {
				ch, ph := c.Hists[m], prev.Hists[m]
				if ch == nil || ph == nil {
					return nil
				}
				d, _ := histDelta(ph, ch)
				if d.Count <= 0 {
					return nil
				}
				return ptr(1000 * d.Sum / d.Count)
			}
			pt.TTFTMeanMS, pt.QueueMeanMS = mean(TTFT), mean(Queue)
			v.Points = append(v.Points, pt)
		}
		prev = c
	}
	return v
}
