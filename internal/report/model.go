// Package report renders one run in several formats from one model.
//
// Reading order: Run (this file) is what every renderer reads; build (this
// file) turns it into titled sections, which text.go and markdown.go lay
// out, so both carry the same content; csv.go and json.go write the figures
// as data; definitions.go holds the metric definitions every report prints.
// (html.go and sweep_*.go belong to other renderers.)
package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// Run is one run as reports show it: who measured what, how, and the result.
type Run struct {
	ID      string // store id, empty when not stored
	Kind    string // bench, sim, lab, import, …
	Version string // knee's version
	Target  string // base URL (credentials removed), or what was simulated
	Model   string
	Load    string // the load model, e.g. "concurrency 32" or "rate 10 rps (poisson)"
	// Workload is the requested shape, e.g. "input 512, output 256 tokens";
	// the measured shape is in Summary.Shape.
	Workload string
	Label    string
	Status   string      // complete, interrupted, …; empty = complete
	Config   [][2]string // resolved configuration, in order
	Start    time.Time
	Summary  stats.Summary
	SLOs     []slo.Result
	Notes    []string // what the run itself wants said (embedded server, probes, warnings)
	// Server is what was scraped from the target's /metrics, joined with
	// the records (nil: not scraped).
	Server *scrape.View
	// Sweep, for a sweep run, is every step with the knee and the SLO-safe
	// point: reports open with it, and Summary is then the step Step names.
	Sweep *sweep.Result
	// Engine is what a simulated engine did (knee sim), the figures its
	// notes print, for machines (nil for measured runs).
	Engine *EngineFigures
	// Step says which part of the run Summary covers when it is not the
	// whole run, e.g. "concurrency 16 (the SLO-safe point)".
	Step string
	// ErrorMessages are the most common failure messages (CommonErrors).
	ErrorMessages []ErrorMessage
	// Predictions, for a simulated run, are its headline figures with
	// their held-out ranges (nil: none shown).
	Predictions *PredictionRanges
	// Classes are the run's traffic classes, each summarised on its own
	// (nil for a run of one class).
	Classes []Class
	// Energy is what the run's GPUs spent (nil: not known): the
	// simulator's power model, or the GPUs' telemetry (GPU).
	Energy *energy.Figures
	// GPU is what the GPUs' dcgm-exporters showed during the run (nil:
	// not scraped).
	GPU *scrape.GPUView
}

// section is one titled block of a report: key/value lines, a table, or
// bullets (any may be empty).
type section struct {
	title   string
	kv      [][2]string
	table   *table
	bullets []string
}

type table struct {
	header []string
	rows   [][]string
	left   int // leading columns aligned left (text); the rest are numbers, aligned right. 0 means 1
}

// none marks a statistic with no data.
const none = "–"

// fnum prints a number with d decimals; ∞ for infinity.
func fnum(v float64, d int) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsNaN(v):
		return none
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Trim(s, "-0.") == "" {
		return s[strings.IndexByte(s, '0'):] // -0.0: a value below zero by less than the last digit
	}
	return s
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return none // not given (an imported table without the column)
	}
	return fnum(100*v, 2) + "%"
}

func distRow(name string, d stats.Dist, decimals int) []string {
	return scaledRow(name, d, 1, decimals)
}

// scaledRow is distRow with every statistic divided by per first.
func scaledRow(name string, d stats.Dist, per float64, decimals int) []string {
	row := []string{name, strconv.Itoa(d.Count)}
	for _, s := range stats.StatNames {
		v, _ := d.Stat(s)
		if d.Count == 0 {
			row = append(row, none)
		} else {
			row = append(row, fnum(v/per, decimals))
		}
	}
	return row
}

// durationUnit is the one unit a table of durations prints in, chosen from
// its largest finite value so a column never mixes "42m04s" with ms.
type durationUnit struct {
	name     string  // shown in the table's title: "ms", "s", "min"
	perMs    float64 // milliseconds in one unit
	decimals int
}

// unitFor picks the unit of a table of distributions (unitForMs).
func unitFor(dists ...stats.Dist) durationUnit {
	var all []float64
	for _, d := range dists {
		if d.Count == 0 {
			continue
		}
		for _, s := range stats.StatNames {
			v, _ := d.Stat(s)
			all = append(all, v)
		}
	}
	return unitForMs(all...)
}

// unitForMs picks ms below 100 s, then seconds, minutes and hours, each
// while the largest finite figure stays under 1000 of it.
func unitForMs(ms ...float64) durationUnit {
	largest := 0.0
	for _, v := range ms {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			largest = max(largest, math.Abs(v))
		}
	}
	switch {
	case largest < 100_000:
		return durationUnit{"ms", 1, 2}
	case largest < 1_000_000:
		return durationUnit{"s", 1000, 2}
	case largest < 60_000_000:
		return durationUnit{"min", 60_000, 1}
	}
	return durationUnit{"h", 3_600_000, 1}
}

// DurationUnit picks one unit for a column or row of millisecond figures
// (ms below 100 s, then s, min, h) so a person never reads 4782446.1 ms:
// it returns the unit's name and the formatter that prints a figure in it,
// with msDecimals decimals in ms and the report's own in the larger units.
func DurationUnit(msDecimals int, ms ...float64) (unit string, format func(ms float64) string) {
	u := unitForMs(ms...)
	if u.name == "ms" {
		u.decimals = msDecimals
	}
	return u.name, func(v float64) string { return fnum(v/u.perMs, u.decimals) }
}

// latencyRow is distRow for a duration in milliseconds, printed in u.
func latencyRow(name string, d stats.Dist, u durationUnit) []string {
	return scaledRow(name, d, u.perMs, u.decimals)
}

var distHeader = []string{"", "count", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"}

// title is the report's first line.
func title(r *Run) string {
	kind := r.Kind
	if kind == "" {
		kind = "run"
	}
	t := "knee " + kind + " report"
	if r.ID != "" {
		t += " · run " + r.ID
	}
	return t
}

// build lays a run out as sections, in reading order.
func build(r *Run) []section {
	s := &r.Summary
	var out []section

	head := section{}
	add := head.adder()
	if r.Step != "" {
		add("summary of", "step "+r.Step+"; every step is in the table above")
	}
	addWhatRan(add, r)
	add("workload", r.Workload)
	add("label", r.Label)
	if !r.Start.IsZero() {
		add("started", r.Start.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	add("status", r.Status)
	add("knee", r.Version)
	add("window", fmt.Sprintf("%s s measured (%s → %s ms since start); excluded: %d warm-up, %d cool-down requests",
		fnum(s.DurationS, 2), fnum(s.Window.StartMS, 1), fnum(s.Window.EndMS, 1), s.Window.ExcludedWarmup, s.Window.ExcludedCooldown))
	out = append(out, head)
	if r.Predictions != nil && len(r.Predictions.Figures) > 0 {
		out = append(out, r.Predictions.section())
	}

	tp := section{title: "Throughput"}
	tadd := func(k, v string) { tp.kv = append(tp.kv, [2]string{k, v}) }
	tadd("requests", fmt.Sprintf("%d measured · %d completed · %d failed (%s) · %d rejected (%s)",
		s.Requests, s.Completed, s.Errors, pct(s.ErrorRate), s.Rejected, pct(s.RejectionRate)))
	tadd("request rate", fnum(s.RequestThroughputRPS, 2)+" req/s")
	if s.Items > 0 {
		tadd("items", fmt.Sprintf("%s items/s (%d items: embeddings or scored documents)", fnum(s.ItemThroughputPS, 1), s.Items))
	}
	tadd("output tokens", fmt.Sprintf("%s tok/s (%d tokens)", fnum(s.OutputTokenThroughputTPS, 1), s.OutputTokens))
	tadd("input tokens", fmt.Sprintf("%s tok/s (%d tokens)", fnum(s.InputTokenThroughputTPS, 1), s.InputTokens))
	tadd("total tokens", fnum(s.TotalTokenThroughputTPS, 1)+" tok/s")
	if s.GoodputRPS != nil {
		g := fnum(*s.GoodputRPS, 2) + " req/s"
		if s.GoodRequests != nil {
			g += fmt.Sprintf(" (%d of %d completed requests met every SLO)", *s.GoodRequests, s.Completed)
		}
		tadd("goodput", g)
	}
	if s.OfferedRateRPS > 0 {
		tadd("offered rate", fnum(s.OfferedRateRPS, 2)+" req/s")
	}
	if s.AchievedRateRPS > 0 {
		tadd("achieved rate", fnum(s.AchievedRateRPS, 2)+" req/s (send rate)")
	} else { // not measured (one request, or an import without send times)
		tadd("achieved rate", none)
	}
	tadd("peak in flight", strconv.Itoa(s.PeakInFlight))
	if s.ConnectionRetries > 0 {
		tadd("connection retries", fmt.Sprintf("%d (resent at once on a fresh connection, only where the transport proved the server had not read the request: the write failed, or the server had closed the reused connection before the write began; the delay is in lag)", s.ConnectionRetries))
	}
	out = append(out, tp)

	out = append(out, latencySection(r, false))
	if len(r.Classes) > 0 {
		out = append(out, classSection(r.Classes))
	}

	if s.ServerQueue != nil || s.ServerPrefill != nil {
		var phases []namedDist
		if s.ServerQueue != nil {
			phases = append(phases, namedDist{"queue", *s.ServerQueue})
		}
		if s.ServerPrefill != nil {
			phases = append(phases, namedDist{"prefill", *s.ServerPrefill})
		}
		if s.ServerDecode != nil {
			phases = append(phases, namedDist{"decode", *s.ServerDecode})
		}
		ph, u := durationTable(phases)
		out = append(out, section{title: "Server phases (" + u.name + ", as the server reported them)", table: ph})
	}

	out = append(out, serverSections(r.Server, s)...)
	out = append(out, gpuSections(r.GPU, r.Energy)...)

	shape := &table{header: distHeader}
	shape.rows = append(shape.rows, distRow("input", s.Shape.InputTokens, 1), distRow("output", s.Shape.OutputTokens, 1))
	out = append(out, section{title: "Token shapes (tokens per completed request)", table: shape})

	if len(s.ErrorKinds) > 0 {
		et := &table{header: []string{"error", "count", "share of measured"}}
		kinds := sortedKeys(s.ErrorKinds)
		sort.SliceStable(kinds, func(i, j int) bool {
			a, b := s.ErrorKinds[kinds[i]], s.ErrorKinds[kinds[j]]
			return a > b || a == b && kinds[i] < kinds[j]
		})
		for _, k := range kinds {
			n := s.ErrorKinds[k]
			share := 0.0
			if s.Requests > 0 {
				share = float64(n) / float64(s.Requests)
			}
			et.rows = append(et.rows, []string{k, strconv.Itoa(n), pct(share)})
		}
		out = append(out, section{title: "Errors", table: et})
	}
	if len(r.ErrorMessages) > 0 {
		mt := &table{header: []string{"count", "error", "message"}, left: 3}
		for _, m := range r.ErrorMessages {
			mt.rows = append(mt.rows, []string{strconv.Itoa(m.Count), m.Kind, m.Message})
		}
		title := "Most common error messages"
		if r.ID != "" {
			title += " (all of them: knee records " + r.ID + " --errors)"
		}
		out = append(out, section{title: title, table: mt})
	}

	if len(r.SLOs) > 0 {
		out = append(out, section{title: "SLOs", table: sloTable(r)})
	}

	notes := append(append([]string{}, r.Notes...), s.Warnings...)
	if len(notes) > 0 {
		out = append(out, section{title: "Notes", bullets: notes})
	}
	if len(r.Config) > 0 {
		out = append(out, section{title: "Configuration", kv: r.Config})
	}
	defs := section{title: "Definitions"}
	for _, d := range Definitions(s) {
		defs.kv = append(defs.kv, [2]string{d.Term, d.Text})
	}
	out = append(out, defs)
	return out
}

type namedDist struct {
	name string
	d    stats.Dist
}

// durationTable lays out distributions of milliseconds in one unit.
func durationTable(rows []namedDist) (*table, durationUnit) {
	ds := make([]stats.Dist, len(rows))
	for i, r := range rows {
		ds[i] = r.d
	}
	u := unitFor(ds...)
	t := &table{header: distHeader}
	for _, r := range rows {
		t.rows = append(t.rows, latencyRow(r.name, r.d, u))
	}
	return t, u
}

// latencySection is the client-side latency table: every statistic of every
// latency in the detail, or p50/p95/p99 of TTFT, TPOT, ITL and E2E at a glance.
func latencySection(r *Run, glance bool) section {
	s := &r.Summary
	var rows []namedDist
	switch {
	case s.Items > 0 && s.TTFT.Count == 0:
		// Embeddings or rerank: answered whole, E2E is the latency.
		rows = []namedDist{{"E2E", s.E2E}}
		if !glance {
			rows = append(rows, namedDist{"Lag", s.Lag})
		}
	case glance:
		rows = []namedDist{{"TTFT", s.TTFT}, {"TPOT", s.TPOT}, {"ITL", s.ITL}, {"E2E", s.E2E}}
	default:
		rows = []namedDist{{"TTFT", s.TTFT}, {"TTFT (sched)", s.TTFTSched}, {"ITL", s.ITL}, {"TPOT", s.TPOT}, {"E2E", s.E2E}, {"Lag", s.Lag}}
		if s.AdjustedTTFT.Count != s.TTFT.Count {
			rows = append(rows, namedDist{"TTFT adjusted", s.AdjustedTTFT}) // else nothing failed: identical to TTFT
		}
		if s.FailedE2E.Count > 0 {
			rows = append(rows, namedDist{"Failed (E2E)", s.FailedE2E})
		}
	}
	t, u := durationTable(rows)
	if glance {
		t = glanceColumns(t)
	}
	return section{title: "Latency (" + u.name + ")", table: t}
}

// glanceColumns keeps the name, p50, p95 and p99 columns of a distHeader table.
func glanceColumns(t *table) *table {
	keep := []int{0}
	for i, h := range t.header {
		if h == "p50" || h == "p95" || h == "p99" {
			keep = append(keep, i)
		}
	}
	pick := func(row []string) []string {
		out := make([]string, len(keep))
		for j, i := range keep {
			out[j] = row[i]
		}
		return out
	}
	g := &table{header: pick(t.header)}
	for _, row := range t.rows {
		g.rows = append(g.rows, pick(row))
	}
	return g
}

// sloTable is one row per objective: mark, objective, measured value, verdict.
func sloTable(r *Run) *table {
	st := &table{header: []string{"", "objective", "measured", "verdict"}, left: 4}
	st.rows = sloRows(r)
	return st
}

// sloRows are sloTable's rows.
func sloRows(r *Run) [][]string {
	var rows [][]string
	for _, res := range r.SLOs {
		mark, verdict, val := "✓", "met", res.Objective.Format(res.Value)
		if !res.Met {
			mark, verdict = "✗", "not met"
		}
		if res.NoData {
			val = "no data"
		}
		rows = append(rows, []string{mark, res.Objective.String(), val, verdict})
	}
	return rows
}

// adder returns a function that adds a key/value line, skipping empty values.
func (s *section) adder() func(k, v string) {
	return func(k, v string) {
		if v != "" {
			s.kv = append(s.kv, [2]string{k, v})
		}
	}
}

// addWhatRan adds the target, model and load lines both heads open with.
func addWhatRan(add func(k, v string), r *Run) {
	add("target", r.Target)
	add("model", r.Model)
	add("load", r.Load)
}

// cells pads each column to its widest cell, aligned as t.left says.
func (t *table) cells() [][]string {
	left := max(t.left, 1)
	all := append([][]string{t.header}, t.rows...)
	columns := len(t.header)
	if t.header == nil { // rows only
		all = all[1:]
		for _, row := range all {
			columns = max(columns, len(row))
		}
	}
	width := make([]int, columns)
	for _, row := range all {
		for i, c := range row {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	out := make([][]string, len(all))
	for r, row := range all {
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i < left {
				out[r] = append(out[r], c+pad)
			} else {
				out[r] = append(out[r], pad+c)
			}
		}
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// EngineFigures are a simulated run's engine counts (summary.json "engine").
type EngineFigures struct {
	Steps            int64   `json:"steps"`
	Preemptions      int64   `json:"preemptions"`
	Rejected         int64   `json:"rejected"`
	VirtualTimeS     float64 `json:"virtual_time_s"`
	KVCapacityTokens int     `json:"kv_capacity_tokens"`
	KVBlocks         int     `json:"kv_blocks"`
	PrefillTokens    int64   `json:"prefill_tokens"` // prompt and recomputed tokens processed
	// PrefixCache is nil when prefix caching is off or nothing was looked up.
	PrefixCache *PrefixCacheFigures `json:"prefix_cache,omitempty"`
}

// PrefixCacheFigures: "6638288 of 144793823 prompt tokens hit (4.6%)".
type PrefixCacheFigures struct {
	HitTokens   int64   `json:"hit_tokens"`
	QueryTokens int64   `json:"query_tokens"`
	HitRate     float64 `json:"hit_rate"` // hit_tokens / query_tokens, 0..1
}
