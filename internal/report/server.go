package report

// The server's view in reports: what knee scraped from the target's
// /metrics, and the client's TTFT split against it.

import (
	"bufio"
	"fmt"
	"math"
	"strconv"

	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
)

var histNames = map[scrape.Metric]string{
	scrape.Queue: "queue", scrape.Prefill: "prefill", scrape.Decode: "decode", scrape.Inference: "prefill+decode",
	scrape.TTFT: "TTFT", scrape.ITL: "ITL", scrape.E2E: "E2E",
}

// serverSections lay out a run's server view (nil: none).
func serverSections(v *scrape.View, s *stats.Summary) []section {
	if v == nil {
		return nil
	}
	head := section{title: fmt.Sprintf("Server view (scraped from %s: %s)", v.URL, scrape.ServerLabel(v.Server))}
	add := func(k, val string) { head.kv = append(head.kv, [2]string{k, val}) }
	w := v.Window
	if w == nil {
		add("scrapes", "no usable deltas: see the notes")
	} else {
		add("scrapes", fmt.Sprintf("%d successful over %s–%s s since start; %d failed; %d counter resets",
			w.Scrapes, fnum(w.FromMS/1000, 1), fnum(w.ToMS/1000, 1), w.Failed, w.Resets))
		gauge := func(m scrape.Metric, name string, scale float64, unit string, extra string) {
			if g, ok := w.Gauges[m]; ok {
				add(name, fmt.Sprintf("mean %s%s, max %s%s, last %s%s%s", fnum(g.Mean*scale, 1), unit, fnum(g.Max*scale, 1), unit, fnum(g.Last*scale, 1), unit, extra))
			}
		}
		gauge(scrape.Running, "running requests", 1, "", "")
		grow := ""
		if w.WaitingGrowing {
			grow = " — grew through the window without draining: the server is saturated"
		}
		gauge(scrape.Waiting, "waiting requests", 1, "", grow)
		gauge(scrape.KVUsage, "KV-cache usage", 100, "%", "")
		if d, ok := w.Deltas[scrape.Preemptions]; ok {
			add("preemptions", strconv.FormatFloat(d, 'f', 0, 64))
		}
		if w.PrefixHitRate != nil {
			add("prefix-cache hit rate", pct(*w.PrefixHitRate))
		}
		if w.PromptTPS != nil || w.GenerationTPS != nil {
			t := ""
			if w.PromptTPS != nil {
				t = "prompt " + fnum(*w.PromptTPS, 1) + " tok/s"
			}
			if w.GenerationTPS != nil {
				if t != "" {
					t += ", "
				}
				t += "generation " + fnum(*w.GenerationTPS, 1) + " tok/s"
			}
			add("server tokens", t+fmt.Sprintf(" (client measured output %s tok/s over its own window)", fnum(s.OutputTokenThroughputTPS, 1)))
		}
	}
	out := []section{head}
	if w != nil && len(w.Hists) > 0 {
		tb := &table{header: []string{"", "count", "mean", "p50", "p90", "p95", "p99"}}
		for _, m := range scrape.HistMetrics {
			h, ok := w.Hists[m]
			if !ok {
				continue
			}
			row := []string{histNames[m], fnum(h.Count, 0), fnum(h.MeanMS, 2)}
			clientMax, bounded := clientBound(m, s)
			for i, v := range []float64{h.P50MS, h.P90MS, h.P95MS, h.P99MS} {
				row = append(row, histPercentile(h, []float64{0.50, 0.90, 0.95, 0.99}[i], v, clientMax, bounded))
			}
			tb.rows = append(tb.rows, row)
		}
		out = append(out, section{title: "Server time distributions (ms, from histogram deltas; percentiles interpolated in the server's buckets, ≤ the bucket's bound where it is wider than the value or the client's measured maximum where that is lower, ≥ the last bound where the rank falls in the open +Inf bucket)", table: tb})
	}
	if sp := v.Split; sp != nil {
		tb := &table{header: []string{"part", "ms", "share of TTFT (sched)"}}
		total := sp.ClientLagMS + sp.ClientTTFTMS
		row := func(name string, val float64) {
			share := none
			if total > 0 {
				share = pct(val / total)
			}
			tb.rows = append(tb.rows, []string{name, fnum(val, 2), share})
		}
		// The same parts as the JSON's ttft_split, so the two never disagree.
		for _, p := range ttftSplitParts(v) {
			row(ttftPartLabels[p.Part], p.MS)
		}
		row("= TTFT (sched), mean", total)
		out = append(out, section{title: fmt.Sprintf("TTFT split (mean of %d requests; server side from %s)", sp.Requests, sp.Source), table: tb})
	}
	if len(v.Notes) > 0 {
		out = append(out, section{title: "Server view notes", bullets: v.Notes})
	}
	return out
}

// Bounds a shown server percentile can have (summary.json
// "server_percentiles_ms"): the interpolated value itself, at most the value
// (a bucket edge or the client's measured maximum), or at least it (the
// rank fell in the open-ended +Inf bucket; the value is the last bound).
const (
	boundValue   = "value"
	boundAtMost  = "at_most"
	boundAtLeast = "at_least"
)

// ServerPercentile is one server-histogram percentile as the report shows
// it, in ms, with what the histogram can tell of it.
type ServerPercentile struct {
	ValueMS float64 `json:"value_ms"`
	Bound   string  `json:"bound"` // value, at_most or at_least
}

// serverPercentile is what histPercentile shows, as data (the text
// renderer keeps its own; TestServerPercentilesMatchText holds the two
// together): percentile q of h, interpolated as v, at least the last bound
// when its rank falls in the open-ended +Inf bucket, otherwise at most its
// bucket's upper bound and, when bounded, the client's measured maximum
// clientMax. ok is false without buckets.
func serverPercentile(h scrape.HistStats, q, v, clientMax float64, bounded bool) (p ServerPercentile, ok bool) {
	if !h.Buckets {
		return p, false
	}
	if last, over := h.OverLastBound(q); over {
		return ServerPercentile{last, boundAtLeast}, true
	}
	hi, coarse := h.Coarse(v)
	if bounded && clientMax < hi {
		hi = clientMax
		coarse = coarse || v > clientMax
	}
	if coarse {
		return ServerPercentile{hi, boundAtMost}, true
	}
	return ServerPercentile{v, boundValue}, true
}

// histPercentile renders percentile q of h, interpolated as v: "≥ last
// bound" when its rank falls in the open-ended +Inf bucket (the histogram
// cannot tell more); otherwise never above its bucket's upper bound nor,
// when bounded, above clientMax, the client's measured maximum of a time
// that contains it; "≤ bound" where that bound is what is known.
func histPercentile(h scrape.HistStats, q, v, clientMax float64, bounded bool) string {
	if !h.Buckets {
		return none
	}
	if last, over := h.OverLastBound(q); over {
		return "≥" + fnum(last, 0)
	}
	hi, coarse := h.Coarse(v)
	if bounded && clientMax < hi {
		hi = clientMax
		coarse = coarse || v > clientMax
	}
	if coarse {
		return "≤" + fnum(hi, 0)
	}
	return fnum(v, 1)
}

// serverPercentiles are the server histograms' percentiles as the text
// report shows them, by metric and percentile (p50, p90, p95, p99), so
// summary.json carries the bounded figures, not only the raw interpolation.
func serverPercentiles(v *scrape.View, s *stats.Summary) map[scrape.Metric]map[string]ServerPercentile {
	if v == nil || v.Window == nil || len(v.Window.Hists) == 0 {
		return nil
	}
	out := map[scrape.Metric]map[string]ServerPercentile{}
	for m, h := range v.Window.Hists {
		clientMax, bounded := clientBound(m, s)
		ps := map[string]ServerPercentile{}
		for i, name := range []string{"p50", "p90", "p95", "p99"} {
			q := []float64{0.50, 0.90, 0.95, 0.99}[i]
			val := []float64{h.P50MS, h.P90MS, h.P95MS, h.P99MS}[i]
			if p, ok := serverPercentile(h, q, val, clientMax, bounded); ok {
				ps[name] = p
			}
		}
		if len(ps) > 0 {
			out[m] = ps
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// clientBound is the client's measured maximum of a time that contains
// server metric m for every request (the server's TTFT, queue and prefill
// lie within the client's TTFT; its E2E, decode and inference within the
// client's E2E). Known only when every measured request completed: a
// request the client gave up on may have run longer at the server.
func clientBound(m scrape.Metric, s *stats.Summary) (float64, bool) {
	if s == nil || s.Requests == 0 || s.Completed != s.Requests {
		return 0, false
	}
	switch m {
	case scrape.TTFT, scrape.Queue, scrape.Prefill:
		return s.TTFT.Max, s.TTFT.Max > 0
	case scrape.E2E, scrape.Decode, scrape.Inference:
		return s.E2E.Max, s.E2E.Max > 0
	}
	return 0, false
}

// serverCharts draws the server's queue beside the client's in-flight
// count, KV usage and preemptions, and server vs client TTFT over time.
func serverCharts(bw *bufio.Writer, v *scrape.View, series []stats.Second) {
	if v == nil || len(v.Points) == 0 {
		return
	}
	n := len(v.Points)
	t := make([]float64, n)
	get := func(f func(p *scrape.Point) *float64, scale float64) []float64 {
		ys := make([]float64, n)
		for i := range v.Points {
			ys[i] = math.NaN()
			if x := f(&v.Points[i]); x != nil {
				ys[i] = *x * scale
			}
		}
		return ys
	}
	for i := range v.Points {
		t[i] = v.Points[i].TS
	}
	ct := make([]float64, len(series))
	inflight, p50 := make([]float64, len(series)), make([]float64, len(series))
	for i, sec := range series {
		ct[i], inflight[i], p50[i] = float64(sec.T), float64(sec.InFlight), sec.TTFTP50MS
	}
	fmt.Fprintf(bw, "<h2>Server over time (scraped)</h2>\n<div class=\"charts\">\n")
	lineChart(bw, chartSpec{name: "server-queue-series", title: "Server running and waiting requests beside the client's in flight", xLabel: "time since start (s)", yLabel: "requests",
		series: []chartSeries{
			{label: "server running", color: colorBlue, xs: t, ys: get(func(p *scrape.Point) *float64 { return p.Running }, 1)},
			{label: "server waiting", color: colorOrange, xs: t, ys: get(func(p *scrape.Point) *float64 { return p.Waiting }, 1)},
			{label: "client in flight", color: colorGrey, xs: ct, ys: inflight},
		}})
	lineChart(bw, chartSpec{name: "server-kv-series", title: "KV-cache usage and preemptions per scrape interval", xLabel: "time since start (s)", yLabel: "% / preemptions",
		series: []chartSeries{
			{label: "KV-cache usage (%)", color: colorPurple, xs: t, ys: get(func(p *scrape.Point) *float64 { return p.KVUsage }, 100)},
			{label: "preemptions", color: colorRed, xs: t, ys: get(func(p *scrape.Point) *float64 { return p.Preemptions }, 1)},
		}})
	lineChart(bw, chartSpec{name: "server-ttft-series", title: "Server TTFT (mean per scrape interval) vs client TTFT (p50 per second)", xLabel: "time since start (s)", yLabel: "ms",
		series: []chartSeries{
			{label: "server TTFT mean", color: colorGreen, xs: t, ys: get(func(p *scrape.Point) *float64 { return p.TTFTMeanMS }, 1)},
			{label: "server queue mean", color: colorOrange, xs: t, ys: get(func(p *scrape.Point) *float64 { return p.QueueMeanMS }, 1)},
			{label: "client TTFT p50", color: colorBlue, xs: ct, ys: p50, skipZero: true},
		}})
	fmt.Fprintf(bw, "</div>\n")
}
