// Package serverprofile names the kind of server a simulation models: the
// engine family and version, and the host's constants (API-server costs,
// step overheads, efficiencies) that are properties of a measured host,
// not of its GPU or model. Built-in profiles are knee's engine-family
// defaults and the hosts of the validation table (docs/validation.md);
// more load from YAML (Load) and are written by Write.
//
// A profile replaces the constants it names and keeps the defaults'
// (simengine.DefaultCost) for the rest, so a profile written today keeps
// meaning the same host when the defaults are refitted only for the
// fields it leaves out; the built-in host profiles therefore name every
// constant they were fitted with.
package serverprofile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// Engine families.
const (
	FamilyVLLM   = "vllm"
	FamilySGLang = "sglang"
	FamilyTRTLLM = "tensorrt-llm"
	FamilyOther  = "other"
)

// Profile is one kind of server. An absent (nil) constant keeps the
// defaults'; a given one, zero included, replaces it.
type Profile struct {
	Name        string `yaml:"name"`
	Engine      string `yaml:"engine"`  // vllm, sglang, tensorrt-llm, other
	Version     string `yaml:"version"` // e.g. 0.19, 0.11, v1.0; free text
	Description string `yaml:"description,omitempty"`
	// Source says where the constants come from (a fit, a page).
	Source string `yaml:"source,omitempty"`

	// Host constants (simengine.CostParams' fields, in readable units).
	StepOverheadMS    *float64 `yaml:"step_overhead_ms,omitempty"`
	StepPerSeqUS      *float64 `yaml:"step_per_seq_us,omitempty"`
	ComputeEfficiency *float64 `yaml:"compute_efficiency,omitempty"`
	// KVMemEfficiency: 0 reads the KV cache at the weights' efficiency.
	KVMemEfficiency     *float64 `yaml:"kv_mem_efficiency,omitempty"`
	AllReduceEfficiency *float64 `yaml:"all_reduce_efficiency,omitempty"`
	// AllReducePerPeerUS is the all-reduce latency per GPU beyond the
	// first (simengine.CostParams.AllReducePerPeerNS).
	AllReducePerPeerUS *float64 `yaml:"all_reduce_per_peer_us,omitempty"`
	// ExpertSmallBatchEfficiency is a mixture of experts' expert-read
	// efficiency at one token an expert, relative to the dense layers'
	// (simengine.CostParams.ExpertSmallBatchEfficiency; 1: none).
	ExpertSmallBatchEfficiency *float64 `yaml:"expert_small_batch_efficiency,omitempty"`
	// ExpertComputeEfficiency is the share of the dense layers' compute
	// rate a mixture of experts' expert GEMMs reach
	// (simengine.CostParams.ExpertComputeEfficiency; 1: none).
	ExpertComputeEfficiency *float64 `yaml:"expert_compute_efficiency,omitempty"`
	FrontEndMS              *float64 `yaml:"front_end_ms,omitempty"`
	FrontEndSerialMS        *float64 `yaml:"front_end_serial_ms,omitempty"`
	FrontEndSerialSplit     *float64 `yaml:"front_end_serial_split,omitempty"`
	FrontEndLoadMS          *float64 `yaml:"front_end_load_ms_per_ktok_s,omitempty"`
	// NoFrontEnd: an offline engine or a profiled step (no API server).
	NoFrontEnd bool `yaml:"no_front_end,omitempty"`

	// Scheduling that differs from vLLM V1's.
	NoChunkedPrefill  bool `yaml:"no_chunked_prefill,omitempty"`
	NoAsyncScheduling bool `yaml:"no_async_scheduling,omitempty"`
	// SeparatePrefill: prompt work and decodes in separate steps, prompt
	// work first (simengine.Config.SeparatePrefill; SGLang's default).
	SeparatePrefill bool `yaml:"separate_prefill,omitempty"`
	// RunningCapFromKV: the running-request cap, when not given, from the
	// KV cache (simengine.Config.RunningCapFromKV; SGLang's default).
	RunningCapFromKV bool `yaml:"running_cap_from_kv,omitempty"`
	// RefuseLongPrompts: without chunked prefill, a prompt over the step's
	// token budget is refused, not the engine's start
	// (simengine.Config.RefuseLongPrompts; TensorRT-LLM's behaviour).
	RefuseLongPrompts bool `yaml:"refuse_long_prompts,omitempty"`
	// MinBatchedTokens raises the step's token budget to at least this
	// (an engine without chunked prefill holds a whole prompt in a step).
	MinBatchedTokens int `yaml:"min_batched_tokens,omitempty"`
	// SamplerWarmupBytesPerLogit charges that run's peak against the KV
	// cache (simengine.CostParams.SamplerWarmupBytesPerLogit; 31 is what
	// vLLM's code holds, simengine.VLLMSamplerWarmupBytesPerLogit; the
	// defaults charge none).
	SamplerWarmupBytesPerLogit *float64 `yaml:"sampler_warmup_bytes_per_logit,omitempty"`
}

// Cost is base with the profile's constants in place.
func (p Profile) Cost(base simengine.CostParams) simengine.CostParams {
	c := base
	setNS := func(v *float64, dst *int64, scale float64) {
		if v != nil {
			*dst = int64(*v * scale)
		}
	}
	setF := func(v *float64, dst *float64) {
		if v != nil {
			*dst = *v
		}
	}
	setNS(p.StepOverheadMS, &c.StepOverheadNS, 1e6)
	setNS(p.StepPerSeqUS, &c.StepPerSeqNS, 1e3)
	setNS(p.FrontEndMS, &c.FrontEndNS, 1e6)
	setNS(p.FrontEndSerialMS, &c.FrontEndSerialNS, 1e6)
	setNS(p.FrontEndLoadMS, &c.FrontEndLoadNS, 1e6)
	setF(p.ComputeEfficiency, &c.ComputeEfficiency)
	setF(p.KVMemEfficiency, &c.KVMemEfficiency)
	setF(p.AllReduceEfficiency, &c.AllReduceBWEfficiency)
	setNS(p.AllReducePerPeerUS, &c.AllReducePerPeerNS, 1e3)
	setF(p.ExpertSmallBatchEfficiency, &c.ExpertSmallBatchEfficiency)
	setF(p.ExpertComputeEfficiency, &c.ExpertComputeEfficiency)
	setF(p.FrontEndSerialSplit, &c.FrontEndSerialSplit)
	setF(p.SamplerWarmupBytesPerLogit, &c.SamplerWarmupBytesPerLogit)
	if p.NoFrontEnd {
		c.FrontEndNS, c.FrontEndPerTokenNS, c.FrontEndSerialNS, c.FrontEndLoadNS = 0, 0, 0, 0
	}
	return c
}

// Apply sets an engine configuration to the profile: its cost (over the
// configuration's, or the defaults') and its scheduling.
func (p Profile) Apply(cfg *simengine.Config) {
	base := simengine.DefaultCost
	if cfg.Cost != nil {
		base = *cfg.Cost
	}
	c := p.Cost(base)
	cfg.Cost = &c
	if p.NoChunkedPrefill {
		cfg.ChunkedPrefill = false
	}
	if p.NoAsyncScheduling {
		cfg.NoAsyncScheduling = true
	}
	if p.SeparatePrefill {
		cfg.SeparatePrefill = true
	}
	if p.RunningCapFromKV {
		cfg.RunningCapFromKV = true
	}
	if p.RefuseLongPrompts {
		cfg.RefuseLongPrompts = true
	}
	if p.MinBatchedTokens > 0 {
		cfg.MaxNumBatchedTokens = max(cfg.MaxNumBatchedTokens, p.MinBatchedTokens)
	}
	if !p.SamplerWarmup() {
		cfg.NoSamplerWarmup = true
	}
}

// Like names the engine a simulation on the profile resembles, for
// reports: knee's defaults (a nil profile) schedule as vLLM V1 does; a
// profile of another engine names none.
func (p *Profile) Like() string {
	if p == nil {
		return "vLLM-like"
	}
	switch p.Engine {
	case FamilyVLLM:
		return "vLLM-like"
	case FamilySGLang:
		return "SGLang-like"
	case FamilyTRTLLM:
		return "TensorRT-LLM-like"
	}
	return ""
}

// SamplerWarmup reports whether the profile's engine sizes its KV cache
// after vLLM V1's start-up sampler run (simengine.Config.NoSamplerWarmup):
// vLLM does; SGLang (a static memory fraction), TensorRT-LLM and other
// engines do not.
func (p Profile) SamplerWarmup() bool { return p.Engine == FamilyVLLM }

// validate says what is wrong with a profile, naming the field.
func (p Profile) validate() error {
	switch {
	case p.Name == "":
		return errors.New("name is required")
	case p.Engine != FamilyVLLM && p.Engine != FamilySGLang && p.Engine != FamilyTRTLLM && p.Engine != FamilyOther:
		return fmt.Errorf("engine %q: want vllm, sglang, tensorrt-llm or other", p.Engine)
	case !share(p.ComputeEfficiency, false):
		return fmt.Errorf("compute_efficiency %v: want a share above 0, at most 1", *p.ComputeEfficiency)
	case !share(p.AllReduceEfficiency, false):
		return fmt.Errorf("all_reduce_efficiency %v: want a share above 0, at most 1", *p.AllReduceEfficiency)
	case !share(p.ExpertSmallBatchEfficiency, false):
		return fmt.Errorf("expert_small_batch_efficiency %v: want a share above 0, at most 1", *p.ExpertSmallBatchEfficiency)
	case !share(p.ExpertComputeEfficiency, false):
		return fmt.Errorf("expert_compute_efficiency %v: want a share above 0, at most 1", *p.ExpertComputeEfficiency)
	case negative(p.SamplerWarmupBytesPerLogit):
		return fmt.Errorf("sampler_warmup_bytes_per_logit %v: must not be negative", *p.SamplerWarmupBytesPerLogit)
	case negative(p.AllReducePerPeerUS):
		return fmt.Errorf("all_reduce_per_peer_us %v: must not be negative", *p.AllReducePerPeerUS)
	case !share(p.FrontEndSerialSplit, true):
		return fmt.Errorf("front_end_serial_split %v: want a share from 0 to 1", *p.FrontEndSerialSplit)
	case negative(p.StepOverheadMS, p.StepPerSeqUS, p.FrontEndMS, p.FrontEndSerialMS, p.FrontEndLoadMS):
		return errors.New("step_overhead_ms, step_per_seq_us and the front_end times must not be negative")
	case p.MinBatchedTokens < 0:
		return fmt.Errorf("min_batched_tokens %d: want 0 or more", p.MinBatchedTokens)
	}
	return nil
}

func share(v *float64, zeroOK bool) bool {
	return v == nil || (*v <= 1 && (*v > 0 || zeroOK && *v == 0))
}

func negative(vs ...*float64) bool {
	for _, v := range vs {
		if v != nil && !(*v >= 0) {
			return true
		}
	}
	return false
}

// maxProfileBytes bounds a profile file: a profile is a few hundred bytes.
const maxProfileBytes = 1 << 20

// Load reads a profile from YAML; unknown keys are errors.
func Load(path string) (Profile, error) {
	data, err := badinput.ReadFile(path, maxProfileBytes, "one server profile")
	if err != nil {
		return Profile{}, err
	}
	var p Profile
	if err := DecodeYAML(path, data, &p, "a server profile: name, engine, version and constants"); err != nil {
		return Profile{}, err
	}
	if err := p.validate(); err != nil {
		return Profile{}, fmt.Errorf("%s: %v", path, err)
	}
	return p, nil
}

// Write writes the profile as YAML.
func (p Profile) Write(w io.Writer) error {
	return WriteYAML(w, "knee server profile: knee sim --server-profile FILE", p)
}

// DecodeYAML decodes the one YAML document in data, read from path, into v.
// Unknown keys are errors, so a misspelt constant is not silently left at
// zero; want says what the file should hold when it is empty.
func DecodeYAML(path string, data []byte, v any, want string) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: empty file (want %s)", path, want)
		}
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// WriteYAML writes v as YAML under a comment line saying what reads it.
func WriteYAML(w io.Writer, comment string, v any) error {
	if _, err := io.WriteString(w, "# "+comment+"\n"); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return enc.Close()
}

// Resolve finds a built-in profile by name, or loads a file when the
// argument is not one (a path: it has a slash or a .yaml/.yml suffix, or
// exists).
func Resolve(nameOrFile string) (Profile, error) {
	if p, ok := builtin[nameOrFile]; ok {
		return p, nil
	}
	if strings.ContainsAny(nameOrFile, `/\`) || strings.HasSuffix(nameOrFile, ".yaml") || strings.HasSuffix(nameOrFile, ".yml") {
		return Load(nameOrFile)
	}
	if _, err := os.Stat(nameOrFile); err == nil {
		return Load(nameOrFile)
	}
	return Profile{}, fmt.Errorf("%q is no built-in server profile (%s) and no file", nameOrFile, strings.Join(Names(), ", "))
}

// Lookup is a built-in profile by name.
func Lookup(name string) (Profile, bool) {
	p, ok := builtin[name]
	return p, ok
}

// Names lists the built-in profiles.
func Names() []string {
	var n []string
	for k := range builtin {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
