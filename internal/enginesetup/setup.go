// Package enginesetup turns what a user chose for the simulated engine
// (presets, preset files, a calibrated or named server profile, single
// constants) into a simengine.Config, and lists the choice for reports.
// Every command that runs the simulator shares it, so they share its
// checks and messages; the command line only declares the flags.
package enginesetup

import (
	"slices"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/calibrate"
	"github.com/knee-dev/knee/internal/serverprofile"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
)

// Choice is the engine a user chose; its fields are filled by flags.
type Choice struct {
	GPU, Model                       string
	GPUFile, ModelFile, PresetFile   string
	TP, MaxNumSeqs, MaxBatchedTokens int
	MemUtil                          float64
	MaxModelLen, QueueLimit          int
	NoChunkedPrefill                 bool
	NoPrefixCaching                  bool
	NoAsyncScheduling                bool
	StepTimeScale                    float64
	FrontEndMS                       float64
	FrontEndSet                      bool                              // --front-end-ms given; embedded servers built from a literal keep the default
	CostDurations                    [len(CostDurations)]time.Duration // by CostDurations
	CostDurationsSet                 [len(CostDurations)]bool          // given explicitly (the command's noteSet): 0 is then a value
	Profile                          string                            // --profile, written by knee calibrate
	GPUSet, ModelSet, TPSet          bool                              // given on the command line
	CostShares                       [len(CostShares)]float64          // by CostShares
	CostSharesSet                    [len(CostShares)]bool             // given explicitly (the command's noteSet): 0 is then a value
	Cost                             *simengine.CostParams
	ServerProfileName                string                 // --server-profile
	ServerProfile                    *serverprofile.Profile // resolved
	FileFlags                        bool                   // --gpu-file, --model-file and --preset-file can be given
	Source                           ModelSource
}

// CostDurations are the cost flags given as a duration: each, when given
// (0 included) or above 0, overrides one field of the profile's cost (or
// the default's) and shows in the run's config as Key. An explicit 0 is a
// value, not "the default": --front-end-serial 0 switches off the
// default's serial admission.
var CostDurations = [...]struct {
	Name, Key, Help string
	Per, Example    string // in the message for a negative value
	field           func(*simengine.CostParams) *int64
}{
	{"front-end-serial", "front_end_serial",
		"front-end work per request done one request at a time, so a burst reaches the engine one request per this long (e.g. 9ms for the kvcached H100 host of docs/validation.md; 0: none; not given: the profile's, or the default 8ms fitted across the validation's sources)",
		"", "10ms", func(p *simengine.CostParams) *int64 { return &p.FrontEndSerialNS }},
	{"front-end-load", "front_end_load_per_ktok_s",
		"front-end latency added per 1,000 output tokens a second the server streams, for a host whose API server slows as it streams more (e.g. 22ms for the wmx L4 host of docs/simulator.md; 0: none; not given: the profile's, or none)",
		" per 1,000 tok/s streamed", "20ms", func(p *simengine.CostParams) *int64 { return &p.FrontEndLoadNS }},
	{"step-per-seq", "step_per_seq",
		"engine time per sequence of every step on top of its fixed overhead: the CPU a step spends on each request of the batch (e.g. 50us for a CPU-bound host; knee calibrate fits it; 0: none; not given: the profile's, or none)",
		"", "50us", func(p *simengine.CostParams) *int64 { return &p.StepPerSeqNS }},
}

// CostShares are the cost flags given as a share from 0 to 1: each, when
// given or above 0, overrides one field of the profile's cost (or the
// default's) and shows in the run's config as Key. An efficiency of 0
// would price work at infinite time, so only the split takes 0.
var CostShares = [...]struct {
	Name, Key, Help, Example string
	field                    func(*simengine.CostParams) *float64
	zero                     bool // 0 is a value; else an explicit 0 is refused
}{
	{"front-end-serial-split", "front_end_serial_split",
		"share of --front-end-serial a request's handler does before it first yields, after which the rest queues again behind every request that arrived meanwhile: in a burst no request reaches the engine until this share of the burst's admission time has passed (knee's default 0.5, fitted across the validation sources; 0.6 for the GPUStack vLLM 0.11 hosts, 0.2 for the kvcached host of docs/simulator.md; 0: one turn; not given: the profile's, or that default)",
		"0.6", func(p *simengine.CostParams) *float64 { return &p.FrontEndSerialSplit }, true},
	{"compute-efficiency", "compute_efficiency",
		"share of the GPU's achievable matmul rate the GEMMs and attention reach, the prefill side of the roofline (e.g. 0.62 and 0.41 for the GPUStack A100 and H100 machines of docs/simulator.md; not given: the profile's, or the default 0.7)",
		"0.62", func(p *simengine.CostParams) *float64 { return &p.ComputeEfficiency }, false},
	{"all-reduce-efficiency", "all_reduce_efficiency",
		"share of the GPU link's bandwidth a tensor-parallel all-reduce reaches (e.g. 0.133 for the GPUStack A100 machine of docs/simulator.md, whose all-reduce runs at a PCIe rate; not given: the profile's, or the default 0.75)",
		"0.75", func(p *simengine.CostParams) *float64 { return &p.AllReduceBWEfficiency }, false},
}

// Catalog returns the built-in presets plus those from the preset files,
// and fills the selections a calibrated profile or a file names unless
// they were given.
func (e *Choice) Catalog() (*simengine.Catalog, error) {
	if err := e.loadServerProfile(); err != nil {
		return nil, err
	}
	if e.Profile != "" {
		p, err := calibrate.LoadProfile(e.Profile)
		if err != nil {
			return nil, badinput.Errorf("--profile: %v", err)
		}
		if !e.GPUSet {
			e.GPU = p.GPU
		}
		if !e.ModelSet {
			e.Model = p.Model
		}
		if !e.TPSet {
			e.TP = p.TP
		}
		if e.MaxNumSeqs == 0 {
			e.MaxNumSeqs = p.MaxNumSeqs // a CPU server's parallel slots
		}
		c := p.CostParams(simengine.DefaultCost)
		e.Cost = &c
	}
	cat := simengine.NewCatalog()
	if e.PresetFile != "" {
		if _, err := sim.LoadPresetFile(cat, e.PresetFile); err != nil {
			return nil, badinput.Errorf("--preset-file: %v", err)
		}
	}
	if e.GPUFile != "" {
		g, err := sim.LoadGPUFile(cat, e.GPUFile)
		if err != nil {
			return nil, badinput.Errorf("--gpu-file: %v", err)
		}
		if !e.GPUSet {
			e.GPU = g.Name
		}
	}
	if e.ModelFile != "" {
		m, err := sim.LoadModelFile(cat, e.ModelFile)
		if err != nil {
			return nil, badinput.Errorf("--model-file: %v", err)
		}
		if !e.ModelSet {
			e.Model = m.Name
		}
	}
	if name, err := e.Source.AddConfigModel(cat); err != nil {
		return nil, err
	} else if name != "" && !e.ModelSet {
		e.Model = name
	}
	return cat, nil
}

// Config resolves the choice into an engine configuration.
func (e *Choice) Config(cat *simengine.Catalog) (simengine.Config, error) {
	// Only commands that register the preset-file flags may point to them.
	gpuFile, modelFile := "", ""
	if e.FileFlags {
		gpuFile, modelFile = "; or describe one in a YAML file with --gpu-file or --preset-file", "; or describe one in a YAML file with --model-file or --preset-file"
	}
	g, err := cat.LookupGPU(e.GPU)
	if err != nil {
		return simengine.Config{}, badinput.Errorf("--gpu: %v%s", err, gpuFile)
	}
	m, err := cat.LookupModel(e.Model)
	if err != nil {
		return simengine.Config{}, badinput.Errorf("--model: %v%s", err, modelFile)
	}
	if m, err = e.Source.WithKVDtype(m); err != nil {
		return simengine.Config{}, err
	}
	if err := e.check(); err != nil {
		return simengine.Config{}, err
	}
	c := simengine.DefaultConfig(g, m, e.TP)
	c.MaxNumSeqs, c.MaxNumBatchedTokens = e.MaxNumSeqs, e.MaxBatchedTokens
	c.GPUMemoryUtilization, c.MaxModelLen, c.QueueLimit = e.MemUtil, e.MaxModelLen, e.QueueLimit
	c.ChunkedPrefill = !e.NoChunkedPrefill
	c.StepTimeScale = e.StepTimeScale
	c.NoPrefixCaching = e.NoPrefixCaching
	c.NoAsyncScheduling = e.NoAsyncScheduling
	c.Cost = e.Cost
	if e.ServerProfile != nil {
		e.ServerProfile.Apply(&c)
	}
	// Each cost flag overrides one field of the profile's cost, or of the
	// default one.
	override := func(set func(*simengine.CostParams)) {
		cost := simengine.DefaultCost
		if c.Cost != nil {
			cost = *c.Cost
		}
		set(&cost)
		c.Cost = &cost
	}
	if e.FrontEndSet {
		override(func(p *simengine.CostParams) {
			p.FrontEndNS = int64(e.FrontEndMS * 1e6)
			if e.FrontEndMS == 0 {
				p.FrontEndPerTokenNS = 0
			}
		})
	}
	for i, f := range CostDurations {
		if d := e.CostDurations[i]; e.durationGiven(i) {
			override(func(p *simengine.CostParams) { *f.field(p) = int64(d) })
		}
	}
	for i, f := range CostShares {
		if v := e.CostShares[i]; e.shareGiven(i) {
			override(func(p *simengine.CostParams) { *f.field(p) = v })
		}
	}
	return c, nil
}

// durationGiven and shareGiven say whether cost flag i overrides the
// profile's field: given on the command line (0 included), or set above 0
// by a caller that builds a Choice without flags.
func (e *Choice) durationGiven(i int) bool {
	return e.CostDurationsSet[i] || e.CostDurations[i] > 0
}
func (e *Choice) shareGiven(i int) bool { return e.CostSharesSet[i] || e.CostShares[i] > 0 }

// check refuses numbers out of their range.
func (e *Choice) check() error {
	switch {
	case e.TP < 1:
		return badinput.Errorf("--tp %d: want 1 or more GPUs", e.TP)
	case e.MaxNumSeqs < 0:
		return badinput.Errorf("--max-num-seqs %d: want 0 (default) or more", e.MaxNumSeqs)
	case e.MaxBatchedTokens < 0:
		return badinput.Errorf("--max-num-batched-tokens %d: want 0 (default) or more", e.MaxBatchedTokens)
	case !(e.MemUtil > 0 && e.MemUtil <= 1):
		return badinput.Errorf("--gpu-memory-utilization %v: want a fraction in (0, 1]", e.MemUtil)
	case e.MaxModelLen < 0:
		return badinput.Errorf("--max-model-len %d: want 0 (the model's) or more", e.MaxModelLen)
	case e.QueueLimit < 0:
		return badinput.Errorf("--queue-limit %d: want 0 (unbounded) or more", e.QueueLimit)
	case !(e.StepTimeScale > 0):
		return badinput.Errorf("--step-time-scale %v: want a positive factor", e.StepTimeScale)
	case e.FrontEndSet && e.FrontEndMS < 0:
		return badinput.Errorf("--front-end-ms %v: want milliseconds >= 0, or -1 for the default", e.FrontEndMS)
	}
	for i, f := range CostShares {
		if v := e.CostShares[i]; !(v >= 0 && v <= 1) {
			return badinput.Errorf("--%s %v: want a share from 0 to 1, such as %s", f.Name, v, f.Example)
		} else if v == 0 && !f.zero && e.CostSharesSet[i] {
			return badinput.Errorf("--%s 0: want a share above 0, at most 1, such as %s (leave it out for the profile's or the default)", f.Name, f.Example)
		}
	}
	for i, f := range CostDurations {
		if d := e.CostDurations[i]; d < 0 {
			return badinput.Errorf("--%s %v: want a duration of 0 or more%s, such as %s", f.Name, d, f.Per, f.Example)
		}
	}
	return nil
}

// ConfigKV lists the resolved engine settings for reports.
func (e *Choice) ConfigKV(c simengine.Config) [][2]string {
	kv := [][2]string{
		{"gpu", c.GPU.Name}, {"model", c.Model.Name}, {"tp", strconv.Itoa(c.TP)},
		{"max_num_seqs", strconv.Itoa(c.MaxNumSeqs)}, {"max_num_batched_tokens", strconv.Itoa(c.MaxNumBatchedTokens)},
		{"gpu_memory_utilization", strconv.FormatFloat(c.GPUMemoryUtilization, 'g', -1, 64)},
		{"max_model_len", strconv.Itoa(c.MaxModelLen)}, {"chunked_prefill", strconv.FormatBool(c.ChunkedPrefill)},
		{"prefix_caching", strconv.FormatBool(!c.NoPrefixCaching)},
		{"async_scheduling", strconv.FormatBool(c.AsyncScheduling())},
	}
	kv = append(kv, e.Source.ConfigKV(c.Model)...)
	if e.ServerProfile != nil {
		kv = append(kv, [2]string{"server_profile", e.ServerProfile.Name})
	}
	if c.QueueLimit > 0 {
		kv = append(kv, [2]string{"queue_limit", strconv.Itoa(c.QueueLimit)})
	}
	if e.FrontEndSet {
		kv = append(kv, [2]string{"front_end_ms", strconv.FormatFloat(e.FrontEndMS, 'g', -1, 64)})
	}
	for i, f := range CostDurations {
		if d := e.CostDurations[i]; e.durationGiven(i) {
			kv = append(kv, [2]string{f.Key, d.String()})
		}
	}
	for i, f := range CostShares {
		if v := e.CostShares[i]; e.shareGiven(i) {
			kv = append(kv, [2]string{f.Key, strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	if c.StepTimeScale != 1 {
		kv = append(kv, [2]string{"step_time_scale", strconv.FormatFloat(c.StepTimeScale, 'g', -1, 64)})
	}
	if e.Profile != "" && c.Cost != nil {
		kv = append(kv, [2]string{"profile", e.Profile},
			[2]string{"step_overhead_ms", strconv.FormatFloat(float64(c.Cost.StepOverheadNS)/1e6, 'g', 4, 64)},
			[2]string{"step_per_seq_us", strconv.FormatFloat(float64(c.Cost.StepPerSeqNS)/1e3, 'g', 4, 64)},
			[2]string{"mem_efficiency", strconv.FormatFloat(c.Cost.MemEfficiency, 'g', 4, 64)})
		if !slices.ContainsFunc(kv, func(p [2]string) bool { return p[0] == "compute_efficiency" }) { // not given by its flag
			kv = append(kv, [2]string{"compute_efficiency", strconv.FormatFloat(c.Cost.ComputeEfficiency, 'g', 4, 64)})
		}
	}
	return kv
}
