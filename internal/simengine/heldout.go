package simengine

import (
	"fmt"
	"math"
)

// HeldOutRange is how far a prediction of one metric has been from the
// truth on hosts knee was not fitted to: of the leave-one-source-out
// errors (docs/validation.md), a share put the measured value between
// Low × and High × the prediction. The bounds are quantiles of the log
// ratio measured / predicted, so they need not be symmetric: where knee
// tends to under-predict, High is further from 1 than Low.
type HeldOutRange struct {
	Low, High float64
}

// Apply turns a predicted value into its range.
func (r HeldOutRange) Apply(v float64) (low, high float64) { return v * r.Low, v * r.High }

// Metrics a range is kept for: the time to first token, the time per
// output token (and inter-token latency), throughput (requests or tokens
// a second).
const (
	RangeTTFT       = "ttft"
	RangeTPOT       = "tpot"
	RangeThroughput = "throughput"
)

// HeldOutShare is the share of held-out errors the ranges knee prints
// cover.
const HeldOutShare = 0.8

// HeldOutLogQuantiles are, by metric, the quantiles at 0%, 5%, …, 100%
// of log(measured / predicted) over the held-out rows of DefaultCost, as
// TestLeaveOneSourceOut (internal/sim) computes them; that test fails when
// these drift from what it measures. A calibrated profile's predictions
// are not covered by them (they are a fit to that host).
var HeldOutLogQuantiles = map[string][21]float64{
	RangeTTFT:       {-0.707, -0.35, -0.228, -0.204, -0.153, -0.113, -0.088, -0.069, -0.038, -0.01, 0.021, 0.074, 0.144, 0.191, 0.229, 0.305, 0.457, 0.573, 0.803, 0.967, 1.725},
	RangeTPOT:       {-1.094, -0.209, -0.132, -0.091, -0.083, -0.075, -0.064, -0.054, -0.05, -0.025, 0.01, 0.032, 0.061, 0.092, 0.107, 0.133, 0.17, 0.221, 0.296, 0.436, 1.504},
	RangeThroughput: {-0.824, -0.324, -0.236, -0.198, -0.153, -0.125, -0.089, -0.061, -0.043, -0.017, -0.003, 0.02, 0.04, 0.055, 0.069, 0.088, 0.107, 0.126, 0.145, 0.165, 0.329},
}

// HeldOutLevel is the share of the pooled held-out errors a range spans
// so that it covers HeldOutShare of a source it was not computed from:
// errors within one source are alike, so the pooled 80% range of the
// other sources covers fewer than 80% of a new one's (TestLeaveOneSourceOut
// calibrates this level by leaving each source out in turn).
const HeldOutLevel = 0.83

// HeldOutRangeAt is the range covering share (0-1) of the held-out errors
// of a metric, centred on their median: from the (1−share)/2 quantile to
// the (1+share)/2 one. share 0 gives the median's factor twice.
func HeldOutRangeAt(metric string, share float64) HeldOutRange {
	q := HeldOutLogQuantiles[metric]
	share = min(max(share, 0), 1)
	return HeldOutRange{Low: math.Exp(quantileOf(q, (1-share)/2)), High: math.Exp(quantileOf(q, (1+share)/2))}
}

// quantileOf interpolates a 21-point quantile table.
func quantileOf(q [21]float64, p float64) float64 {
	pos := p * 20
	i := min(int(pos), 19)
	return q[i] + (q[i+1]-q[i])*(pos-float64(i))
}

// RangeFor is the HeldOutShare range of a metric of a run's summary by
// its name (ttft_ms, ttft_sched_ms, tpot_ms, itl_ms, e2e_ms,
// *_throughput…), and whether knee keeps one for it.
func RangeFor(metric string) (HeldOutRange, bool) {
	return RangeForAt(metric, HeldOutShare)
}

// levelFor is the pooled share to span for a range meant to cover share
// of a new host's errors: HeldOutLevel for HeldOutShare, scaled alike for
// other shares (only HeldOutShare's is calibrated).
func levelFor(share float64) float64 {
	return min(share*HeldOutLevel/HeldOutShare, 1)
}

// RangeForAt is RangeFor for another share. E2E is TTFT plus the decode;
// it takes the wider bound of the two on each side, a bound and not a
// quantile of its own.
func RangeForAt(metric string, share float64) (HeldOutRange, bool) {
	share = levelFor(share)
	switch metric {
	case "ttft_ms", "ttft_sched_ms", "ttft":
		return HeldOutRangeAt(RangeTTFT, share), true
	case "tpot_ms", "itl_ms", "tpot", "itl":
		return HeldOutRangeAt(RangeTPOT, share), true
	case "e2e_ms", "e2e":
		a, b := HeldOutRangeAt(RangeTTFT, share), HeldOutRangeAt(RangeTPOT, share)
		return HeldOutRange{Low: min(a.Low, b.Low), High: max(a.High, b.High)}, true
	case "request_throughput_rps", "output_token_throughput_tps", "input_token_throughput_tps", "total_token_throughput_tps",
		"goodput_rps", "throughput", "request_throughput", "output_throughput":
		return HeldOutRangeAt(RangeThroughput, share), true
	}
	return HeldOutRange{}, false
}

// RangeBasis says what a range means, for reports.
func RangeBasis() string {
	return fmt.Sprintf("on hosts knee has not seen, %.0f%% of held-out errors: docs/validation.md", HeldOutShare*100)
}
