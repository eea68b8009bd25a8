package sweep

import (
	"fmt"
	"strings"

	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// Judge evaluates a step's summary against the objectives and fills SLOMet
// and SLOs; each class of a mix is judged too (the objectives and its own),
// and the step is met only when every class is. With no objectives every
// step is met.
func Judge(s *Step, set slo.Set) {
	s.SLOs, s.SLOMet = nil, true
	for _, r := range set.Evaluate(s.Summary) {
		s.SLOs = append(s.SLOs, Check{Objective: r.Objective.String(), Value: r.Value, Met: r.Met, NoData: r.NoData})
		s.SLOMet = s.SLOMet && r.Met
	}
	judgeClasses(s, set)
}

// Objectives returns the objectives' canonical texts.
func Objectives(set slo.Set) []string {
	var out []string
	for _, o := range set {
		out = append(out, o.String())
	}
	return out
}

// objectiveColumn names the CSV column an objective reads.
func objectiveColumn(o slo.Objective) string {
	switch o.Kind {
	case slo.Latency:
		return ColumnFor(o.Metric, o.Stat)
	case slo.Throughput:
		switch o.Metric {
		case "goodput":
			return "goodput_rps"
		case "request_throughput":
			return MetricThroughputRPS
		}
		return MetricOutputTPS
	}
	return o.Metric
}

// JudgeTable evaluates the objectives on CSV steps, reading each value from
// its column. An objective whose column the file lacks is an error naming
// both.
func JudgeTable(t *Table, set slo.Set) error {
	for _, o := range set {
		if c := objectiveColumn(o); !t.Has(c) {
			return fmt.Errorf("SLO %s needs column %s, which not every step gives (every step gives: %s)", o, c, strings.Join(t.Columns, ", "))
		}
	}
	for i := range t.Steps {
		s := &t.Steps[i]
		s.SLOs, s.SLOMet = nil, true
		for _, o := range set {
			v := tableValue(&s.Summary, o)
			c := Check{Objective: o.String(), Value: v, Met: o.Meets(v)}
			s.SLOs = append(s.SLOs, c)
			s.SLOMet = s.SLOMet && c.Met
		}
	}
	return nil
}

func tableValue(sum *stats.Summary, o slo.Objective) float64 {
	switch o.Kind {
	case slo.Latency:
		d, _ := sum.Latency(o.Metric)
		v, _ := d.Stat(o.Stat)
		return v
	case slo.Rate:
		if o.Metric == "rejection_rate" {
			return sum.RejectionRate
		}
		return sum.ErrorRate
	}
	switch o.Metric {
	case "goodput":
		if sum.GoodputRPS != nil {
			return *sum.GoodputRPS
		}
		return 0
	case "request_throughput":
		return sum.RequestThroughputRPS
	}
	return sum.OutputTokenThroughputTPS
}
