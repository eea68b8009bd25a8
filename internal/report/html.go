package report

// The HTML report: one self-contained file, charts drawn as inline SVG at
// generation time (no script, no CDN, nothing fetched). Every chart is a
// <figure class="chart" data-chart="NAME"> whose drawn data carry
// class="data", so a browser test can check each one rendered.

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// HTMLData is what the HTML report draws beyond the run's summary.
type HTMLData struct {
	// Records are the run's per-request records (distributions, waterfall,
	// and the time series when the summary has none); nil for a summary-only
	// run, whose distributions are then drawn from its percentiles.
	Records []record.Request
	// Sweep, when the run is a sweep, gives the throughput and p95 TTFT
	// curves with the knee and the SLO-safe point.
	Sweep *sweep.Result
}

// waterfallRows is how many sampled requests the waterfall shows.
const waterfallRows = 60

// HTML writes run as one self-contained HTML page. data (at most one) adds
// the records and the sweep; without it the distributions are drawn from the
// summary's percentiles and the waterfall is left out.
func HTML(w io.Writer, run *Run, extra ...HTMLData) error {
	var data HTMLData
	if len(extra) > 0 {
		data = extra[0]
	}
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	esc := html.EscapeString
	s := &run.Summary

	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	p("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	p("<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", esc(title(run)), htmlCSS)
	p("<h1>%s</h1>\n", esc(title(run)))
	sw := data.Sweep
	if sw == nil {
		sw = run.Sweep
	}
	if sw != nil && len(sw.Steps) > 0 {
		// A sweep opens with its steps, knee and SLO-safe point; the full
		// summary below is one step's, named.
		p("<h2>Sweep over %s</h2>\n", esc(sw.LoadKind))
		sweepPoints(bw, sw)
		header, rows := sweepTable(sw)
		htmlSection(bw, section{table: &table{header: header, rows: rows}})
		if t := sweepClassTable(sw); t != nil {
			p("<h3>Per class (latency in ms)</h3>\n")
			htmlSection(bw, section{table: t})
		}
		if h, rows := guidedTable(sw); h != nil {
			p("<h3>Guided steps, in the order measured</h3>\n<p class=\"note\">%s</p>\n", esc(guidedUsed(sw)))
			htmlSection(bw, section{table: &table{header: h, rows: rows}})
		}
		p("<div class=\"charts\">\n")
		sweepCharts(bw, sw)
		p("</div>\n")
		if run.Step != "" {
			p("<h2 class=\"step\">Step %s — its full summary</h2>\n", esc(run.Step))
		}
	}

	// The same sections as the text report: header, throughput, latency
	// tables, SLOs, notes, configuration, definitions.
	for _, sec := range build(run) {
		if sec.title == "Definitions" {
			continue // printed last, after the charts
		}
		if sec.title != "" {
			p("<h2>%s</h2>\n", esc(sec.title))
		}
		htmlSection(bw, sec)
	}

	series := s.TimeSeries
	if len(series) == 0 && len(data.Records) > 0 {
		series = stats.Summarize(data.Records, stats.Options{Series: true}).TimeSeries
	}

	p("<h2>Distributions</h2>\n")
	if data.Records == nil {
		p("<p class=\"note\">No per-request records here (none were kept, or more than a report draws): the curves join the percentiles (p50 … max).</p>\n")
	}
	p("<div class=\"charts\">\n")
	for _, m := range []struct {
		name, label string
		values      func(*record.Request) []float64
		dist        stats.Dist
	}{
		{"ttft-cdf", "TTFT", func(r *record.Request) []float64 { return durMS(r.TTFT()) }, s.TTFT},
		{"itl-cdf", "ITL", func(r *record.Request) []float64 { return itlMS(r) }, s.ITL},
		{"e2e-cdf", "E2E", func(r *record.Request) []float64 { return durMS(r.E2E()) }, s.E2E},
	} {
		var xs, ps []float64
		if data.Records != nil {
			xs, ps = cdfPoints(collect(data.Records, m.values))
		} else {
			xs, ps = cdfFromDist(m.dist)
		}
		lineChart(bw, chartSpec{name: m.name, title: m.label + " — cumulative distribution", xLabel: m.label + " (ms)", yLabel: "share of requests",
			series: []chartSeries{{label: m.label, color: colorBlue, xs: xs, ys: ps}}, yMax: 1})
	}
	p("</div>\n")

	if len(series) > 0 {
		p("<h2>Over time (per second)</h2>\n<div class=\"charts\">\n")
		t := make([]float64, len(series))
		inflight, tps, p50, p95 := make([]float64, len(series)), make([]float64, len(series)), make([]float64, len(series)), make([]float64, len(series))
		for i, sec := range series {
			t[i] = float64(sec.T)
			inflight[i], tps[i], p50[i], p95[i] = float64(sec.InFlight), sec.OutputTPS, sec.TTFTP50MS, sec.TTFTP95MS
		}
		// The seconds cover the whole run, warm-up and cool-down included:
		// the measured window is marked so the two are not confused.
		marks := windowMarks(s.Window)
		if len(marks) > 0 {
			p("<p class=\"note\">Each second of the run is drawn, warm-up and cool-down included; the dashed lines mark the measured window (%.1f s to %.1f s) that the statistics above cover.</p>\n",
				s.Window.StartMS/1000, s.Window.EndMS/1000)
		}
		lineChart(bw, chartSpec{name: "inflight-series", title: "Requests in flight (peak in each second)", xLabel: "time since start (s)", yLabel: "in flight",
			series: []chartSeries{{label: "in flight", color: colorBlue, xs: t, ys: inflight}}, marks: marks})
		lineChart(bw, chartSpec{name: "tps-series", title: "Output tokens per second", xLabel: "time since start (s)", yLabel: "tok/s",
			series: []chartSeries{{label: "output tok/s", color: colorGreen, xs: t, ys: tps}}, marks: marks})
		lineChart(bw, chartSpec{name: "ttft-series", title: "TTFT p50 / p95 of first tokens in each second", xLabel: "time since start (s)", yLabel: "ms",
			series: []chartSeries{{label: "p50", color: colorBlue, xs: t, ys: p50, skipZero: true}, {label: "p95", color: colorOrange, xs: t, ys: p95, skipZero: true}}, marks: marks})
		p("</div>\n")
	}

	serverCharts(bw, run.Server, series)

	if len(data.Records) > 0 {
		p("<h2>Waterfall of sampled requests</h2>\n")
		waterfall(bw, data.Records)
	}

	p("<h2>Definitions</h2>\n<dl>\n")
	for _, d := range Definitions(s) {
		p("<dt>%s</dt><dd>%s</dd>\n", esc(d.Term), esc(d.Text))
	}
	p("</dl>\n<footer>knee %s · generated %s · self-contained: no scripts, nothing loaded from the network</footer>\n</body>\n</html>\n",
		esc(run.Version), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	return bw.Flush()
}

const htmlCSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;padding:0 16px;color:#1d2430;background:#fff}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 10px;border-bottom:1px solid #eef1f5;text-align:right;font-variant-numeric:tabular-nums}
td:first-child,th:first-child{text-align:left}table.kv td{text-align:left}table.kv td:first-child{color:#5b6576;white-space:nowrap}
.charts{display:flex;flex-wrap:wrap;gap:16px}figure.chart{margin:0;border:1px solid #e3e7ee;border-radius:6px;padding:8px;background:#fcfdfe;max-width:100%;overflow-x:auto}
.charts figure.chart{width:540px}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px}svg text{font:11px system-ui,sans-serif;fill:#4a5260}
.grid{stroke:#e8ecf2}.axis{stroke:#8a93a3}.note{color:#5b6576}dt{font-weight:600;margin-top:6px}dd{margin-left:16px;color:#333b48}
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px;border-radius:2px}
footer{margin-top:32px;color:#8a93a3;font-size:12px}`

const (
	colorBlue   = "#2f6fdf"
	colorGreen  = "#2e9e5b"
	colorOrange = "#e8871e"
	colorGrey   = "#a7afbd"
	colorRed    = "#d64545"
	colorPurple = "#8a4fd1"
	colorTeal   = "#1b9aaa" // a guided sweep's predictions
)

func htmlSection(bw *bufio.Writer, sec section) {
	esc := html.EscapeString
	if len(sec.kv) > 0 {
		bw.WriteString("<table class=\"kv\">\n")
		for _, kv := range sec.kv {
			fmt.Fprintf(bw, "<tr><td>%s</td><td>%s</td></tr>\n", esc(kv[0]), esc(kv[1]))
		}
		bw.WriteString("</table>\n")
	}
	if sec.table != nil {
		bw.WriteString("<table>\n<tr>")
		for _, h := range sec.table.header {
			fmt.Fprintf(bw, "<th>%s</th>", esc(h))
		}
		bw.WriteString("</tr>\n")
		for _, row := range sec.table.rows {
			bw.WriteString("<tr>")
			for _, c := range row {
				fmt.Fprintf(bw, "<td>%s</td>", esc(c))
			}
			bw.WriteString("</tr>\n")
		}
		bw.WriteString("</table>\n")
	}
	if len(sec.bullets) > 0 {
		bw.WriteString("<ul>\n")
		for _, b := range sec.bullets {
			fmt.Fprintf(bw, "<li>%s</li>\n", esc(b))
		}
		bw.WriteString("</ul>\n")
	}
}

func durMS(d time.Duration, ok bool) []float64 {
	if !ok {
		return nil
	}
	return []float64{float64(d) / 1e6}
}

func itlMS(r *record.Request) []float64 {
	var out []float64
	for i := 1; i < len(r.TokenTimes); i++ {
		out = append(out, float64(r.TokenTimes[i]-r.TokenTimes[i-1])/1e6)
	}
	return out
}

// collect gathers values over measured, completed requests, sorted.
func collect(recs []record.Request, f func(*record.Request) []float64) []float64 {
	var out []float64
	for i := range recs {
		if recs[i].Warmup || !recs[i].OK() {
			continue
		}
		out = append(out, f(&recs[i])...)
	}
	sort.Float64s(out)
	return out
}

// cdfPoints turns sorted values into at most ~400 (value, share) points.
func cdfPoints(sorted []float64) (xs, ps []float64) {
	n := len(sorted)
	if n == 0 {
		return nil, nil
	}
	step := max(1, n/400)
	for i := 0; i < n; i += step {
		xs = append(xs, sorted[i])
		ps = append(ps, float64(i+1)/float64(n))
	}
	if xs[len(xs)-1] != sorted[n-1] || ps[len(ps)-1] != 1 {
		xs = append(xs, sorted[n-1])
		ps = append(ps, 1)
	}
	return xs, ps
}

// cdfFromDist joins a distribution's stored percentiles.
func cdfFromDist(d stats.Dist) (xs, ps []float64) {
	if d.Count == 0 {
		return nil, nil
	}
	for _, q := range []struct{ v, p float64 }{{d.P50, .5}, {d.P90, .9}, {d.P95, .95}, {d.P99, .99}, {d.P999, .999}, {d.Max, 1}} {
		if q.v > 0 && !math.IsInf(q.v, 0) && !math.IsNaN(q.v) && (len(xs) == 0 || q.v >= xs[len(xs)-1]) {
			xs, ps = append(xs, q.v), append(ps, q.p)
		}
	}
	return xs, ps
}

// chart geometry (SVG user units).
const (
	chartW, chartH            = 540, 260
	padL, padR, padT, padB    = 58, 14, 12, 40
	plotW, plotH              = chartW - padL - padR, chartH - padT - padB
	waterW, waterRowH, waterL = 1120, 9, 64
)

type chartSeries struct {
	label    string
	color    string
	xs, ys   []float64
	skipZero bool // a zero y means "no data" (gaps, not drops to zero)
	dots     bool
	// lo and hi, when set, are a range at each x: drawn as a shaded band
	// under the line, or with bars as a vertical bar at each point (and
	// no line: the points are separate predictions).
	lo, hi []float64
	bars   bool
	dashed bool
}

type chartMark struct {
	x     float64
	label string
	color string
}

// windowMarks marks the measured window on a per-second chart when
// requests were excluded from it (warm-up, cool-down); none otherwise.
func windowMarks(w stats.Window) []chartMark {
	if w.ExcludedWarmup == 0 && w.ExcludedCooldown == 0 {
		return nil
	}
	return []chartMark{
		{x: w.StartMS / 1000, label: "measured window starts", color: colorGrey},
		{x: w.EndMS / 1000, label: "measured window ends", color: colorGrey},
	}
}

type chartSpec struct {
	name, title    string
	xLabel, yLabel string
	series         []chartSeries
	marks          []chartMark
	yMax           float64 // 0: from the data
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// Ticks cover [lo, hi]: the axis grows to the outer ticks.
	first, last := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	var out []float64
	for k := first; k <= last; k++ {
		out = append(out, k*step+0) // +0: no "-0"
	}
	return out
}

func tickLabel(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case a >= 1e4:
		return fmt.Sprintf("%gk", math.Round(v/100)/10)
	case a >= 10:
		return fmt.Sprintf("%g", math.Round(v*10)/10)
	}
	return fmt.Sprintf("%.3g", v)
}

// lineChart draws one chart as a <figure> with an inline SVG.
func lineChart(bw *bufio.Writer, c chartSpec) {
	esc := html.EscapeString
	fmt.Fprintf(bw, "<figure class=\"chart\" data-chart=\"%s\"><figcaption>%s</figcaption>\n", esc(c.name), esc(c.title))
	if len(c.series) > 1 || len(c.marks) > 0 {
		bw.WriteString("<div class=\"legend\">")
		for _, s := range c.series {
			fmt.Fprintf(bw, "<span><i style=\"background:%s\"></i>%s</span>", s.color, esc(s.label))
		}
		for _, m := range c.marks {
			fmt.Fprintf(bw, "<span><i style=\"background:%s\"></i>%s</span>", m.color, esc(m.label))
		}
		bw.WriteString("</div>\n")
	}
	fmt.Fprintf(bw, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n",
		chartW, chartH, chartW, chartH, esc(c.title))

	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	points := 0
	for _, s := range c.series {
		for i, x := range s.xs {
			if s.skipZero && s.ys[i] == 0 || math.IsNaN(s.ys[i]) || math.IsInf(s.ys[i], 0) {
				continue
			}
			xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, s.ys[i])
			if s.hi != nil && !math.IsInf(s.hi[i], 0) && !math.IsNaN(s.hi[i]) {
				ymax = math.Max(ymax, s.hi[i])
			}
			points++
		}
	}
	for _, m := range c.marks {
		xmin, xmax = math.Min(xmin, m.x), math.Max(xmax, m.x)
	}
	if points == 0 {
		fmt.Fprintf(bw, "<text x=\"%d\" y=\"%d\">no data</text></svg></figure>\n", chartW/2-30, chartH/2)
		return
	}
	if xmin > 0 && xmin < (xmax-xmin)*0.3 {
		xmin = 0 // start at 0 when the data nearly does: honest scales
	}
	if c.yMax > 0 {
		ymax = c.yMax
	}
	xt := niceTicks(xmin, xmax, 6)
	yt := niceTicks(0, ymax, 5)
	xmin, xmax = math.Min(xmin, xt[0]), math.Max(xmax, xt[len(xt)-1])
	ymax = math.Max(ymax, yt[len(yt)-1])
	if xmax == xmin {
		xmax = xmin + 1
	}
	X := func(x float64) float64 { return padL + (x-xmin)/(xmax-xmin)*plotW }
	Y := func(y float64) float64 { return padT + plotH - y/ymax*plotH }

	for _, v := range yt {
		fmt.Fprintf(bw, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			padL, padL+plotW, Y(v), Y(v), padL-6, Y(v)+4, tickLabel(v))
	}
	for _, v := range xt {
		fmt.Fprintf(bw, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			X(v), X(v), padT, padT+plotH, X(v), padT+plotH+15, tickLabel(v))
	}
	fmt.Fprintf(bw, "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>\n", padL, padL+plotW, padT+plotH, padT+plotH)
	fmt.Fprintf(bw, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", padL+plotW/2, chartH-6, esc(c.xLabel))
	fmt.Fprintf(bw, "<text transform=\"translate(13 %d) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", padT+plotH/2, esc(c.yLabel))

	for _, s := range c.series {
		if s.lo != nil {
			rangeMarks(bw, s, X, Y)
			if s.bars {
				continue
			}
		}
		var d strings.Builder
		pen := false
		for i, x := range s.xs {
			y := s.ys[i]
			if s.skipZero && y == 0 || math.IsNaN(y) || math.IsInf(y, 0) {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f", cmd, X(x), Y(y))
			pen = true
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="5 4"`
		}
		fmt.Fprintf(bw, "<path class=\"data\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s d=\"%s\"><title>%s</title></path>\n", s.color, dash, d.String(), esc(s.label))
		if s.dots {
			for i, x := range s.xs {
				if y := s.ys[i]; !(s.skipZero && y == 0) && !math.IsNaN(y) && !math.IsInf(y, 0) {
					fmt.Fprintf(bw, "<circle class=\"data\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s: %s at %s</title></circle>\n",
						X(x), Y(y), s.color, esc(s.label), tickLabel(y), tickLabel(x))
				}
			}
		}
	}
	for i, m := range c.marks {
		// Marks at the same load must both show: different dashes, labels
		// stacked at the top.
		dash := []string{"6 4", "2 3"}[i%2]
		fmt.Fprintf(bw, "<line class=\"data mark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\"><title>%s</title></line>\n",
			X(m.x), X(m.x), padT, padT+plotH, m.color, dash, esc(m.label))
		anchor, dx := "start", 4.0
		if X(m.x) > padL+plotW*0.7 {
			anchor, dx = "end", -4
		}
		fmt.Fprintf(bw, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" style=\"fill:%s;font-weight:600\">%s</text>\n",
			X(m.x)+dx, padT+12+14*i, anchor, m.color, esc(m.label))
	}
	bw.WriteString("</svg></figure>\n")
}

func sweepCharts(bw *bufio.Writer, r *sweep.Result) {
	n := len(r.Steps)
	load, tput, p95 := make([]float64, n), make([]float64, n), make([]float64, n)
	tputLabel, tputUnit := "requests/s", "req/s"
	if r.KneeMetric == sweep.MetricOutputTPS {
		tputLabel, tputUnit = "output tokens/s", "tok/s"
	}
	for i := range r.Steps {
		load[i] = r.Steps[i].Load.Value
		tput[i] = r.Steps[i].Throughput(r.KneeMetric)
		p95[i] = r.Steps[i].Summary.TTFT.P95
	}
	var marks []chartMark
	if r.Knee.Found() {
		marks = append(marks, chartMark{x: r.Knee.Load, label: "knee " + tickLabel(r.Knee.Load), color: colorPurple})
	}
	if r.SLOSafe.Found() {
		marks = append(marks, chartMark{x: r.SLOSafe.Load, label: "SLO-safe " + tickLabel(r.SLOSafe.Load), color: colorGreen})
	}
	xl := sweep.LoadColumn(r.LoadKind)
	if r.LoadKind == sweep.Rate {
		xl = "offered rate (req/s)"
	}
	tputModel, ttftModel := guidedSeries(r)
	lineChart(bw, chartSpec{name: "sweep-throughput", title: "Throughput (" + tputLabel + ") by load", xLabel: xl, yLabel: tputUnit,
		series: append(tputModel, chartSeries{label: "measured " + tputLabel, color: colorBlue, xs: load, ys: tput, dots: true}), marks: marks})
	lineChart(bw, chartSpec{name: "sweep-ttft", title: "TTFT p95 by load", xLabel: xl, yLabel: "ms",
		series: append(ttftModel, chartSeries{label: "measured TTFT p95", color: colorOrange, xs: load, ys: p95, dots: true, skipZero: true}), marks: marks})
}

// sweepPoints says where the knee and the SLO-safe point are, and why.
func sweepPoints(bw *bufio.Writer, r *sweep.Result) {
	esc := html.EscapeString
	bw.WriteString("<ul>\n")
	for _, p := range []struct {
		name string
		pt   sweep.Point
	}{{"Knee", r.Knee}, {"SLO-safe point", r.SLOSafe}} {
		at := "none"
		if p.pt.Found() {
			at = sweep.Load{Kind: r.LoadKind, Value: p.pt.Load}.String()
		}
		fmt.Fprintf(bw, "<li><b>%s:</b> %s — %s</li>\n", p.name, esc(at), esc(p.pt.Reason))
	}
	if b := breaksFirstLine(r); b != "" {
		fmt.Fprintf(bw, "<li class=\"breaks-first\"><b>Breaks first:</b> %s</li>\n", esc(b))
	}
	for _, w := range sweepWarnings(r) {
		fmt.Fprintf(bw, "<li class=\"note\">%s</li>\n", esc(w))
	}
	bw.WriteString("</ul>\n")
}

// waterfall draws sampled requests as rows of coloured segments: client
// queue / lag (scheduled → sent), then the server's queue, prefill and
// decode when it reported them, else waiting for the first token and
// decode as the client saw them. Failed requests are red.
func waterfall(bw *bufio.Writer, recs []record.Request) {
	var idx []int
	for i := range recs {
		if !recs[i].Warmup {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	// Ties broken by ID: the records' order differs between the live run
	// (as they ended) and the database, and both must draw the same rows.
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := &recs[idx[a]], &recs[idx[b]]
		return x.Scheduled < y.Scheduled || x.Scheduled == y.Scheduled && x.ID < y.ID
	})
	if len(idx) > waterfallRows {
		sampled := make([]int, 0, waterfallRows)
		for k := range waterfallRows {
			sampled = append(sampled, idx[k*len(idx)/waterfallRows])
		}
		idx = sampled
	}
	t0, t1 := recs[idx[0]].Scheduled, time.Duration(0)
	server := false
	for _, i := range idx {
		r := &recs[i]
		t1 = max(t1, r.StreamEnd, r.Done, r.Sent)
		if r.ServerPhases != nil {
			server = true
		}
	}
	span := float64(t1 - t0)
	if span <= 0 {
		span = 1
	}
	h := len(idx)*(waterRowH+3) + 40
	plot := float64(waterW - waterL - 16)
	X := func(t time.Duration) float64 { return float64(waterL) + float64(t-t0)/span*plot }

	bw.WriteString("<figure class=\"chart\" data-chart=\"waterfall\"><figcaption>")
	if server {
		bw.WriteString("Sampled requests: client lag, server queue, prefill, decode (as the server reported them)")
	} else {
		bw.WriteString("Sampled requests: client lag, waiting for the first token (queue + prefill as the client sees them), decode")
	}
	fmt.Fprintf(bw, " — %d of %d measured requests</figcaption>\n<div class=\"legend\">", len(idx), countMeasured(recs))
	legend := [][2]string{{colorGrey, "client lag (scheduled → sent)"}}
	if server {
		legend = append(legend, [2]string{colorOrange, "server queue"}, [2]string{colorBlue, "prefill"}, [2]string{colorGreen, "decode"})
	} else {
		legend = append(legend, [2]string{colorBlue, "sent → first token (TTFT)"}, [2]string{colorGreen, "decode (first → last token)"})
	}
	legend = append(legend, [2]string{colorRed, "failed"})
	for _, l := range legend {
		fmt.Fprintf(bw, "<span><i style=\"background:%s\"></i>%s</span>", l[0], l[1])
	}
	fmt.Fprintf(bw, "</div>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"waterfall\">\n", waterW, h, waterW, h)
	unit, scale := "ms", 1e6
	if span > 10e9 {
		unit, scale = "s", 1e9
	}
	for _, v := range niceTicks(0, span/scale, 8) {
		x := X(t0 + time.Duration(v*scale))
		if x > float64(waterW) {
			continue
		}
		fmt.Fprintf(bw, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%d\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s %s</text>\n",
			x, x, h-26, x, h-12, tickLabel(v), unit)
	}
	seg := func(y int, from, to time.Duration, color, what string, r *record.Request) {
		if to < from {
			return
		}
		w := math.Max(X(to)-X(from), 1)
		fmt.Fprintf(bw, "<rect class=\"data\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>request %d %s: %.1f ms</title></rect>\n",
			X(from), y, w, waterRowH, color, r.ID, what, float64(to-from)/1e6)
	}
	for row, i := range idx {
		r := &recs[i]
		y := 4 + row*(waterRowH+3)
		fmt.Fprintf(bw, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">#%d</text>\n", waterL-6, y+waterRowH-1, r.ID)
		seg(y, r.Scheduled, r.Sent, colorGrey, "client lag", r)
		switch {
		case !r.OK():
			seg(y, r.Sent, max(r.StreamEnd, r.Sent), colorRed, "failed ("+string(r.Error)+")", r)
		case r.ServerPhases != nil && r.HasFirstToken():
			q, pf := r.ServerPhases.Queue, r.ServerPhases.Prefill
			seg(y, r.Sent, r.Sent+q, colorOrange, "server queue", r)
			// Prefill ends at the first token as the client saw it, so the
			// bar includes the network: the segments stay contiguous.
			seg(y, min(r.Sent+q, r.FirstToken), r.FirstToken, colorBlue, fmt.Sprintf("prefill (server: %.1f ms)", float64(pf)/1e6), r)
			seg(y, r.FirstToken, r.Done, colorGreen, "decode", r)
		case r.HasFirstToken():
			seg(y, r.Sent, r.FirstToken, colorBlue, "TTFT", r)
			seg(y, r.FirstToken, r.Done, colorGreen, "decode", r)
		default:
			seg(y, r.Sent, max(r.StreamEnd, r.Sent), colorGrey, "no content", r)
		}
	}
	bw.WriteString("</svg></figure>\n")
}

func countMeasured(recs []record.Request) int {
	n := 0
	for i := range recs {
		if !recs[i].Warmup {
			n++
		}
	}
	return n
}

// rangeMarks draws a series' ranges: a shaded band from lo to hi along
// the series (an outline of the highs, then the lows back), or with bars
// a vertical bar and a hollow dot at each point. Non-finite ranges are
// left out.
func rangeMarks(bw *bufio.Writer, s chartSeries, X, Y func(float64) float64) {
	esc := html.EscapeString
	ok := func(i int) bool {
		for _, v := range []float64{s.lo[i], s.hi[i], s.ys[i]} {
			if math.IsNaN(v) || math.IsInf(v, 0) || (s.skipZero && v == 0) {
				return false
			}
		}
		return true
	}
	if s.bars {
		for i, x := range s.xs {
			if !ok(i) {
				continue
			}
			fmt.Fprintf(bw, "<g class=\"data range\"><title>%s: %s (%s–%s) at %s</title><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#fff\" stroke=\"%s\" stroke-width=\"1.5\"/></g>\n",
				esc(s.label), tickLabel(s.ys[i]), tickLabel(s.lo[i]), tickLabel(s.hi[i]), tickLabel(x),
				X(x), X(x), Y(s.lo[i]), Y(s.hi[i]), s.color, X(x), Y(s.ys[i]), s.color)
		}
		return
	}
	var up, down []string
	for i, x := range s.xs {
		if !ok(i) {
			continue
		}
		up = append(up, fmt.Sprintf("%.1f %.1f", X(x), Y(s.hi[i])))
		down = append(down, fmt.Sprintf("%.1f %.1f", X(x), Y(s.lo[i])))
	}
	if len(up) < 2 {
		return
	}
	slices.Reverse(down)
	fmt.Fprintf(bw, "<path class=\"data band\" fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\" d=\"M%sZ\"><title>%s: range</title></path>\n",
		s.color, strings.Join(append(up, down...), " L"), esc(s.label))
}
