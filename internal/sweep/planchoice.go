package sweep

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
)

// PlanChoice is what a user chose for a sweep's loads: a list of
// --concurrency or --rate steps, or an automatic sweep (--auto, or a list
// of "auto") from Min by Factor up to Max with Refine bisection steps, and
// the throughput the knee is placed on (--knee-metric).
type PlanChoice struct {
	Concurrency, Rate string
	Auto              bool
	Min, Max, Factor  float64
	Refine            int
	Metric            string
}

// Plan resolves the choice into a plan; most is the highest load it may
// step to. maxInFlight and maxRateRPS bound the loads (loadsetup's).
func (f *PlanChoice) Plan(maxInFlight, maxRateRPS float64) (p Plan, most float64, err error) {
	if f.Concurrency != "" && f.Rate != "" {
		return p, most, badinput.Errorf("give --concurrency or --rate, not both")
	}
	p.Kind = Concurrency
	list := f.Concurrency
	if f.Rate != "" {
		p.Kind, list = Rate, f.Rate
	}
	if list == "" || strings.EqualFold(list, "auto") || f.Auto {
		if list != "" && !strings.EqualFold(list, "auto") {
			return p, most, badinput.Errorf("--auto with a list of loads: give one or the other")
		}
		p.Min, p.Max, p.Factor = f.Min, f.Max, f.Factor
		if p.Max == 0 {
			p.Max = 1024
			if p.Kind == Rate {
				p.Max = 1000
			}
		}
		p.Refine = f.Refine
		if p.Refine == 0 {
			p.Refine = -1
		}
	} else {
		name := "--" + map[string]string{Concurrency: "concurrency", Rate: "rate"}[p.Kind]
		for i, s := range strings.Split(list, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return p, most, badinput.Errorf("%s: item %d %q is not a positive number (want a list such as 1,4,16,64, or auto)", name, i+1, s)
			}
			if p.Kind == Concurrency && v != math.Trunc(v) {
				return p, most, badinput.Errorf("%s: item %d %q: want whole numbers of requests in flight", name, i+1, s)
			}
			if slices.Contains(p.Loads, v) {
				return p, most, badinput.Errorf("%s: %s is listed twice (each load is measured once)", name, strings.TrimSpace(s))
			}
			p.Loads = append(p.Loads, v)
		}
		// Steps run in increasing load, as the curve is read.
		slices.Sort(p.Loads)
	}
	limit, unit := maxInFlight, "requests in flight"
	if p.Kind == Rate {
		limit, unit = maxRateRPS, "requests per second"
	}
	for _, v := range append([]float64{p.Max}, p.Loads...) {
		if v > limit {
			return p, most, badinput.Errorf("load %v: at most %g %s (beyond that knee measures itself, not the server)", v, limit, unit)
		}
		most = max(most, v)
	}
	if f.Metric != "" && f.Metric != MetricOutputTPS && f.Metric != MetricThroughputRPS {
		return p, most, badinput.Errorf("--knee-metric %q: want output_tps or throughput_rps", f.Metric)
	}
	p.Metric = f.Metric
	if err := p.Validate(); err != nil {
		return p, most, badinput.Errorf("%v", err)
	}
	return p, most, nil
}
