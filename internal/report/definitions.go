package report

import (
	"fmt"

	"github.com/knee-dev/knee/internal/stats"
)

// Definition is one metric definition as every report prints it (SPEC §2).
type Definition struct {
	Term string `json:"term"`
	Text string `json:"text"`
}

// Definitions returns the definitions a report of sum rests on, with the
// run's own warm-up and cool-down figures. Goodput and server phases are
// defined only when the summary has them.
func Definitions(sum *stats.Summary) []Definition {
	w := sum.Window
	window := fmt.Sprintf("from the first measured request's send to the last measured request's end; "+
		"%d warm-up and %d cool-down requests excluded from every statistic", w.ExcludedWarmup, w.ExcludedCooldown)
	defs := []Definition{
		{"Window", window},
		{"TTFT", "first_token − sent. The first token is the first chunk carrying content, reasoning or tool calls; role-only, empty and keep-alive chunks never count"},
		{"TTFT (sched)", "first_token − scheduled: includes time queued in the client and send lag; what a user feels in an open-loop run"},
		{"ITL", "gap between consecutive content chunks, one value per gap: a chunk carrying k tokens counts once, not k times"},
		{"TPOT", "(e2e − ttft) / (output_tokens − 1): excludes the first token (vLLM's convention); none for one-token answers; decode rate = 1/TPOT"},
		{"E2E", "done − sent, done being the arrival of the last content chunk; for an answer given whole (embeddings, rerank), the end of its body"},
		{"Lag", "sent − scheduled: how late knee sent the request (open loop: behind its schedule; closed loop: after a slot freed)"},
		{"Latency sample", "completed requests only (lag: every measured request); failed requests are reported apart, and adjusted TTFT counts them as infinitely slow (∞; null in JSON)"},
		{"Percentiles", "linear interpolation between closest ranks (numpy's default, as vLLM's benchmark reports them)"},
		{"Throughput", "completed requests, and their input and output tokens (the server's usage when given, else knee's count), per second of the window"},
		{"Goodput", "completed requests per second that met every SLO, each judged on its own TTFT/TPOT/E2E (ITL: the SLO's statistic over its own gaps)"},
		{"Error rate", "failed / measured requests; rejection rate = rejected (HTTP 429/503 admission) / measured requests"},
		{"Achieved rate", "send rate: (requests sent − 1) / (last send − first send), to compare with the offered rate"},
		{"Peak in flight", "most requests sent and not yet ended at any send in the window, warm-up requests included"},
		{"Server phases", "queue, prefill and decode times as the server reported them for each request"},
	}
	out := defs[:0]
	for _, d := range defs {
		if d.Term == "Goodput" && sum.GoodputRPS == nil || d.Term == "Server phases" && sum.ServerQueue == nil && sum.ServerPrefill == nil {
			continue
		}
		out = append(out, d)
	}
	return out
}
