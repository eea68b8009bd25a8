package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/stats"
)

// Load kinds.
const (
	Concurrency = "concurrency" // closed loop: requests kept in flight
	Rate        = "rate"        // open loop: arrivals per second
)

// Load is one offered load level.
type Load struct {
	Kind  string  `json:"kind"` // Concurrency or Rate
	Value float64 `json:"value"`
}

// String prints the load with its unit ("16 in flight", "2.5 req/s").
func (l Load) String() string {
	v := strconv.FormatFloat(l.Value, 'g', 6, 64)
	if l.Kind == Rate {
		return v + " req/s"
	}
	return v + " in flight"
}

// Column is the header name of the load column in CSV for a kind.
func LoadColumn(kind string) string {
	if kind == Rate {
		return "rate_rps"
	}
	return "concurrency"
}

// Check is one SLO evaluated at one step.
type Check struct {
	Objective string  `json:"objective"` // as the user wrote it, e.g. p95(ttft)<2s
	Value     float64 `json:"value"`     // the measured value in the objective's unit (ms, or a 0..1 rate)
	Met       bool    `json:"met"`
	// NoData: nothing to judge (no completed requests); Value is then 0
	// and means nothing.
	NoData bool `json:"no_data,omitempty"`
}

// Step is one measured load level: the offered load, the summary of what was
// measured there, and the SLO verdicts.
type Step struct {
	Load    Load
	Summary stats.Summary
	// Full is true when Summary came from a measurement (a run or the
	// simulator); false when only some columns were given (CSV), in which
	// case zero values mean "not given".
	Full    bool
	SLOMet  bool    // every SLO holds (true when there are no SLOs)
	SLOs    []Check // one per objective, in the order given
	Refined bool    // added by bisection in an automatic sweep
	Line    int     // CSV line the step came from (0 otherwise)
	Source  string  // where the step was read from when not a CSV line (file, benchmark), for errors
	// Warnings the runner raised about this step (the client fell behind,
	// requests were dropped, ...).
	Warnings []string
	// Server is what the server's /metrics showed during the step (nil:
	// not scraped).
	Server *ServerStep
	// ProbeTTFTP95 is the p95 TTFT (ms) of the probes sent beside the step
	// (knee sweep --probe-rate; nil: none). Probes stay out of Summary.
	ProbeTTFTP95 *float64
	// Oversaturated says why the step stopped early, its queue growing
	// without bound (knee sweep --stop-oversaturated; "" otherwise).
	Oversaturated string
	// Unreachable says why the target was gone in this step (every request
	// of its first seconds failed to connect, as knee bench stops on; ""
	// otherwise): the sweep measures no further step.
	Unreachable string
	// Classes are a traffic mix's classes at this step, in the mix's
	// order, each judged on its own (nil: no mix).
	Classes []ClassStep
	// Guided is, in a guided sweep, what the model predicted before the
	// step and why the step was measured (nil: not guided).
	Guided *GuidedStep
	// Energy is what the GPUs spent in the step (nil: not known): the
	// simulator's power model, or the GPUs' telemetry.
	Energy *energy.Figures
}

// Throughput returns the step's throughput by metric name: "output_tps" or
// "throughput_rps".
func (s *Step) Throughput(metric string) float64 {
	if metric == MetricOutputTPS {
		return s.Summary.OutputTokenThroughputTPS
	}
	return s.Summary.RequestThroughputRPS
}

// Throughput metrics a knee can be found on.
const (
	MetricOutputTPS     = "output_tps"
	MetricThroughputRPS = "throughput_rps"
)

// column names one flat field of a step (JSON) and of a CSV row, with the
// summary field it reads and writes. Latency columns are in milliseconds.
type column struct {
	name    string
	latency bool // a latency in ms: a CSV header may say _s instead of _ms
	field   func(s *stats.Summary) *float64
}

func distField(get func(s *stats.Summary) *stats.Dist, stat string) func(s *stats.Summary) *float64 {
	return func(s *stats.Summary) *float64 {
		d := get(s)
		switch stat {
		case "mean":
			return &d.Mean
		case "p50":
			return &d.P50
		case "p90":
			return &d.P90
		case "p95":
			return &d.P95
		case "p99":
			return &d.P99
		case "p999":
			return &d.P999
		}
		return &d.Max
	}
}

// columns is the table of flat step fields, in output order.
var columns = func() []column {
	cols := []column{
		{name: "offered_rps", field: func(s *stats.Summary) *float64 { return &s.OfferedRateRPS }},
		{name: "throughput_rps", field: func(s *stats.Summary) *float64 { return &s.RequestThroughputRPS }},
		{name: "output_tps", field: func(s *stats.Summary) *float64 { return &s.OutputTokenThroughputTPS }},
		{name: "input_tps", field: func(s *stats.Summary) *float64 { return &s.InputTokenThroughputTPS }},
		{name: "error_rate", field: func(s *stats.Summary) *float64 { return &s.ErrorRate }},
		{name: "rejection_rate", field: func(s *stats.Summary) *float64 { return &s.RejectionRate }},
	}
	dists := []struct {
		name string
		get  func(s *stats.Summary) *stats.Dist
	}{
		{"ttft", func(s *stats.Summary) *stats.Dist { return &s.TTFT }},
		{"ttft_sched", func(s *stats.Summary) *stats.Dist { return &s.TTFTSched }},
		{"itl", func(s *stats.Summary) *stats.Dist { return &s.ITL }},
		{"tpot", func(s *stats.Summary) *stats.Dist { return &s.TPOT }},
		{"e2e", func(s *stats.Summary) *stats.Dist { return &s.E2E }},
	}
	for _, d := range dists {
		for _, st := range stats.StatNames {
			cols = append(cols, column{name: d.name + "_" + st + "_ms", latency: true, field: distField(d.get, st)})
		}
	}
	return cols
}()

func lookupColumn(name string) (column, bool) {
	for _, c := range columns {
		if c.name == name {
			return c, true
		}
	}
	return column{}, false
}

// stepJSON is the documented JSON shape of one step. The flat fields are a
// digest for CI scripts and carry the same names as CSV columns; summary is
// the full measurement when there was one.
type stepJSON struct {
	Load          float64        `json:"load"`
	LoadKind      string         `json:"load_kind"`
	OfferedRPS    *float64       `json:"offered_rps,omitempty"`
	ThroughputRPS *float64       `json:"throughput_rps"` // null when the step's source did not give it
	OutputTPS     *float64       `json:"output_tps"`
	InputTPS      *float64       `json:"input_tps,omitempty"`
	GoodputRPS    *float64       `json:"goodput_rps,omitempty"`
	TTFTP50MS     *float64       `json:"ttft_p50_ms,omitempty"`
	TTFTP95MS     *float64       `json:"ttft_p95_ms,omitempty"`
	TTFTP99MS     *float64       `json:"ttft_p99_ms,omitempty"`
	ITLP50MS      *float64       `json:"itl_p50_ms,omitempty"`
	ITLP95MS      *float64       `json:"itl_p95_ms,omitempty"`
	ITLP99MS      *float64       `json:"itl_p99_ms,omitempty"`
	TPOTP50MS     *float64       `json:"tpot_p50_ms,omitempty"`
	E2EP50MS      *float64       `json:"e2e_p50_ms,omitempty"`
	E2EP95MS      *float64       `json:"e2e_p95_ms,omitempty"`
	E2EP99MS      *float64       `json:"e2e_p99_ms,omitempty"`
	ErrorRate     *float64       `json:"error_rate"`
	RejectionRate *float64       `json:"rejection_rate"`
	Requests      int            `json:"requests,omitempty"`
	PeakInFlight  int            `json:"peak_in_flight,omitempty"`
	SLOMet        bool           `json:"slo_met"`
	SLOs          []Check        `json:"slos,omitempty"`
	Refined       bool           `json:"refined,omitempty"`
	Warnings      []string       `json:"warnings,omitempty"`
	Server        *ServerStep    `json:"server,omitempty"`
	ProbeTTFTP95  *float64       `json:"probe_ttft_p95_ms,omitempty"`
	Oversaturated string         `json:"oversaturated,omitempty"`
	Classes       []ClassStep    `json:"classes,omitempty"`
	Guided        *GuidedStep    `json:"guided,omitempty"`
	Summary       *stats.Summary `json:"summary,omitempty"`

	// OutputTokensPerJ is the energy's output tokens per joule, flat for
	// scripts (the rest is in energy).
	OutputTokensPerJ *float64        `json:"output_tokens_per_j,omitempty"`
	Energy           *energy.Figures `json:"energy,omitempty"`
}

// given is v, or nil (JSON null) when it was not measured (NaN, ±Inf).
func given(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// givenNonZero is given, also omitting 0 (no such latency was measured).
func givenNonZero(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return given(v)
}

// orNaN reads a flat field back: absent or null is missing.
func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// MarshalJSON writes the documented step shape.
func (s Step) MarshalJSON() ([]byte, error) {
	sum := s.Summary
	w := stepJSON{
		Load: s.Load.Value, LoadKind: s.Load.Kind,
		OfferedRPS: givenNonZero(sum.OfferedRateRPS), ThroughputRPS: given(sum.RequestThroughputRPS), OutputTPS: given(sum.OutputTokenThroughputTPS),
		InputTPS: givenNonZero(sum.InputTokenThroughputTPS), GoodputRPS: sum.GoodputRPS,
		TTFTP50MS: givenNonZero(sum.TTFT.P50), TTFTP95MS: givenNonZero(sum.TTFT.P95), TTFTP99MS: givenNonZero(sum.TTFT.P99),
		ITLP50MS: givenNonZero(sum.ITL.P50), ITLP95MS: givenNonZero(sum.ITL.P95), ITLP99MS: givenNonZero(sum.ITL.P99), TPOTP50MS: givenNonZero(sum.TPOT.P50),
		E2EP50MS: givenNonZero(sum.E2E.P50), E2EP95MS: givenNonZero(sum.E2E.P95), E2EP99MS: givenNonZero(sum.E2E.P99),
		ErrorRate: given(sum.ErrorRate), RejectionRate: given(sum.RejectionRate),
		Requests: sum.Requests, PeakInFlight: sum.PeakInFlight,
		SLOMet: s.SLOMet, SLOs: s.SLOs, Refined: s.Refined, Warnings: s.Warnings, Server: s.Server,
		ProbeTTFTP95: s.ProbeTTFTP95, Oversaturated: s.Oversaturated, Classes: s.Classes, Guided: s.Guided, Energy: s.Energy,
	}
	if s.Energy != nil {
		w.OutputTokensPerJ = s.Energy.OutputTokensPerJ
	}
	if s.Full {
		w.Summary = &sum
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a step back; without a summary, the flat fields fill
// what they name.
func (s *Step) UnmarshalJSON(b []byte) error {
	var w stepJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.LoadKind != Concurrency && w.LoadKind != Rate {
		return fmt.Errorf("step load_kind %q: want %q or %q", w.LoadKind, Concurrency, Rate)
	}
	*s = Step{Load: Load{Kind: w.LoadKind, Value: w.Load}, SLOMet: w.SLOMet, SLOs: w.SLOs, Refined: w.Refined, Warnings: w.Warnings, Server: w.Server,
		ProbeTTFTP95: w.ProbeTTFTP95, Oversaturated: w.Oversaturated, Classes: w.Classes, Guided: w.Guided, Energy: w.Energy}
	if w.Summary != nil {
		s.Summary, s.Full = *w.Summary, true
		return nil
	}
	// Without a summary only the flat fields are known: the rest is missing.
	*s = NewStep(w.LoadKind, w.Load)
	s.SLOMet, s.SLOs, s.Refined, s.Warnings = w.SLOMet, w.SLOs, w.Refined, w.Warnings
	s.ProbeTTFTP95, s.Oversaturated, s.Classes, s.Guided = w.ProbeTTFTP95, w.Oversaturated, w.Classes, w.Guided
	sum := &s.Summary
	sum.OfferedRateRPS, sum.RequestThroughputRPS, sum.OutputTokenThroughputTPS = orNaN(w.OfferedRPS), orNaN(w.ThroughputRPS), orNaN(w.OutputTPS)
	sum.InputTokenThroughputTPS, sum.GoodputRPS = orNaN(w.InputTPS), w.GoodputRPS
	sum.TTFT.P50, sum.TTFT.P95, sum.TTFT.P99 = orNaN(w.TTFTP50MS), orNaN(w.TTFTP95MS), orNaN(w.TTFTP99MS)
	sum.ITL.P50, sum.ITL.P95, sum.ITL.P99, sum.TPOT.P50 = orNaN(w.ITLP50MS), orNaN(w.ITLP95MS), orNaN(w.ITLP99MS), orNaN(w.TPOTP50MS)
	sum.E2E.P50, sum.E2E.P95, sum.E2E.P99 = orNaN(w.E2EP50MS), orNaN(w.E2EP95MS), orNaN(w.E2EP99MS)
	sum.ErrorRate, sum.RejectionRate, sum.Requests, sum.PeakInFlight = orNaN(w.ErrorRate), orNaN(w.RejectionRate), w.Requests, w.PeakInFlight
	return nil
}
