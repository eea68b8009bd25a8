package compare

import (
	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/sweep"
)

// ServerRow is one figure of the servers' own scraped metrics side by
// side. Scraped figures are aggregates (histogram means, gauge maxima)
// with no per-request samples to resample, so they are shown, not judged.
type ServerRow struct {
	Metric string   `json:"metric"` // e.g. "server_queue_mean_ms"
	Label  string   `json:"label"`
	A      *float64 `json:"a"` // nil: that run's server did not expose it
	B      *float64 `json:"b"`
}

// ServerRows set two runs' scraped server figures side by side: their
// steps' share of the server view and generation tokens/s (nil: not
// scraped). Rows neither run has are left out.
func ServerRows(sa, sb *sweep.ServerStep, tpsA, tpsB *float64) []ServerRow {
	f := func(x float64) *float64 { return &x }
	rows := []ServerRow{
		{Metric: "server_queue_mean_ms", Label: "server queue mean (ms)", A: sa.QueueMeanMS, B: sb.QueueMeanMS},
		{Metric: "server_prefill_mean_ms", Label: "server prefill mean (ms)", A: sa.PrefillMeanMS, B: sb.PrefillMeanMS},
		{Metric: "server_running_max", Label: "server running max", A: sa.RunningMax, B: sb.RunningMax},
		{Metric: "server_waiting_max", Label: "server waiting max", A: sa.WaitingMax, B: sb.WaitingMax},
		{Metric: "server_preemptions", Label: "server preemptions", A: sa.Preemptions, B: sb.Preemptions},
		{Metric: "server_generation_tps", Label: "server generation tok/s", A: tpsA, B: tpsB},
	}
	if sa.KVUsageMax != nil || sb.KVUsageMax != nil {
		pctOf := func(x *float64) *float64 {
			if x == nil {
				return nil
			}
			return f(100 * *x)
		}
		rows = append(rows, ServerRow{Metric: "server_kv_usage_max_pct", Label: "server KV usage max (%)", A: pctOf(sa.KVUsageMax), B: pctOf(sb.KVUsageMax)})
	}
	var out []ServerRow
	for _, r := range rows {
		if r.A != nil || r.B != nil {
			out = append(out, r)
		}
	}
	return out
}

// EnergyRows set two runs' energy figures side by side (nil: the run has
// none): per output token, per joule, per GPU and per million tokens.
// Rows neither run has are left out; nil when neither has energy.
func EnergyRows(ea, eb *energy.Figures) []ServerRow {
	if ea == nil && eb == nil {
		return nil
	}
	pick := func(e *energy.Figures, f func(*energy.Figures) *float64) *float64 {
		if e == nil {
			return nil
		}
		return f(e)
	}
	rows := []ServerRow{
		{Metric: "j_per_output_token", Label: "energy per output token (J)",
			A: pick(ea, func(e *energy.Figures) *float64 { return e.JPerOutputToken }), B: pick(eb, func(e *energy.Figures) *float64 { return e.JPerOutputToken })},
		{Metric: "output_tokens_per_j", Label: "output tokens per J",
			A: pick(ea, func(e *energy.Figures) *float64 { return e.OutputTokensPerJ }), B: pick(eb, func(e *energy.Figures) *float64 { return e.OutputTokensPerJ })},
		{Metric: "avg_power_w_per_gpu", Label: "average power per GPU (W)",
			A: pick(ea, func(e *energy.Figures) *float64 { return &e.AvgPowerWPerGPU }), B: pick(eb, func(e *energy.Figures) *float64 { return &e.AvgPowerWPerGPU })},
		{Metric: "usd_per_m_output_tokens", Label: "$ per million output tokens",
			A: pick(ea, func(e *energy.Figures) *float64 { return e.USDPerMOutputTokens }), B: pick(eb, func(e *energy.Figures) *float64 { return e.USDPerMOutputTokens })},
	}
	var out []ServerRow
	for _, r := range rows {
		if r.A != nil || r.B != nil {
			out = append(out, r)
		}
	}
	return out
}
