package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/knee-dev/knee/internal/stats"
)

// PredictionRanges are a simulated run's headline figures with the range
// knee's held-out errors give each (simengine.HeldOutRanges): how far the
// truth has been from such a prediction on hosts knee was not fitted to.
type PredictionRanges struct {
	Share   float64            `json:"share"` // of held-out errors a range covers, e.g. 0.8
	Basis   string             `json:"basis"`
	Figures []PredictionFigure `json:"figures"`
}

// PredictionFigure is one predicted figure and its range, in Unit.
type PredictionFigure struct {
	Metric string  `json:"metric"` // summary field and statistic, e.g. "ttft_ms.p95"
	Label  string  `json:"label"`  // e.g. "p95 TTFT"
	Value  float64 `json:"value"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	Unit   string  `json:"unit"` // ms, rps, tps
}

// String reads "p95 TTFT 420 ms; 290–690 ms".
func (f PredictionFigure) String() string {
	return fmt.Sprintf("%s %s %s; %s–%s %s", f.Label, fnumUnit(f.Value), f.Unit, fnumUnit(f.Low), fnumUnit(f.High), f.Unit)
}

// fnumUnit prints a figure with three significant digits at most.
func fnumUnit(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func (p *PredictionRanges) section() section {
	s := section{title: "Prediction ranges, " + p.Basis}
	for _, f := range p.Figures {
		s.kv = append(s.kv, [2]string{f.Label, strings.TrimPrefix(f.String(), f.Label+" ")})
	}
	return s
}

// Headline figures a simulated run's ranges are shown for: the summary's
// field, the statistic, the label and the unit.
var predictionHeadline = []struct{ field, stat, label, unit string }{
	{"ttft_ms", "p50", "p50 TTFT", "ms"},
	{"ttft_ms", "p95", "p95 TTFT", "ms"},
	{"tpot_ms", "p50", "p50 TPOT", "ms"},
	{"tpot_ms", "p95", "p95 TPOT", "ms"},
	{"e2e_ms", "p95", "p95 E2E", "ms"},
	{"output_token_throughput_tps", "", "output throughput", "tok/s"},
	{"request_throughput_rps", "", "request throughput", "req/s"},
}

// PredictionsFor gives a simulated summary's headline figures their
// ranges: rangeOf returns, for a summary field, the factors the truth
// has been within (of the prediction) for share of held-out errors, and
// false for a field it has none for. Figures the run did not measure
// (zero) are left out.
func PredictionsFor(s *stats.Summary, rangeOf func(field string) (low, high float64, ok bool), share float64, basis string) *PredictionRanges {
	p := &PredictionRanges{Share: share, Basis: basis}
	// An open loop the server kept up with has the throughput of its
	// load, not of the server: no range to give it.
	keptUp := s.OfferedRateRPS > 0 && s.RequestThroughputRPS >= 0.9*s.OfferedRateRPS
	for _, h := range predictionHeadline {
		if keptUp && strings.HasSuffix(h.field, "throughput_tps") || keptUp && strings.HasSuffix(h.field, "throughput_rps") {
			continue
		}
		var v float64
		switch h.field {
		case "ttft_ms":
			v = pick(s.TTFT, h.stat)
		case "tpot_ms":
			v = pick(s.TPOT, h.stat)
		case "e2e_ms":
			v = pick(s.E2E, h.stat)
		case "output_token_throughput_tps":
			v = s.OutputTokenThroughputTPS
		case "request_throughput_rps":
			v = s.RequestThroughputRPS
		}
		lo, hi, ok := rangeOf(h.field)
		if !ok || v <= 0 || math.IsNaN(v) {
			continue
		}
		metric := h.field
		if h.stat != "" {
			metric += "." + h.stat
		}
		p.Figures = append(p.Figures, PredictionFigure{Metric: metric, Label: h.label, Value: v, Low: v * lo, High: v * hi, Unit: h.unit})
	}
	return p
}

func pick(d stats.Dist, stat string) float64 {
	switch stat {
	case "p50":
		return d.P50
	case "p95":
		return d.P95
	}
	return d.Mean
}
