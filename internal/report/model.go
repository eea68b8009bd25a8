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
	// Classes are the run's traffic classes, each summarised on its own
	// (nil for a run of one class).
	Classes []Class
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
	row := []string{name, strconv.Itoa(d.Count)}
	for _, s := range stats.StatNames {
		v, _ := d.Stat(s)
		if d.Count == 0 {
			row = append(row, none)
		} else {
			row = append(row, fnum(v, decimals))
		}
	}
	return row
}

// latencyRow is distRow for milliseconds: values of 100 s or more print in
// human units (2h03m), which a column of 7410966.00 hides.
func latencyRow(name string, d stats.Dist) []string {
	row := distRow(name, d, 2)
	for i, s := range stats.StatNames {
		if v, _ := d.Stat(s); d.Count > 0 && v >= 100_000 && !math.IsInf(v, 1) {
			row[2+i] = stats.HumanMs(v)
		}
	}
	return row
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
	add := func(k, v string) {
		if v != "" {
			head.kv = append(head.kv, [2]string{k, v})
		}
	}
	if r.Step != "" {
		add("summary of", "step "+r.Step+"; every step is in the table above")
	}
	add("target", r.Target)
	add("model", r.Model)
	add("load", r.Load)
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

	tp := section{title: "Throughput"}
	tadd := func(k, v string) { tp.kv = append(tp.kv, [2]string{k, v}) }
	tadd("requests", fmt.Sprintf("%d measured · %d completed · %d failed (%s) · %d rejected (%s)",
		s.Requests, s.Completed, s.Errors, pct(s.ErrorRate), s.Rejected, pct(s.RejectionRate)))
	tadd("request rate", fnum(s.RequestThroughputRPS, 2)+" req/s")
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

	lat := &table{header: distHeader}
	for _, m := range []struct {
		name string
		d    stats.Dist
	}{{"TTFT", s.TTFT}, {"TTFT (sched)", s.TTFTSched}, {"ITL", s.ITL}, {"TPOT", s.TPOT}, {"E2E", s.E2E}, {"Lag", s.Lag},
		{"TTFT adjusted", s.AdjustedTTFT}, {"Failed (E2E)", s.FailedE2E}} {
		if m.name == "Failed (E2E)" && m.d.Count == 0 {
			continue
		}
		if m.name == "TTFT adjusted" && m.d.Count == s.TTFT.Count {
			continue // nothing failed: identical to TTFT
		}
		lat.rows = append(lat.rows, latencyRow(m.name, m.d))
	}
	out = append(out, section{title: "Latency (ms)", table: lat})
	if len(r.Classes) > 0 {
		out = append(out, classSection(r.Classes))
	}

	if s.ServerQueue != nil || s.ServerPrefill != nil {
		ph := &table{header: distHeader}
		if s.ServerQueue != nil {
			ph.rows = append(ph.rows, latencyRow("queue", *s.ServerQueue))
		}
		if s.ServerPrefill != nil {
			ph.rows = append(ph.rows, latencyRow("prefill", *s.ServerPrefill))
		}
		if s.ServerDecode != nil {
			ph.rows = append(ph.rows, latencyRow("decode", *s.ServerDecode))
		}
		out = append(out, section{title: "Server phases (ms, as the server reported them)", table: ph})
	}

	out = append(out, serverSections(r.Server, s)...)

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
		st := &table{header: []string{"", "objective", "measured", "verdict"}, left: 4}
		for _, res := range r.SLOs {
			mark, verdict, val := "✓", "met", res.Objective.Format(res.Value)
			if !res.Met {
				mark, verdict = "✗", "not met"
			}
			if res.NoData {
				val = "no data"
			}
			st.rows = append(st.rows, []string{mark, res.Objective.String(), val, verdict})
		}
		out = append(out, section{title: "SLOs", table: st})
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

// cells pads each column to its widest cell, aligned as t.left says.
func (t *table) cells() [][]string {
	left := max(t.left, 1)
	all := append([][]string{t.header}, t.rows...)
	width := make([]int, len(t.header))
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
