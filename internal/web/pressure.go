package web

import (
	"fmt"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
)

// The service-pressure badge (docs/ui.md states these rules):
//
//   - Saturated: fewer than SaturatedAttainment of the measured requests met
//     every SLO, or the queue grew through the run (the last third of
//     requests waited QueueGrowthFactor times as long as the first third,
//     and at least QueueGrowthMinMS longer): the service is past capacity.
//   - Strained: the SLOs hold for most requests but fewer than
//     HealthyAttainment met them, or requests spend more than
//     StrainedQueueShare of their TTFT waiting: a queue has formed.
//   - Healthy: otherwise.
const (
	HealthyAttainment   = 0.99
	SaturatedAttainment = 0.90
	StrainedQueueShare  = 0.5
	QueueGrowthFactor   = 2.0
	QueueGrowthMinMS    = 250.0
)

// Pressure levels.
const (
	Healthy   = "healthy"
	Strained  = "strained"
	Saturated = "saturated"
)

type pressure struct {
	Level        string  `json:"level"`
	Reason       string  `json:"reason"`
	Attainment   float64 `json:"slo_attainment"` // share of measured requests meeting every SLO (failed ones do not)
	QueueShare   float64 `json:"queue_share"`    // mean wait / mean TTFT (queue-inclusive)
	QueueFirstMS float64 `json:"queue_first_third_ms"`
	QueueLastMS  float64 `json:"queue_last_third_ms"`
	QueueGrowing bool    `json:"queue_growing"`
}

// judgePressure reads the badge from records sorted by send time.
func judgePressure(recs []record.Request, set slo.Set) pressure {
	var waits []float64
	var waitSum, ttftSum float64
	good, measured := 0, 0
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		measured++
		if r.OK() && set.Good(r) {
			good++
		}
		if !r.OK() || !r.HasFirstToken() {
			continue
		}
		w := r.Lag()
		if r.ServerPhases != nil {
			w += r.ServerPhases.Queue
		}
		waits = append(waits, ms(w))
		waitSum += ms(w)
		ttftSum += ms(r.FirstToken - r.Scheduled)
	}
	p := pressure{}
	if measured == 0 {
		p.Level, p.Reason = Saturated, "no request was measured"
		return p
	}
	p.Attainment = float64(good) / float64(measured)
	if ttftSum > 0 {
		p.QueueShare = waitSum / ttftSum
	}
	if n := len(waits) / 3; n > 0 {
		p.QueueFirstMS, p.QueueLastMS = mean(waits[:n]), mean(waits[len(waits)-n:])
		p.QueueGrowing = p.QueueLastMS > QueueGrowthFactor*p.QueueFirstMS && p.QueueLastMS-p.QueueFirstMS > QueueGrowthMinMS
	}
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	// Beside a bound, the value carries as many digits as it takes to differ
	// from it: "99.0% (under 99.0%)" contradicted itself at 98.96%.
	metUnder := func(v, bound float64) string {
		return fmt.Sprintf("%s of requests met the SLOs (under %s)", pctApart(v, bound), pct(bound))
	}
	switch {
	case p.QueueGrowing:
		p.Level = Saturated
		p.Reason = fmt.Sprintf("the queue grows: the last third of requests waited %s, the first third %s", fmtMS(p.QueueLastMS), fmtMS(p.QueueFirstMS))
	case p.Attainment < SaturatedAttainment:
		p.Level = Saturated
		p.Reason = "only " + metUnder(p.Attainment, SaturatedAttainment)
	case p.Attainment < HealthyAttainment:
		p.Level = Strained
		p.Reason = metUnder(p.Attainment, HealthyAttainment)
	case p.QueueShare > StrainedQueueShare:
		p.Level = Strained
		p.Reason = fmt.Sprintf("SLOs met, but waiting is %s of the time to first token: a queue has formed", pct(p.QueueShare))
	default:
		p.Level = Healthy
		p.Reason = fmt.Sprintf("%s of requests met the SLOs; waiting is %s of the time to first token", pct(p.Attainment), pct(p.QueueShare))
	}
	return p
}

// pctApart writes v as a percentage with one decimal, or with more where
// one would print it equal to bound (which it is compared with and is not).
func pctApart(v, bound float64) string {
	for digits := 1; digits <= 6; digits++ {
		s := fmt.Sprintf("%.*f%%", digits, 100*v)
		if v == bound || s != fmt.Sprintf("%.*f%%", digits, 100*bound) {
			return s
		}
	}
	return fmt.Sprintf("%g%%", 100*v)
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func fmtMS(v float64) string {
	return time.Duration(v * 1e6).Round(time.Millisecond).String()
}
