package simengine

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// HeldOutRange is how far a prediction of one metric has been from the
// truth on hosts knee was not fitted to: of the held-out errors
// (docs/validation.md), a share put the measured value between Low × and
// High × the prediction. The bounds are quantiles of the log ratio
// measured / predicted, so they need not be symmetric: where knee tends
// to under-predict, High is further from 1 than Low.
type HeldOutRange struct {
	Low, High float64
}

// Apply turns a predicted value into its range.
func (r HeldOutRange) Apply(v float64) (low, high float64) { return v * r.Low, v * r.High }

// wider is the range reaching the further of the two on each side.
func (r HeldOutRange) wider(o HeldOutRange) HeldOutRange {
	return HeldOutRange{Low: min(r.Low, o.Low), High: max(r.High, o.High)}
}

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

// Leave-out schemes: what was unseen when an error was measured. The
// validation rows are held out five ways (internal/sim's nested
// cross-validation, docs/validation.md); knee ships the errors of three.
const (
	// SchemeSource leaves out one source (a publisher's host and engine
	// version) at a time.
	SchemeSource = "source"
	// SchemePublisher leaves out every source of one publisher: whoever
	// runs knee is a publisher knee has not seen, so it is the baseline.
	SchemePublisher = "publisher"
	// SchemeGPU leaves out every row on one GPU model: the errors of a GPU
	// without a validated source.
	SchemeGPU = "gpu"
	// SchemeEngineVersion leaves out every row of one engine version.
	SchemeEngineVersion = "engine-version"
	// SchemeModel leaves out every row of one model: the errors of a
	// model without a validated source.
	SchemeModel = "model"
)

// Running-batch classes: the errors differ with the batch a prediction
// runs at (TPOT at large batches reads low more often, issue 40; one
// request at a time has no batching and its errors are the tightest), so
// each class keeps its own range. A validation row is one at a time when
// it ran one user or sequence, large when it ran 32 users or sequences or
// more, or a burst queued at once, and small otherwise (2-16, or an
// open-loop rate); a prediction is one at a time when its mean requests
// in flight are above zero and under BatchSmallFrom, and large when they
// reach BatchLargeFrom.
const (
	BatchOne   = "one-at-a-time"
	BatchSmall = "small-batch"
	BatchLarge = "large-batch"
)

// BatchClasses lists the classes.
var BatchClasses = []string{BatchOne, BatchSmall, BatchLarge}

// BatchSmallFrom is the mean requests in flight from which a prediction
// is in the small-batch class: between the validation rows' one user
// (about one in flight) and two.
const BatchSmallFrom = 1.5

// BatchLargeFrom is the mean requests in flight from which a prediction
// is in the large-batch class: between the validation rows' 16 users
// (small) and 32 (large).
const BatchLargeFrom = 24

// BatchClassOf is the class of a prediction with inFlight requests in
// flight on average (Little's law: throughput × mean latency); 0 (not
// known) is the small-batch class.
func BatchClassOf(inFlight float64) string {
	switch {
	case inFlight >= BatchLargeFrom:
		return BatchLarge
	case inFlight > 0 && inFlight < BatchSmallFrom:
		return BatchOne
	}
	return BatchSmall
}

// RangeKey names a metric's range in a batch class.
func RangeKey(metric, class string) string { return metric + "@" + class }

// HeldOutLogQuantiles are, by scheme and RangeKey, the quantiles at 0%,
// 5%, …, 100% of log(measured / predicted) over the validation rows of a
// metric and batch class, each predicted with the defaults fitted without
// its group under that scheme (TestRangeCrossValidation in internal/sim
// computes them and fails when these drift). A calibrated profile's
// predictions are not covered by them (they are a fit to that host).
var HeldOutLogQuantiles = map[string]map[string][21]float64{
	SchemePublisher: {
		RangeKey(RangeTTFT, BatchOne):         {-0.707, -0.35, -0.228, -0.202, -0.143, -0.113, -0.084, -0.068, -0.037, -0.008, 0.021, 0.062, 0.136, 0.174, 0.223, 0.269, 0.412, 0.526, 0.803, 0.929, 1.725},
		RangeKey(RangeTTFT, BatchSmall):       {-0.422, -0.385, -0.291, -0.225, -0.208, -0.179, -0.142, -0.129, -0.098, -0.059, -0.026, -0.007, 0.045, 0.145, 0.184, 0.246, 0.292, 0.733, 0.852, 0.957, 1.503},
		RangeKey(RangeTTFT, BatchLarge):       {-0.707, -0.232, -0.14, -0.082, -0.075, -0.058, -0.01, 0.012, 0.044, 0.06, 0.102, 0.124, 0.158, 0.223, 0.239, 0.35, 0.417, 0.495, 0.822, 1.03, 1.725},
		RangeKey(RangeTPOT, BatchOne):         {-1.051, -0.202, -0.14, -0.1, -0.091, -0.081, -0.075, -0.063, -0.054, -0.043, -0.013, 0.026, 0.034, 0.084, 0.099, 0.136, 0.216, 0.253, 0.365, 0.445, 1.504},
		RangeKey(RangeTPOT, BatchSmall):       {-0.138, -0.107, -0.099, -0.093, -0.084, -0.075, -0.074, -0.061, -0.053, -0.05, -0.028, -0.008, 0.032, 0.039, 0.096, 0.108, 0.221, 0.3, 0.355, 0.434, 1.504},
		RangeKey(RangeTPOT, BatchLarge):       {-1.051, -0.666, -0.265, -0.203, -0.195, -0.161, -0.092, -0.059, -0.023, 0.011, 0.04, 0.078, 0.096, 0.125, 0.158, 0.17, 0.22, 0.252, 0.441, 0.448, 0.591},
		RangeKey(RangeThroughput, BatchOne):   {-0.824, -0.381, -0.244, -0.181, -0.132, -0.094, -0.063, -0.048, -0.025, -0.013, 0.003, 0.027, 0.044, 0.057, 0.068, 0.082, 0.105, 0.124, 0.147, 0.165, 0.329},
		RangeKey(RangeThroughput, BatchSmall): {-0.586, -0.389, -0.174, -0.142, -0.099, -0.061, -0.057, -0.043, -0.026, -0.006, 0.003, 0.018, 0.044, 0.056, 0.067, 0.091, 0.121, 0.149, 0.159, 0.21, 0.329},
		RangeKey(RangeThroughput, BatchLarge): {-0.824, -0.36, -0.255, -0.21, -0.146, -0.108, -0.085, -0.055, -0.024, -0.013, 0.003, 0.031, 0.043, 0.057, 0.068, 0.08, 0.101, 0.114, 0.142, 0.159, 0.277},
	},
	SchemeGPU: {
		RangeKey(RangeTTFT, BatchOne):         {-0.743, -0.598, -0.483, -0.413, -0.315, -0.277, -0.158, -0.097, -0.085, -0.023, 0.031, 0.074, 0.134, 0.172, 0.241, 0.365, 0.474, 0.572, 0.784, 1.071, 1.725},
		RangeKey(RangeTTFT, BatchSmall):       {-0.704, -0.623, -0.503, -0.452, -0.435, -0.404, -0.323, -0.294, -0.275, -0.192, -0.152, -0.09, -0.013, 0.076, 0.145, 0.311, 0.446, 0.725, 0.816, 1.06, 1.661},
		RangeKey(RangeTTFT, BatchLarge):       {-0.707, -0.43, -0.198, -0.09, -0.07, -0.02, 0.015, 0.052, 0.085, 0.116, 0.136, 0.164, 0.223, 0.239, 0.266, 0.396, 0.408, 0.494, 0.821, 1.216, 1.725},
		RangeKey(RangeTPOT, BatchOne):         {-1.094, -0.18, -0.096, -0.085, -0.077, -0.073, -0.058, -0.05, -0.028, 0.001, 0.032, 0.046, 0.089, 0.114, 0.136, 0.212, 0.244, 0.312, 0.401, 0.448, 1.504},
		RangeKey(RangeTPOT, BatchSmall):       {-0.127, -0.096, -0.09, -0.077, -0.075, -0.067, -0.055, -0.052, -0.05, -0.027, -0.004, 0.032, 0.034, 0.092, 0.109, 0.219, 0.242, 0.321, 0.391, 0.453, 1.504},
		RangeKey(RangeTPOT, BatchLarge):       {-1.094, -0.717, -0.285, -0.183, -0.096, -0.057, -0.015, 0.014, 0.05, 0.079, 0.099, 0.125, 0.143, 0.163, 0.184, 0.237, 0.262, 0.323, 0.441, 0.448, 0.595},
		RangeKey(RangeThroughput, BatchOne):   {-0.973, -0.456, -0.353, -0.295, -0.233, -0.188, -0.139, -0.095, -0.063, -0.045, -0.02, -0.006, 0.026, 0.043, 0.055, 0.068, 0.089, 0.109, 0.142, 0.156, 0.279},
		RangeKey(RangeThroughput, BatchSmall): {-0.624, -0.456, -0.357, -0.348, -0.303, -0.259, -0.204, -0.156, -0.109, -0.088, -0.059, -0.044, -0.041, -0.007, 0.022, 0.044, 0.054, 0.067, 0.112, 0.149, 0.248},
		RangeKey(RangeThroughput, BatchLarge): {-0.973, -0.426, -0.338, -0.243, -0.211, -0.148, -0.122, -0.087, -0.053, -0.02, -0.008, 0.017, 0.037, 0.051, 0.064, 0.078, 0.101, 0.113, 0.142, 0.157, 0.279},
	},
	SchemeModel: {
		RangeKey(RangeTTFT, BatchOne):         {-0.707, -0.35, -0.228, -0.196, -0.144, -0.109, -0.084, -0.056, -0.022, -0.002, 0.05, 0.12, 0.147, 0.219, 0.271, 0.399, 0.48, 0.728, 0.843, 1.088, 1.725},
		RangeKey(RangeTTFT, BatchSmall):       {-0.422, -0.385, -0.291, -0.225, -0.214, -0.183, -0.144, -0.129, -0.098, -0.059, -0.026, -0.007, 0.126, 0.162, 0.27, 0.321, 0.726, 0.801, 0.914, 1.084, 1.661},
		RangeKey(RangeTTFT, BatchLarge):       {-0.707, -0.217, -0.112, -0.082, -0.039, -0.01, 0.016, 0.046, 0.085, 0.117, 0.136, 0.164, 0.223, 0.242, 0.366, 0.405, 0.417, 0.495, 0.822, 1.216, 1.725},
		RangeKey(RangeTPOT, BatchOne):         {-1.094, -0.18, -0.096, -0.085, -0.075, -0.069, -0.058, -0.05, -0.028, -0.003, 0.032, 0.044, 0.089, 0.103, 0.136, 0.212, 0.244, 0.312, 0.401, 0.448, 1.504},
		RangeKey(RangeTPOT, BatchSmall):       {-0.127, -0.096, -0.09, -0.077, -0.075, -0.067, -0.054, -0.052, -0.05, -0.027, -0.004, 0.032, 0.034, 0.091, 0.099, 0.219, 0.242, 0.321, 0.391, 0.453, 1.504},
		RangeKey(RangeTPOT, BatchLarge):       {-1.094, -0.717, -0.285, -0.183, -0.085, -0.057, -0.02, 0.011, 0.044, 0.079, 0.099, 0.125, 0.143, 0.163, 0.184, 0.237, 0.262, 0.323, 0.441, 0.448, 0.591},
		RangeKey(RangeThroughput, BatchOne):   {-0.973, -0.415, -0.304, -0.236, -0.189, -0.139, -0.097, -0.065, -0.045, -0.024, -0.007, 0.02, 0.042, 0.055, 0.068, 0.087, 0.109, 0.136, 0.149, 0.191, 0.278},
		RangeKey(RangeThroughput, BatchSmall): {-0.624, -0.456, -0.348, -0.276, -0.249, -0.204, -0.151, -0.106, -0.073, -0.059, -0.044, -0.038, -0.006, 0.019, 0.044, 0.056, 0.077, 0.141, 0.163, 0.2, 0.248},
		RangeKey(RangeThroughput, BatchLarge): {-0.973, -0.391, -0.289, -0.225, -0.16, -0.13, -0.092, -0.06, -0.034, -0.013, 0.003, 0.035, 0.048, 0.061, 0.076, 0.094, 0.109, 0.133, 0.147, 0.185, 0.278},
	},
}

// HeldOutLevels are, by scheme and RangeKey, the share of the pooled
// held-out errors a range spans so that it covers HeldOutShare of a group
// it was not computed from: errors within one group are alike, so the
// pooled 80% range of the other groups need not cover 80% of a new
// one's. Each is the least level (in steps of 1%, from 50%) whose
// leave-one-group-out coverage reaches 80%: the inner loop of the nested
// cross-validation, run on every row.
var HeldOutLevels = map[string]map[string]float64{
	SchemePublisher: {
		RangeKey(RangeTTFT, BatchOne):         0.82,
		RangeKey(RangeTTFT, BatchSmall):       0.81,
		RangeKey(RangeTTFT, BatchLarge):       0.72,
		RangeKey(RangeTPOT, BatchOne):         0.85,
		RangeKey(RangeTPOT, BatchSmall):       0.89,
		RangeKey(RangeTPOT, BatchLarge):       0.92,
		RangeKey(RangeThroughput, BatchOne):   0.79,
		RangeKey(RangeThroughput, BatchSmall): 0.86,
		RangeKey(RangeThroughput, BatchLarge): 0.84,
	},
	SchemeGPU: {
		RangeKey(RangeTTFT, BatchOne):         0.93,
		RangeKey(RangeTTFT, BatchSmall):       0.99,
		RangeKey(RangeTTFT, BatchLarge):       0.91,
		RangeKey(RangeTPOT, BatchOne):         0.95,
		RangeKey(RangeTPOT, BatchSmall):       0.99,
		RangeKey(RangeTPOT, BatchLarge):       0.73,
		RangeKey(RangeThroughput, BatchOne):   0.84,
		RangeKey(RangeThroughput, BatchSmall): 0.83,
		RangeKey(RangeThroughput, BatchLarge): 0.83,
	},
	SchemeModel: {
		RangeKey(RangeTTFT, BatchOne):         0.8,
		RangeKey(RangeTTFT, BatchSmall):       0.83,
		RangeKey(RangeTTFT, BatchLarge):       0.82,
		RangeKey(RangeTPOT, BatchOne):         0.84,
		RangeKey(RangeTPOT, BatchSmall):       0.85,
		RangeKey(RangeTPOT, BatchLarge):       0.95,
		RangeKey(RangeThroughput, BatchOne):   0.81,
		RangeKey(RangeThroughput, BatchSmall): 0.97,
		RangeKey(RangeThroughput, BatchLarge): 0.81,
	},
}

// ValidatedGPUs are the GPU presets (by name) at least one scored
// validation source ran on; a prediction on another GPU gets the
// leave-one-GPU-out range.
var ValidatedGPUs = []string{"A100-40GB", "A100-80GB", "H100-SXM", "H200", "L4", "L40S", "MI300X", "RTX4090"}

// ValidatedModels are the models (preset names, or the name a row's
// model ran under where it is none) at least one scored validation source
// ran; a prediction of another gets the leave-one-model-out range.
var ValidatedModels = []string{"CodeLlama-34B", "DBRX", "DeepSeek-V3", "Llama-2-70B", "Llama-2-7B", "Llama-3.1-405B-FP8", "Llama-3.1-70B", "Llama-3.1-70B-FP8", "Llama-3.1-8B", "Llama-3.1-8B-FP8", "Llama-3.3-70B", "Mistral-7B", "Mixtral-8x7B", "Phi-3.5-mini", "Qwen2.5-0.5B", "Qwen2.5-72B", "Qwen2.5-7B", "Qwen2.5-Coder-7B", "Qwen3-0.6B", "Qwen3-14B", "Qwen3-235B-A22B", "Qwen3-32B", "Qwen3-8B", "gpt-oss-120b"}

// Domain is what a prediction is about, as far as its range depends on
// it: the GPU it runs on (a preset name; "" leaves the range as for a
// validated one).
type Domain struct {
	GPU string
	// Model is the model's name ("" leaves the range as for a validated
	// one).
	Model string
	// InFlight is the prediction's mean requests in flight (its batch
	// class, BatchClassOf).
	InFlight float64
}

// DomainOf is the domain of a simulated run of model on gpu (preset
// names) by
// replicas engines that completed throughputRPS requests a second with a
// mean latency of meanMS: its mean requests in flight a replica are
// their product (Little's law).
func DomainOf(gpu, model string, throughputRPS, meanMS float64, replicas int) Domain {
	return Domain{GPU: gpu, Model: model, InFlight: throughputRPS * meanMS / 1000 / float64(max(replicas, 1))}
}

// Widened says why a prediction in d gets a wider range than the
// baseline (empty: it does not): its GPU, its model or both have no
// validated source.
func (d Domain) Widened() []string {
	var w []string
	if d.newGPU() {
		w = append(w, fmt.Sprintf("no source on %s: range widened to the errors on GPUs left out", d.GPU))
	}
	if d.newModel() {
		w = append(w, fmt.Sprintf("no source on %s: range widened to the errors on models left out", d.Model))
	}
	return w
}

func (d Domain) newGPU() bool   { return d.GPU != "" && !slices.Contains(ValidatedGPUs, d.GPU) }
func (d Domain) newModel() bool { return d.Model != "" && !slices.Contains(ValidatedModels, d.Model) }

// HeldOutRangeAt is a scheme's range covering share (0-1) of its pooled
// held-out errors of a metric, centred on their median: from the
// (1−share)/2 quantile to the (1+share)/2 one. share 0 gives the median's
// factor twice.
func HeldOutRangeAt(scheme, key string, share float64) HeldOutRange {
	q := HeldOutLogQuantiles[scheme][key]
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
// *_throughput…) on a validated GPU at a small batch, and whether knee
// keeps one for it.
func RangeFor(metric string) (HeldOutRange, bool) {
	return RangeForAt(metric, HeldOutShare)
}

// RangeForAt is RangeFor for another share.
func RangeForAt(metric string, share float64) (HeldOutRange, bool) {
	return RangeIn(metric, share, Domain{})
}

// levelFor is the pooled share to span for a range meant to cover share
// of a new group's errors: the calibrated level for HeldOutShare, scaled
// alike for other shares (only HeldOutShare's is calibrated).
func levelFor(scheme, key string, share float64) float64 {
	return min(share*HeldOutLevels[scheme][key]/HeldOutShare, 1)
}

// rangeOf is one scheme's range of one of the three kept metrics in a
// batch class.
func rangeOf(scheme, metric, class string, share float64) HeldOutRange {
	key := RangeKey(metric, class)
	return HeldOutRangeAt(scheme, key, levelFor(scheme, key, share))
}

// RangeIn is the range of a metric (as RangeFor names it) covering share
// of held-out errors for a prediction in domain d: the leave-one-
// publisher-out range of d's batch class, reaching on each side as far
// as the leave-one-GPU-out one where d's GPU has no validated source, and
// as the leave-one-model-out one where its model has none
// (Domain.Widened says so). E2E is TTFT plus the decode; it takes the wider bound of the two
// on each side, a bound and not a quantile of its own.
func RangeIn(metric string, share float64, d Domain) (HeldOutRange, bool) {
	var kept []string
	switch metric {
	case "ttft_ms", "ttft_sched_ms", "ttft":
		kept = []string{RangeTTFT}
	case "tpot_ms", "itl_ms", "tpot", "itl":
		kept = []string{RangeTPOT}
	case "e2e_ms", "e2e":
		kept = []string{RangeTTFT, RangeTPOT}
	case "request_throughput_rps", "output_token_throughput_tps", "input_token_throughput_tps", "total_token_throughput_tps",
		"goodput_rps", "throughput", "request_throughput", "output_throughput":
		kept = []string{RangeThroughput}
	default:
		return HeldOutRange{}, false
	}
	schemes := []string{SchemePublisher}
	if d.newGPU() {
		schemes = append(schemes, SchemeGPU)
	}
	if d.newModel() {
		schemes = append(schemes, SchemeModel)
	}
	r := HeldOutRange{Low: math.Inf(1), High: math.Inf(-1)}
	for _, s := range schemes {
		for _, m := range kept {
			r = r.wider(rangeOf(s, m, BatchClassOf(d.InFlight), share))
		}
	}
	return r, true
}

// RangeBasis says what a range means, for reports.
func RangeBasis() string {
	return fmt.Sprintf("on hosts knee has not seen, %.0f%% of held-out errors (publishers left out): docs/validation.md", HeldOutShare*100)
}

// RangeBasisIn is RangeBasis for a prediction in d, with why its range
// was widened.
func RangeBasisIn(d Domain) string {
	if w := d.Widened(); len(w) > 0 {
		return RangeBasis() + "; " + strings.Join(w, "; ")
	}
	return RangeBasis()
}
