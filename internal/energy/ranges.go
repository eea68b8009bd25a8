package energy

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// HeldOutJPerTokenLogRatios are log(measured / predicted) of energy per
// output token over the energy validation's published rows (docs/energy.md,
// internal/energy/testdata/published.json), sorted. Every prediction is
// held out: the power model has no constant fitted to any row.
// TestEnergyValidation computes them and fails when these differ.
var HeldOutJPerTokenLogRatios = []float64{-0.1593, -0.0576, -0.0442, 0.1698, 0.2184, 0.2369, 0.7477}

// HeldOutLevel is the share of those errors a range spans so that it
// covers RangeShare of a source it was not computed from, as the latency
// ranges' levels are chosen (simengine.HeldOutLevels): the least level, in
// steps of 1% from 50%, whose leave-one-source-out coverage reaches
// RangeShare, or where none does, the least with the highest coverage.
// HeldOutCoverage is that coverage. TestEnergyValidation computes both.
const (
	HeldOutLevel    = 0.98
	HeldOutCoverage = 5.0 / 7
)

// EnergyValidatedGPUs are the GPU presets a published energy row ran on;
// a prediction on another says so beside its range.
var EnergyValidatedGPUs = []string{"B200", "H100-SXM"}

// RangeShare is the share of the held-out errors a printed range spans,
// as the latency figures' ranges do (simengine.HeldOutShare).
const RangeShare = 0.8

// Range is a predicted figure's range: the truth has been within Low..High
// for RangeShare of the held-out errors.
type Range struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Ranges are a power-model estimate's ranges (Figures.Ranges).
type Ranges struct {
	Share float64 `json:"share"`
	// Basis says what the ranges come from, and where they are not
	// validated.
	Basis            string `json:"basis"`
	JPerOutputToken  *Range `json:"j_per_output_token,omitempty"`
	OutputTokensPerJ *Range `json:"output_tokens_per_j,omitempty"`
	AvgPowerWPerGPU  Range  `json:"avg_power_w_per_gpu"`
	// USDPerMOutputTokens is GPU time per token, so its range is the
	// output throughput's (none where the throughput has none).
	USDPerMOutputTokens *Range `json:"usd_per_m_output_tokens,omitempty"`
}

// JPerTokenFactors are the factors of a prediction of energy per output
// token within which the truth has been for share of the held-out errors:
// the (1−share)/2 and (1+share)/2 quantiles of the log ratios (linear
// between order statistics), so they are asymmetric where the errors are.
func JPerTokenFactors(share float64) (low, high float64) {
	return math.Exp(Quantile(HeldOutJPerTokenLogRatios, (1-share)/2)), math.Exp(Quantile(HeldOutJPerTokenLogRatios, (1+share)/2))
}

// Quantile of sorted xs at p (0..1), linear between order statistics.
func Quantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	h := p * float64(len(xs)-1)
	i := int(math.Floor(h))
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}

// WithRanges gives a power-model estimate its ranges. Energy per output
// token takes the held-out energy errors' range. The dollars per million
// output tokens are GPU time per token, so they take the output
// throughput's held-out range inverted (tputLow, tputHigh: the factors of
// the throughput's range; tputOK false: it has none). Average power is
// energy per token times throughput; the published rows measure the first,
// so the power model's own error is not told apart from the step-time
// model's and its range multiplies the two ranges' bounds (wider than
// either), up to tdpW (the GPU's board power limit; 0: none), which a GPU
// does not exceed on average. gpu is the run's GPU preset name. Measured
// figures get none.
func (f *Figures) WithRanges(tputLow, tputHigh float64, tputOK bool, gpu string, tdpW float64) {
	if f == nil || f.Source != SourceModel {
		return
	}
	jl, jh := JPerTokenFactors(HeldOutLevel)
	r := &Ranges{Share: RangeShare}
	basis := []string{fmt.Sprintf("energy per token: the power model's held-out errors on published measurements, which covered %.0f%% of a source left out (docs/energy.md)", 100*HeldOutCoverage)}
	if !slices.Contains(EnergyValidatedGPUs, gpu) {
		basis = append(basis, "no published energy measurement on "+gpu+": its range is the other GPUs'")
	}
	if f.JPerOutputToken != nil {
		r.JPerOutputToken = &Range{*f.JPerOutputToken * jl, *f.JPerOutputToken * jh}
		r.OutputTokensPerJ = &Range{*f.OutputTokensPerJ / jh, *f.OutputTokensPerJ / jl}
	}
	pl, ph := jl, jh
	if tputOK {
		pl, ph = jl*tputLow, jh*tputHigh
		if f.USDPerMOutputTokens != nil {
			r.USDPerMOutputTokens = &Range{*f.USDPerMOutputTokens / tputHigh, *f.USDPerMOutputTokens / tputLow}
		}
		basis = append(basis, "power and $ per token also the output throughput's")
	} else {
		basis = append(basis, "power: energy per token's alone (the throughput has no range here)")
	}
	r.AvgPowerWPerGPU = Range{f.AvgPowerWPerGPU * pl, f.AvgPowerWPerGPU * ph}
	if tdpW > 0 && r.AvgPowerWPerGPU.High > tdpW {
		r.AvgPowerWPerGPU.High = max(tdpW, f.AvgPowerWPerGPU)
		basis = append(basis, "power at most the TDP")
	}
	r.Basis = strings.Join(basis, "; ")
	f.Ranges = r
}

// rangeText is " (low–high)" for a range, "" for none.
func rangeText(r *Range, d int) string {
	if r == nil {
		return ""
	}
	return "; " + num(r.Low, d) + "–" + num(r.High, d)
}
