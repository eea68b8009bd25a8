package sweep

import (
	"fmt"
	"strings"
)

// ServerStep is the server's own view of one step, from its scraped
// /metrics (nil fields: the server did not expose them).
type ServerStep struct {
	Server      string   `json:"server"` // vllm, sglang, tgi, llamacpp, knee
	QueueMeanMS *float64 `json:"queue_mean_ms,omitempty"`
	QueueP95MS  *float64 `json:"queue_p95_ms,omitempty"`
	// QueueP95Bound: the server's bucket holding the p95 is wider than the
	// value, so QueueP95MS is that bucket's upper bound ("at most").
	QueueP95Bound bool     `json:"queue_p95_is_bucket_bound,omitempty"`
	PrefillMeanMS *float64 `json:"prefill_mean_ms,omitempty"`
	PrefillP95MS  *float64 `json:"prefill_p95_ms,omitempty"`
	RunningMean   *float64 `json:"running_mean,omitempty"`
	RunningMax    *float64 `json:"running_max,omitempty"`
	WaitingMean   *float64 `json:"waiting_mean,omitempty"`
	WaitingMax    *float64 `json:"waiting_max,omitempty"`
	KVUsageMax    *float64 `json:"kv_usage_max,omitempty"` // 0..1
	Preemptions   *float64 `json:"preemptions,omitempty"`
	// WaitingGrowing: the waiting queue rose through the step without
	// draining — saturation seen directly.
	WaitingGrowing bool `json:"waiting_growing,omitempty"`
	// StoppedEarly: an automatic sweep cut the step short for that reason.
	StoppedEarly bool `json:"stopped_early,omitempty"`
}

// saturated reports whether the server itself showed the step saturated.
func saturated(s *Step) bool { return s.Server != nil && s.Server.WaitingGrowing }

// serverEvidence says what the server's metrics show between step s and
// the next one nx ("" when neither has them).
func serverEvidence(s, nx *Step) string {
	a, b := s.Server, nx.Server
	if a == nil || b == nil {
		return ""
	}
	var parts []string
	change := func(name string, x, y *float64, unit string) {
		if x == nil || y == nil {
			return
		}
		switch {
		case *x > 0 && *y/(*x) >= 1.25:
			parts = append(parts, fmt.Sprintf("%s rose ×%s (%.4g → %.4g%s)", name, times(*y/(*x)), *x, *y, unit))
		case *x > 0 && *y/(*x) <= 0.8:
			parts = append(parts, fmt.Sprintf("%s fell ×%s (%.4g → %.4g%s)", name, times(*y/(*x)), *x, *y, unit))
		case *x == 0 && *y > 0:
			parts = append(parts, fmt.Sprintf("%s rose from 0 to %.4g%s", name, *y, unit))
		default:
			parts = append(parts, fmt.Sprintf("%s flat (%.4g → %.4g%s)", name, *x, *y, unit))
		}
	}
	change("server queue mean", a.QueueMeanMS, b.QueueMeanMS, " ms")
	change("prefill mean", a.PrefillMeanMS, b.PrefillMeanMS, " ms")
	if a.RunningMax != nil && b.RunningMax != nil {
		if *b.RunningMax == *a.RunningMax {
			parts = append(parts, fmt.Sprintf("running requests pinned at %.0f", *b.RunningMax))
		} else {
			parts = append(parts, fmt.Sprintf("running requests max %.0f → %.0f", *a.RunningMax, *b.RunningMax))
		}
	}
	if b.WaitingMax != nil && *b.WaitingMax > 0 {
		w := fmt.Sprintf("waiting up to %.0f", *b.WaitingMax)
		if b.WaitingGrowing {
			w += " and still growing"
		}
		parts = append(parts, w)
	}
	if b.KVUsageMax != nil {
		parts = append(parts, fmt.Sprintf("KV cache up to %.0f%%", 100**b.KVUsageMax))
	}
	if b.Preemptions != nil && *b.Preemptions > 0 {
		parts = append(parts, fmt.Sprintf("%.0f preemptions", *b.Preemptions))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the server's metrics from " + s.Load.String() + " to " + nx.Load.String() + ": " + strings.Join(parts, ", ")
}

func times(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.2g", r)
}
