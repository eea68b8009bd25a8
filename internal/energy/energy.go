// Package energy turns what a run's GPUs spent into the figures reports
// show: energy, average power per GPU, joules per output token and per
// request, output tokens per joule and, with a GPU-hour price, dollars per
// million output tokens. The energy itself comes from elsewhere: the
// simulator's power model (simengine/power.go) or the GPUs' own telemetry
// (scrape's dcgm-exporter reader). Figures says which.
package energy

import (
	"fmt"
	"math"
	"strconv"
)

// Where a run's energy came from (Figures.Source).
const (
	// SourceModel: the simulator's power model over its own steps.
	SourceModel = "power model"
	// SourceCounter: the deltas of DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION.
	SourceCounter = "energy counter"
	// SourcePowerIntegral: DCGM_FI_DEV_POWER_USAGE integrated over the
	// scrapes (trapezoids), for GPUs without the energy counter.
	SourcePowerIntegral = "power integral"
	// SourceMixed: some GPUs by their counter, others by their power.
	SourceMixed = "energy counter and power integral"
)

// Figures are a run's energy figures (summary.json "energy").
type Figures struct {
	Source string `json:"source"`
	GPUs   int    `json:"gpus"`
	// SpanS is the time the energy covers, s (the whole run, warm-up
	// included: GPUs draw power whether or not a request is measured).
	SpanS   float64 `json:"span_s"`
	EnergyJ float64 `json:"energy_j"`
	// AvgPowerWPerGPU is EnergyJ / SpanS / GPUs.
	AvgPowerWPerGPU float64 `json:"avg_power_w_per_gpu"`
	// OutputTokens and Requests are what the GPUs produced in the span.
	OutputTokens     int64    `json:"output_tokens"`
	Requests         int64    `json:"requests"`
	JPerOutputToken  *float64 `json:"j_per_output_token,omitempty"`
	OutputTokensPerJ *float64 `json:"output_tokens_per_j,omitempty"`
	JPerRequest      *float64 `json:"j_per_request,omitempty"`
	// GPUPriceUSDPerHour is what one GPU-hour costs (--gpu-price); with it
	// USDPerMOutputTokens is GPUs × SpanS of GPU time per million output
	// tokens (the GPUs' rental, not their electricity).
	GPUPriceUSDPerHour  float64  `json:"gpu_price_usd_per_hour,omitempty"`
	USDPerMOutputTokens *float64 `json:"usd_per_m_output_tokens,omitempty"`
	// Estimate says the figures are a model's (the power model's), not
	// measured.
	Estimate bool `json:"estimate,omitempty"`
	// Ranges are an estimate's ranges (WithRanges; nil: measured, or none
	// given).
	Ranges *Ranges `json:"ranges,omitempty"`
}

// New computes the figures; nil when there is no energy to speak of (no
// GPUs, no span or no energy).
func New(source string, gpus int, spanS, energyJ float64, outputTokens, requests int64, gpuPriceUSDPerHour float64) *Figures {
	if gpus <= 0 || !(spanS > 0) || !(energyJ > 0) || math.IsInf(energyJ, 0) {
		return nil
	}
	f := &Figures{Source: source, GPUs: gpus, SpanS: spanS, EnergyJ: energyJ, AvgPowerWPerGPU: energyJ / spanS / float64(gpus),
		OutputTokens: outputTokens, Requests: requests, Estimate: source == SourceModel}
	if outputTokens > 0 {
		f.JPerOutputToken = ptr(energyJ / float64(outputTokens))
		f.OutputTokensPerJ = ptr(float64(outputTokens) / energyJ)
	}
	if requests > 0 {
		f.JPerRequest = ptr(energyJ / float64(requests))
	}
	if gpuPriceUSDPerHour > 0 {
		f.GPUPriceUSDPerHour = gpuPriceUSDPerHour
		if outputTokens > 0 {
			f.USDPerMOutputTokens = ptr(gpuPriceUSDPerHour * float64(gpus) * spanS / 3600 / float64(outputTokens) * 1e6)
		}
	}
	return f
}

func ptr(v float64) *float64 { return &v }

// Lines are the figures as a report's key/value lines.
func (f *Figures) Lines() [][2]string {
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	src := f.Source
	r := f.Ranges
	if r == nil {
		r = &Ranges{}
	}
	switch {
	case f.Ranges != nil:
		src += fmt.Sprintf(" (an estimate with %.0f%% ranges; %s)", 100*f.Ranges.Share, f.Ranges.Basis)
	case f.Estimate:
		src += " (an estimate, without a range)"
	}
	add("energy", fmt.Sprintf("%s J over %s s on %d GPU(s), from the %s", num(f.EnergyJ, 1), num(f.SpanS, 2), f.GPUs, src))
	var power *Range
	if f.Ranges != nil {
		power = &f.Ranges.AvgPowerWPerGPU
	}
	add("average power", num(f.AvgPowerWPerGPU, 1)+" W per GPU"+rangeText(power, 0)+unitIf(power, " W"))
	if f.JPerOutputToken != nil {
		add("energy per output token", fmt.Sprintf("%s J%s%s (%s output tokens per J%s; %d tokens)", num(*f.JPerOutputToken, 4), rangeText(r.JPerOutputToken, 4), unitIf(r.JPerOutputToken, " J"),
			num(*f.OutputTokensPerJ, 3), rangeText(r.OutputTokensPerJ, 3), f.OutputTokens))
	}
	if f.JPerRequest != nil {
		add("energy per request", fmt.Sprintf("%s J (%d requests)", num(*f.JPerRequest, 2), f.Requests))
	}
	if f.USDPerMOutputTokens != nil {
		usd := ""
		if u := r.USDPerMOutputTokens; u != nil {
			usd = "; $" + num(u.Low, 3) + "–$" + num(u.High, 3)
		}
		add("cost per million output tokens", fmt.Sprintf("$%s%s (at $%s per GPU-hour)", num(*f.USDPerMOutputTokens, 3), usd, num(f.GPUPriceUSDPerHour, 2)))
	}
	return out
}

// unitIf is unit after a range, "" without one.
func unitIf(r *Range, unit string) string {
	if r == nil {
		return ""
	}
	return unit
}

// Glance is the figures on one line, for a report's first screen.
func (f *Figures) Glance() string {
	r := f.Ranges
	if r == nil {
		r = &Ranges{}
	}
	s := num(f.AvgPowerWPerGPU, 0) + " W per GPU"
	if f.Ranges != nil {
		s += " (" + num(r.AvgPowerWPerGPU.Low, 0) + "–" + num(r.AvgPowerWPerGPU.High, 0) + ")"
	}
	if f.JPerOutputToken != nil {
		j := num(*f.JPerOutputToken, 3) + " J per output token"
		if r.JPerOutputToken != nil {
			j += " (" + num(r.JPerOutputToken.Low, 3) + "–" + num(r.JPerOutputToken.High, 3) + ")"
		}
		s = j + " · " + num(*f.OutputTokensPerJ, 2) + " tok/J · " + s
	}
	if f.USDPerMOutputTokens != nil {
		s += " · $" + num(*f.USDPerMOutputTokens, 3) + " per M output tokens"
		if u := r.USDPerMOutputTokens; u != nil {
			s += " ($" + num(u.Low, 3) + "–$" + num(u.High, 3) + ")"
		}
	}
	switch {
	case f.Ranges != nil:
		s += fmt.Sprintf(" (power model; %.0f%% ranges)", 100*f.Ranges.Share)
	case f.Estimate:
		s += " (power model, no range)"
	default:
		s += " (" + f.Source + ")"
	}
	return s
}

func num(v float64, d int) string { return strconv.FormatFloat(v, 'f', d, 64) }
