package calibrate

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/serverprofile"
	"github.com/knee-dev/knee/internal/simengine"
)

// Profile is what knee calibrate writes and knee sim / knee serve load
// (--profile): the preset names the fit was made against and the fitted
// cost constants. The other fields say how good the fit was; loading
// ignores them.
type Profile struct {
	GPU   string      `yaml:"gpu" json:"gpu"`
	Model string      `yaml:"model" json:"model"`
	TP    int         `yaml:"tp" json:"tp"`
	Cost  ProfileCost `yaml:"cost" json:"cost"`
	// MaxNumSeqs is the server's parallel slots (a linear profile's): knee
	// sim and serve run at most this many requests at once unless
	// --max-num-seqs says otherwise.
	MaxNumSeqs int `yaml:"max_num_seqs,omitempty" json:"max_num_seqs,omitempty"`

	Target    string    `yaml:"target,omitempty" json:"target,omitempty"`
	Created   time.Time `yaml:"created,omitempty" json:"created,omitempty"`
	FitPoints int       `yaml:"fit_points,omitempty" json:"fit_points,omitempty"`
	// FitRMSRelError is the fit's root-mean-square relative error; the
	// HoldOut* fields the prediction errors on the held-out step.
	FitRMSRelError       float64 `yaml:"fit_rms_rel_error,omitempty" json:"fit_rms_rel_error,omitempty"`
	HoldOutTTFTError     float64 `yaml:"holdout_ttft_p50_rel_error,omitempty" json:"holdout_ttft_p50_rel_error,omitempty"`
	HoldOutTPOTError     float64 `yaml:"holdout_tpot_p50_rel_error,omitempty" json:"holdout_tpot_p50_rel_error,omitempty"`
	HoldOutThroughputErr float64 `yaml:"holdout_throughput_rel_error,omitempty" json:"holdout_throughput_rel_error,omitempty"`
	Note                 string  `yaml:"note,omitempty" json:"note,omitempty"`
}

// ProfileCost is simengine.CostParams's fitted fields in readable units.
type ProfileCost struct {
	// (Left out of a linear profile, which has no roofline.)
	StepOverheadMS    float64 `yaml:"step_overhead_ms,omitempty" json:"step_overhead_ms,omitempty"`
	StepPerSeqUS      float64 `yaml:"step_per_seq_us,omitempty" json:"step_per_seq_us,omitempty"`
	MemEfficiency     float64 `yaml:"mem_efficiency,omitempty" json:"mem_efficiency,omitempty"`
	ComputeEfficiency float64 `yaml:"compute_efficiency,omitempty" json:"compute_efficiency,omitempty"`
	// FrontEndMS is the request overhead the fit found in TTFT (HTTP,
	// tokenization, hand-off to the engine): the simulator's front-end cost.
	FrontEndMS float64 `yaml:"front_end_ms,omitempty" json:"front_end_ms,omitempty"`
	// Linear, when present, is the empirical step model that replaces the
	// roofline (knee calibrate --step-model linear); the efficiencies and
	// step overhead are then unused, and gpu and model only size memory.
	Linear *ProfileLinear `yaml:"linear,omitempty" json:"linear,omitempty"`
	// StepTimeCV is the measured spread of step times (coefficient of
	// variation), which knee sim and serve reproduce step by step.
	StepTimeCV float64 `yaml:"step_time_cv,omitempty" json:"step_time_cv,omitempty"`
	// FrontEndRateInSteps is how fast the front end's work proceeds while
	// the engine runs a step (1: cores of its own; simengine.CostParams).
	FrontEndRateInSteps float64 `yaml:"front_end_rate_in_steps,omitempty" json:"front_end_rate_in_steps,omitempty"`
}

// ProfileLinear is simengine.LinearStepCost in readable units.
type ProfileLinear struct {
	BaseMS             float64 `yaml:"step_base_ms" json:"step_base_ms"`
	PerPrefillTokenUS  float64 `yaml:"per_prompt_token_us" json:"per_prompt_token_us"`
	PerDecodeSeqMS     float64 `yaml:"per_decoding_seq_ms" json:"per_decoding_seq_ms"`
	PerAttentionPairNS float64 `yaml:"per_attention_pair_ns" json:"per_attention_pair_ns"`
	// PromptCurve is the measured time of a lone prompt's step (without
	// attention) against its length; it prices the prompt tokens of a step
	// (simengine.LinearStepCost.PromptCurve).
	PromptCurve []ProfileCurvePoint `yaml:"prompt_curve,omitempty" json:"prompt_curve,omitempty"`
	// DecodeCurve is the measured time of a decode step (without
	// attention) against its decoding sequences, its points' tokens; it
	// prices decode-only steps (simengine.LinearStepCost.DecodeCurve).
	DecodeCurve []ProfileCurvePoint `yaml:"decode_curve,omitempty" json:"decode_curve,omitempty"`
}

// ProfileCurvePoint is simengine.CurvePoint in milliseconds.
type ProfileCurvePoint struct {
	Tokens int64   `yaml:"tokens" json:"tokens"`
	MS     float64 `yaml:"ms" json:"ms"`
}

func linearMS(l simengine.LinearStepCost) *ProfileLinear {
	p := &ProfileLinear{BaseMS: round(l.BaseNS/1e6, 1e4), PerPrefillTokenUS: round(l.PerPrefillTokenNS/1e3, 1e4),
		PerDecodeSeqMS: round(l.PerDecodeSeqNS/1e6, 1e4), PerAttentionPairNS: round(l.PerAttentionPairNS, 1e4)}
	p.PromptCurve = curveMS(l.PromptCurve)
	p.DecodeCurve = curveMS(l.DecodeCurve)
	return p
}

func curveMS(c []simengine.CurvePoint) []ProfileCurvePoint {
	var out []ProfileCurvePoint
	for _, p := range c {
		out = append(out, ProfileCurvePoint{Tokens: p.Tokens, MS: round(p.NS/1e6, 1e4)})
	}
	return out
}

func curveNS(c []ProfileCurvePoint) []simengine.CurvePoint {
	var out []simengine.CurvePoint
	for _, p := range c {
		out = append(out, simengine.CurvePoint{Tokens: p.Tokens, NS: p.MS * 1e6})
	}
	return out
}

func (l *ProfileLinear) stepCost() *simengine.LinearStepCost {
	c := &simengine.LinearStepCost{BaseNS: l.BaseMS * 1e6, PerPrefillTokenNS: l.PerPrefillTokenUS * 1e3,
		PerDecodeSeqNS: l.PerDecodeSeqMS * 1e6, PerAttentionPairNS: l.PerAttentionPairNS}
	c.PromptCurve = curveNS(l.PromptCurve)
	c.DecodeCurve = curveNS(l.DecodeCurve)
	return c
}

// NewProfile describes a calibration of ec's hardware and model.
func NewProfile(ec simengine.Config, target string, res *Result) Profile {
	p := Profile{
		GPU: ec.GPU.Name, Model: ec.Model.Name, TP: max(ec.TP, 1),
		Cost: ProfileCost{StepOverheadMS: round(res.Fit.StepOverheadMS, 1e3), StepPerSeqUS: round(res.Fit.StepPerSeqUS, 1e1), MemEfficiency: res.Fit.MemEfficiency, ComputeEfficiency: res.Fit.ComputeEfficiency,
			FrontEndMS: round(max(res.Fit.RequestOverheadMS, 0), 1e3)},
		Target:    target,
		Created:   time.Now().UTC().Truncate(time.Second),
		FitPoints: len(res.Points), FitRMSRelError: round(res.Fit.RMSRelError, 1e4),
		HoldOutTTFTError: round(res.HoldOut.TTFTError, 1e4), HoldOutTPOTError: round(res.HoldOut.TPOTError, 1e4), HoldOutThroughputErr: round(res.HoldOut.ThroughputError, 1e4),
	}
	if res.Fit.Linear != nil {
		p.Cost.Linear = res.Fit.Linear
		p.Cost.StepTimeCV = res.Fit.StepTimeCV
		p.Cost.FrontEndRateInSteps = res.Fit.FrontEndRateInSteps
		p.MaxNumSeqs = ec.MaxNumSeqs
	}
	if res.Fit.Undetermined != "" {
		p.Note = "not determined by the measurements, kept at the default: " + res.Fit.Undetermined
	}
	return p
}

func round(v, scale float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*scale) / scale
}

// CostParams is the profile's cost over def (the fields it does not fit).
func (p Profile) CostParams(def simengine.CostParams) simengine.CostParams {
	c := def
	// The profile's request overhead is this host's whole front end as
	// calibrate measured it: none of the defaults' serial admission (which
	// stands for hosts knee has not seen) is added to it.
	c.FrontEndNS, c.FrontEndPerTokenNS, c.FrontEndSerialNS, c.FrontEndSerialSplit = int64(p.Cost.FrontEndMS*1e6), 0, 0, 0
	c.StepTimeCV, c.FrontEndRateInSteps = p.Cost.StepTimeCV, p.Cost.FrontEndRateInSteps
	if p.Cost.Linear != nil {
		c.Linear = p.Cost.Linear.stepCost()
		return c
	}
	c.StepOverheadNS = int64(p.Cost.StepOverheadMS * 1e6)
	c.StepPerSeqNS = int64(p.Cost.StepPerSeqUS * 1e3)
	c.MemEfficiency, c.ComputeEfficiency = p.Cost.MemEfficiency, p.Cost.ComputeEfficiency
	// The fit priced KV reads at the default ratio to the weights' memory
	// efficiency (simengine.StepCostTerms), and its request overhead
	// already holds the tokenizer's time.
	c.KVMemEfficiency = c.MemEfficiency * simengine.KVToWeightEfficiency()
	return c
}

// Write writes the profile as YAML.
func (p Profile) Write(w io.Writer) error {
	return serverprofile.WriteYAML(w, "knee calibrate profile: load with knee sim --profile FILE or knee serve --profile FILE", p)
}

// maxProfileBytes bounds a profile file: a profile is a few hundred bytes.
const maxProfileBytes = 1 << 20

// LoadProfile reads a profile and checks it, naming what is wrong.
func LoadProfile(path string) (Profile, error) {
	data, err := badinput.ReadFile(path, maxProfileBytes, "a profile written by knee calibrate")
	if err != nil {
		return Profile{}, err
	}
	var p Profile
	if err := serverprofile.DecodeYAML(path, data, &p, "a profile written by knee calibrate"); err != nil {
		return Profile{}, err
	}
	switch {
	case p.GPU == "" || p.Model == "":
		return Profile{}, fmt.Errorf("%s: gpu and model are required (the presets the profile was fitted against)", path)
	case p.TP < 1:
		return Profile{}, fmt.Errorf("%s: tp %d: want 1 or more", path, p.TP)
	case p.MaxNumSeqs < 0:
		return Profile{}, fmt.Errorf("%s: max_num_seqs %d: want 1 or more (the server's parallel slots), or leave it out", path, p.MaxNumSeqs)
	case !(p.Cost.StepTimeCV >= 0 && p.Cost.StepTimeCV <= 3):
		return Profile{}, fmt.Errorf("%s: cost.step_time_cv %v: want a coefficient of variation from 0 to 3", path, p.Cost.StepTimeCV)
	case !(p.Cost.FrontEndRateInSteps >= 0 && p.Cost.FrontEndRateInSteps <= 1):
		return Profile{}, fmt.Errorf("%s: cost.front_end_rate_in_steps %v: want a fraction from 0 to 1 (0 or 1: the front end has cores of its own)", path, p.Cost.FrontEndRateInSteps)
	case p.Cost.Linear != nil:
		l := p.Cost.Linear
		for _, v := range []struct {
			name string
			v    float64
		}{{"step_base_ms", l.BaseMS}, {"per_prompt_token_us", l.PerPrefillTokenUS}, {"per_decoding_seq_ms", l.PerDecodeSeqMS}, {"per_attention_pair_ns", l.PerAttentionPairNS}} {
			if !(v.v >= 0) || math.IsInf(v.v, 0) {
				return Profile{}, fmt.Errorf("%s: cost.linear.%s %v: want 0 or more", path, v.name, v.v)
			}
		}
		for _, curve := range []struct {
			name string
			c    []ProfileCurvePoint
		}{{"prompt_curve", l.PromptCurve}, {"decode_curve", l.DecodeCurve}} {
			for i, c := range curve.c {
				if c.Tokens < 1 || !(c.MS >= 0) || math.IsInf(c.MS, 0) || i > 0 && (c.Tokens <= curve.c[i-1].Tokens || c.MS < curve.c[i-1].MS) {
					return Profile{}, fmt.Errorf("%s: cost.linear.%s[%d] {tokens: %d, ms: %v}: want tokens of 1 or more and ms of 0 or more, both rising from point to point", path, curve.name, i, c.Tokens, c.MS)
				}
			}
		}
		if l.BaseMS+l.PerDecodeSeqMS <= 0 {
			return Profile{}, fmt.Errorf("%s: cost.linear: step_base_ms and per_decoding_seq_ms are both 0: a decode step would take no time", path)
		}
		return p, nil
	case !(p.Cost.StepOverheadMS >= 0):
		return Profile{}, fmt.Errorf("%s: cost.step_overhead_ms %v: want 0 or more", path, p.Cost.StepOverheadMS)
	case !(p.Cost.StepPerSeqUS >= 0):
		return Profile{}, fmt.Errorf("%s: cost.step_per_seq_us %v: want 0 or more", path, p.Cost.StepPerSeqUS)
	case !(p.Cost.MemEfficiency > 0 && p.Cost.MemEfficiency <= 1):
		return Profile{}, fmt.Errorf("%s: cost.mem_efficiency %v: want a fraction in (0, 1]", path, p.Cost.MemEfficiency)
	case !(p.Cost.ComputeEfficiency > 0 && p.Cost.ComputeEfficiency <= 1):
		return Profile{}, fmt.Errorf("%s: cost.compute_efficiency %v: want a fraction in (0, 1]", path, p.Cost.ComputeEfficiency)
	}
	return p, nil
}
