package slo

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// Result is one objective evaluated against a run.
type Result struct {
	Objective Objective
	// Value is the measured value in the summary's units (ms, fraction or
	// per second); +Inf or NaN never appear: with no data NoData is set.
	Value  float64
	Met    bool
	NoData bool // nothing to measure (no completed requests): not met
}

// String is a one-line verdict, e.g. "p95(ttft)<2s: 2.31s (not met)".
func (r Result) String() string {
	verdict := "met"
	if !r.Met {
		verdict = "not met"
	}
	if r.NoData {
		return fmt.Sprintf("%s: no data (%s)", r.Objective, verdict)
	}
	return fmt.Sprintf("%s: %s (%s)", r.Objective, r.Objective.Format(r.Value), verdict)
}

// Format shows a value (in the summary's units): a latency in the unit a
// person reads best (69.6ms, 2.31s, 2h03m; not 0.06958s), a rate in the
// objective's unit.
func (o Objective) Format(v float64) string {
	switch o.Kind {
	case Latency:
		return stats.HumanMs(v)
	case Rate:
		if o.Unit == "%" {
			return trim(v*100) + "%"
		}
		return trim(v)
	default:
		return trim(v) + o.Unit
	}
}

// trim prints 4 significant digits without trailing zeros.
func trim(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// Meets reports whether v satisfies the objective's comparison.
func (o Objective) Meets(v float64) bool {
	switch o.Op {
	case "<":
		return v < o.Threshold
	case "<=":
		return v <= o.Threshold
	case ">":
		return v > o.Threshold
	case ">=":
		return v >= o.Threshold
	}
	return false
}

// Evaluate checks every objective against a run's summary.
func (s Set) Evaluate(sum stats.Summary) []Result {
	if len(s) == 0 {
		return nil
	}
	out := make([]Result, 0, len(s))
	for _, o := range s {
		r := Result{Objective: o}
		var ok bool
		switch o.Kind {
		case Latency:
			d, _ := sum.Latency(o.Metric)
			r.Value, _ = d.Stat(o.Stat)
			ok = d.Count > 0
		case Rate:
			r.Value, ok = sum.ErrorRate, sum.Requests > 0
			if o.Metric == "rejection_rate" {
				r.Value = sum.RejectionRate
			}
		case Throughput:
			switch o.Metric {
			case "goodput":
				if sum.GoodputRPS != nil {
					r.Value, ok = *sum.GoodputRPS, true
				}
			case "request_throughput":
				r.Value, ok = sum.RequestThroughputRPS, sum.DurationS > 0
			case "output_throughput":
				r.Value, ok = sum.OutputTokenThroughputTPS, sum.DurationS > 0
			}
		}
		if !ok || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
			r.Value, r.NoData = 0, true
		} else {
			r.Met = o.Meets(r.Value)
		}
		out = append(out, r)
	}
	return out
}

// Good reports whether one request met every per-request objective; it is
// what goodput counts (stats.Options.Good). Following vLLM's goodput, each
// latency objective is applied to the request's own value, whatever its
// statistic: p95(ttft)<2s asks for this request's TTFT under 2 s; the same
// for ttft_sched, tpot, e2e and lag. ITL has many values per request, so the
// objective's statistic is taken over the request's own chunk gaps:
// p99(itl)<100ms asks for the 99th percentile of its gaps under 100 ms,
// max(itl) for its longest gap. A request without a value for the metric
// (TPOT or ITL of a one-token answer) is not constrained by it. Rate and
// throughput objectives are properties of a run, not of a request; a failed
// request, or one that carried no content, is never good.
func (s Set) Good(r *record.Request) bool {
	if !r.OK() || (!r.HasFirstToken() && r.Items == 0) {
		return false
	}
	for _, o := range s {
		if o.Kind != Latency {
			continue
		}
		v, ok := requestValue(o, r)
		if ok && !o.Meets(v) {
			return false
		}
	}
	return true
}

func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

// requestValue is a request's own value of a latency objective, in ms.
func requestValue(o Objective, r *record.Request) (float64, bool) {
	var d time.Duration
	var ok bool
	switch o.Metric {
	case "ttft":
		d, ok = r.TTFT()
	case "ttft_sched":
		d, ok = r.TTFTSched()
	case "e2e":
		d, ok = r.E2E()
	case "tpot":
		d, ok = r.TPOT()
	case "lag":
		d, ok = r.Lag(), true
	case "itl":
		return itlStat(o.Stat, r)
	}
	return msOf(d), ok
}

// itlStat applies a statistic to one request's chunk gaps, with the same
// interpolated percentiles as package stats.
func itlStat(stat string, r *record.Request) (float64, bool) {
	if len(r.TokenTimes) < 2 {
		return 0, false
	}
	var buf [256]float64
	gaps := buf[:0]
	for i := 1; i < len(r.TokenTimes); i++ {
		gaps = append(gaps, msOf(r.TokenTimes[i]-r.TokenTimes[i-1]))
	}
	if stat == "mean" {
		var sum float64
		for _, g := range gaps {
			sum += g
		}
		return sum / float64(len(gaps)), true
	}
	slices.Sort(gaps)
	var q float64
	switch stat {
	case "p50":
		q = 0.5
	case "p90":
		q = 0.9
	case "p95":
		q = 0.95
	case "p99":
		q = 0.99
	case "p999":
		q = 0.999
	default: // max
		q = 1
	}
	pos := q * float64(len(gaps)-1)
	lo := int(pos)
	if lo+1 >= len(gaps) {
		return gaps[lo], true
	}
	return gaps[lo] + (pos-float64(lo))*(gaps[lo+1]-gaps[lo]), true
}
