package report

import (
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// Class is one traffic class of a run (a --mix class, or the probes of
// --probe-rate) with its own figures and objectives.
type Class struct {
	Name    string
	Summary stats.Summary
	SLOs    []slo.Result
	// Probe: the class is --probe-rate's probes, which the run's overall
	// figures leave out (they measure the load, they are not part of it).
	Probe bool
}

// Failed lists the objectives the class did not meet.
func (c *Class) Failed() []string {
	var out []string
	for _, r := range c.SLOs {
		if !r.Met {
			out = append(out, r.Objective.String())
		}
	}
	return out
}

// MainClass names the requests of a run that carry no class beside probes.
const MainClass = "main"

// SplitClasses groups recs by record.Class in order of first appearance
// (probes last). It returns nil when every record is of one unnamed class.
func SplitClasses(recs []record.Request) (names []string, byClass map[string][]record.Request) {
	byClass = map[string][]record.Request{}
	probe := false
	for i := range recs {
		name := recs[i].Class
		if name == "" {
			name = MainClass
		}
		if name == record.ProbeClass {
			probe = true
		} else if _, ok := byClass[name]; !ok {
			names = append(names, name)
		}
		byClass[name] = append(byClass[name], recs[i])
	}
	if probe {
		names = append(names, record.ProbeClass)
	}
	if len(names) == 1 && names[0] == MainClass {
		return nil, nil
	}
	return names, byClass
}

// classSection is the per-class table: every class's volume, throughput,
// goodput and latency side by side, and the objectives it failed.
func classSection(classes []Class) section {
	t := &table{header: []string{"class", "requests", "completed", "errors", "req/s", "out tok/s", "goodput req/s",
		"TTFT p50", "TTFT p95", "TTFT p99", "ITL p50", "E2E p50", "E2E p95", "SLOs"}, left: 1}
	var bullets []string
	for _, c := range classes {
		s := &c.Summary
		good := none
		if s.GoodputRPS != nil {
			good = fnum(*s.GoodputRPS, 2)
		}
		stat := func(d stats.Dist, name string) string {
			if d.Count == 0 {
				return none
			}
			v, _ := d.Stat(name)
			return fnum(v, 1)
		}
		verdict := none
		if len(c.SLOs) > 0 {
			verdict = "met"
			if f := c.Failed(); len(f) > 0 {
				verdict = "FAILED"
				bullets = append(bullets, "class "+c.Name+" fails "+strings.Join(f, ", "))
			}
		}
		name := c.Name
		if c.Probe {
			name += "*" // the bullet below says what it marks: a long name widened every row
			bullets = append(bullets, "* "+c.Name+": probes beside the load, left out of the overall figures")
		}
		t.rows = append(t.rows, []string{name, strconv.Itoa(s.Requests), strconv.Itoa(s.Completed), strconv.Itoa(s.Errors),
			fnum(s.RequestThroughputRPS, 2), fnum(s.OutputTokenThroughputTPS, 1), good,
			stat(s.TTFT, "p50"), stat(s.TTFT, "p95"), stat(s.TTFT, "p99"), stat(s.ITL, "p50"),
			stat(s.E2E, "p50"), stat(s.E2E, "p95"), verdict})
	}
	// OverRun's window: said, since each class's own would not add up.
	bullets = append(bullets, "req/s, out tok/s and goodput are over the run's measured window, so the classes' add up to the run's")
	return section{title: "Per class (latency in ms)", table: t, bullets: bullets}
}

// ClassRow is one class's headline figures for knee ui (latency in ms;
// nil where nothing was measured).
type ClassRow struct {
	Name          string   `json:"name"`
	Probe         bool     `json:"probe,omitempty"`
	Requests      int      `json:"requests"`
	Completed     int      `json:"completed"`
	Errors        int      `json:"errors"`
	ThroughputRPS float64  `json:"throughput_rps"`
	OutputTPS     float64  `json:"output_tps"`
	GoodputRPS    *float64 `json:"goodput_rps,omitempty"`
	TTFTP95MS     *float64 `json:"ttft_p95_ms,omitempty"`
	ITLP95MS      *float64 `json:"itl_p95_ms,omitempty"`
	E2EP95MS      *float64 `json:"e2e_p95_ms,omitempty"`
	// SLOMet: every objective held (nil: none to judge); Failed lists
	// those that did not.
	SLOMet *bool    `json:"slo_met,omitempty"`
	Failed []string `json:"failed,omitempty"`
}

// ClassRows are the classes' rows, in the classes' order.
func ClassRows(classes []Class) []ClassRow {
	out := []ClassRow{}
	p95 := func(d stats.Dist) *float64 {
		if d.Count == 0 {
			return nil
		}
		v := d.P95
		return &v
	}
	for _, c := range classes {
		s := &c.Summary
		row := ClassRow{Name: c.Name, Probe: c.Probe, Requests: s.Requests, Completed: s.Completed, Errors: s.Errors,
			ThroughputRPS: s.RequestThroughputRPS, OutputTPS: s.OutputTokenThroughputTPS, GoodputRPS: s.GoodputRPS,
			TTFTP95MS: p95(s.TTFT), ITLP95MS: p95(s.ITL), E2EP95MS: p95(s.E2E), Failed: c.Failed()}
		if len(c.SLOs) > 0 {
			met := len(row.Failed) == 0
			row.SLOMet = &met
		}
		out = append(out, row)
	}
	return out
}
