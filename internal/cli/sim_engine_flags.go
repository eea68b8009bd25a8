package cli

import (
	"slices"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/calibrate"
	"github.com/knee-dev/knee/internal/serverprofile"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/spf13/pflag"
)

// simEngineFlags select and configure the simulated engine; knee sim, and
// anything else that runs the simulator, register them.
type simEngineFlags struct {
	gpu, model                       string
	gpuFile, modelFile, presetFile   string
	tp, maxNumSeqs, maxBatchedTokens int
	memUtil                          float64
	maxModelLen, queueLimit          int
	noChunkedPrefill                 bool
	noPrefixCaching                  bool
	noAsyncScheduling                bool
	stepTimeScale                    float64
	frontEndMS                       float64
	frontEndSet                      bool                                  // --front-end-ms given (noteSet); embedded servers built from a literal keep the default
	costDurations                    [len(costDurationFlags)]time.Duration // by costDurationFlags
	profile                          string
	gpuSet, modelSet, tpSet          bool                         // given on the command line
	costShares                       [len(costShareFlags)]float64 // by costShareFlags
	costSharesSet                    [len(costShareFlags)]bool    // given explicitly (noteSet)
	cost                             *simengine.CostParams
	serverProfileName                string                 // --server-profile
	serverProfile                    *serverprofile.Profile // resolved
	fileFlags                        bool                   // --gpu-file, --model-file and --preset-file are registered
	source                           modelSourceFlags
}

// costDurationFlags are the cost flags given as a duration: each, when
// above 0, overrides one field of the profile's cost (or the default's)
// and shows in the run's config as key.
var costDurationFlags = [...]struct {
	name, key, help string
	per, example    string // in the message for a negative value
	field           func(*simengine.CostParams) *int64
}{
	{"front-end-serial", "front_end_serial",
		"front-end work per request done one request at a time, so a burst reaches the engine one request per this long (e.g. 9ms for the kvcached H100 host of docs/validation.md; 0: the profile's, or the default 4ms fitted across the validation's sources)",
		"", "10ms", func(p *simengine.CostParams) *int64 { return &p.FrontEndSerialNS }},
	{"front-end-load", "front_end_load_per_ktok_s",
		"front-end latency added per 1,000 output tokens a second the server streams, for a host whose API server slows as it streams more (e.g. 22ms for the wmx L4 host of docs/simulator.md; 0: none)",
		" per 1,000 tok/s streamed", "20ms", func(p *simengine.CostParams) *int64 { return &p.FrontEndLoadNS }},
	{"step-per-seq", "step_per_seq",
		"engine time per sequence of every step on top of its fixed overhead: the CPU a step spends on each request of the batch (e.g. 50us for a CPU-bound host; knee calibrate fits it; 0: none, or the profile's)",
		"", "50us", func(p *simengine.CostParams) *int64 { return &p.StepPerSeqNS }},
}

// costShareFlags are the cost flags given as a share from 0 to 1: each,
// when above 0 (or given at all, where 0 is a value: zero), overrides one
// field of the profile's cost (or the default's) and shows in the run's
// config as key.
var costShareFlags = [...]struct {
	name, key, help, example string
	field                    func(*simengine.CostParams) *float64
	zero                     bool
}{
	{"front-end-serial-split", "front_end_serial_split",
		"share of --front-end-serial a request's handler does before it first yields, after which the rest queues again behind every request that arrived meanwhile: in a burst no request reaches the engine until this share of the burst's admission time has passed (knee's default 0.5, fitted across the validation sources; 0.6 for the GPUStack vLLM 0.11 hosts, 0.2 for the kvcached host of docs/simulator.md; 0: one turn)",
		"0.6", func(p *simengine.CostParams) *float64 { return &p.FrontEndSerialSplit }, true},
	{"compute-efficiency", "compute_efficiency",
		"share of the GPU's achievable matmul rate the GEMMs and attention reach, the prefill side of the roofline (e.g. 0.62 and 0.41 for the GPUStack A100 and H100 machines of docs/simulator.md; 0: the profile's, or 1)",
		"0.62", func(p *simengine.CostParams) *float64 { return &p.ComputeEfficiency }, false},
	{"all-reduce-efficiency", "all_reduce_efficiency",
		"share of the GPU link's bandwidth a tensor-parallel all-reduce reaches (e.g. 0.133 for the GPUStack A100 machine of docs/simulator.md, whose all-reduce runs at a PCIe rate; 0: the default 0.75)",
		"0.75", func(p *simengine.CostParams) *float64 { return &p.AllReduceBWEfficiency }, false},
}

func (e *simEngineFlags) register(fs *pflag.FlagSet) {
	e.fileFlags = true
	fs.StringVar(&e.gpu, "gpu", "h100", "GPU preset (knee sim --list), or the name of one in --gpu-file/--preset-file")
	fs.StringVar(&e.model, "model", "llama-3.1-8b", "model preset (knee sim --list), or the name of one in --model-file/--preset-file")
	fs.StringVar(&e.gpuFile, "gpu-file", "", "YAML file describing one GPU (selected unless --gpu is given)")
	fs.StringVar(&e.modelFile, "model-file", "", "YAML file describing one model (selected unless --model is given)")
	fs.StringVar(&e.presetFile, "preset-file", "", "YAML file with lists gpus: and models: of extra presets")
	e.source.register(fs)
	fs.IntVar(&e.tp, "tp", 1, "tensor-parallel degree (GPUs per replica)")
	fs.IntVar(&e.maxNumSeqs, "max-num-seqs", 0, "most requests running at once (0: vLLM's default, 1024 on >=70 GiB GPUs other than A100s, else 256)")
	fs.IntVar(&e.maxBatchedTokens, "max-num-batched-tokens", 0, "token budget of one engine step (0: vLLM's default, 8192 on >=70 GiB GPUs other than A100s, else 2048)")
	fs.Float64Var(&e.memUtil, "gpu-memory-utilization", 0.9, "fraction of GPU memory the engine may use")
	fs.IntVar(&e.maxModelLen, "max-model-len", 0, "prompt + output token limit (0: the model's context length)")
	fs.IntVar(&e.queueLimit, "queue-limit", 0, "waiting requests beyond which new ones are rejected (0: unbounded)")
	fs.BoolVar(&e.noChunkedPrefill, "no-chunked-prefill", false, "run each prompt in one step (vLLM V0 behaviour)")
	fs.BoolVar(&e.noPrefixCaching, "no-prefix-caching", false, "turn off automatic prefix caching (on by default, as in vLLM V1)")
	fs.BoolVar(&e.noAsyncScheduling, "no-async-scheduling", false, "schedule each step after the last one ends (vLLM's --no-async-scheduling; async is vLLM's default: a request arriving mid-step waits one step more)")
	fs.Float64Var(&e.stepTimeScale, "step-time-scale", 1, "multiply every step time (>1 models a slower engine)")
	for i, f := range costShareFlags {
		fs.Float64Var(&e.costShares[i], f.name, 0, f.help)
	}
	fs.Float64Var(&e.frontEndMS, "front-end-ms", -1, "per-request front-end cost before the engine sees a request (HTTP, template, tokenization); -1: the model's default, 0: none")
	for i, f := range costDurationFlags {
		fs.DurationVar(&e.costDurations[i], f.name, 0, f.help)
	}
	fs.StringVar(&e.profile, "profile", "", "cost profile written by knee calibrate: its fitted step costs, and its GPU, model and TP unless given")
	fs.StringVar(&e.serverProfileName, "server-profile", "", serverProfileHelp())
}

// noteSet records which selections were given explicitly (after parsing).
func (e *simEngineFlags) noteSet(fs *pflag.FlagSet) {
	fs.Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "gpu":
			e.gpuSet = true
		case "model":
			e.modelSet = true
		case "tp":
			e.tpSet = true
		case "front-end-ms":
			e.frontEndSet = e.frontEndMS != -1
		}
		for i, f := range costShareFlags {
			if fl.Name == f.name {
				e.costSharesSet[i] = true
			}
		}
	})
}

// resolve is noteSet, catalog and config in one: the engine configuration
// the parsed flags select.
func (e *simEngineFlags) resolve(fs *pflag.FlagSet) (simengine.Config, error) {
	e.noteSet(fs)
	cat, err := e.catalog()
	if err != nil {
		return simengine.Config{}, err
	}
	return e.config(cat)
}

// catalog returns the built-in presets plus those from the preset files.
func (e *simEngineFlags) catalog() (*simengine.Catalog, error) {
	if err := e.loadServerProfile(); err != nil {
		return nil, err
	}
	if e.profile != "" {
		p, err := calibrate.LoadProfile(e.profile)
		if err != nil {
			return nil, Usagef("--profile: %v", err)
		}
		if !e.gpuSet {
			e.gpu = p.GPU
		}
		if !e.modelSet {
			e.model = p.Model
		}
		if !e.tpSet {
			e.tp = p.TP
		}
		if e.maxNumSeqs == 0 {
			e.maxNumSeqs = p.MaxNumSeqs // a CPU server's parallel slots
		}
		c := p.CostParams(simengine.DefaultCost)
		e.cost = &c
	}
	cat := simengine.NewCatalog()
	if e.presetFile != "" {
		if _, err := sim.LoadPresetFile(cat, e.presetFile); err != nil {
			return nil, Usagef("--preset-file: %v", err)
		}
	}
	if e.gpuFile != "" {
		g, err := sim.LoadGPUFile(cat, e.gpuFile)
		if err != nil {
			return nil, Usagef("--gpu-file: %v", err)
		}
		if !e.gpuSet {
			e.gpu = g.Name
		}
	}
	if e.modelFile != "" {
		m, err := sim.LoadModelFile(cat, e.modelFile)
		if err != nil {
			return nil, Usagef("--model-file: %v", err)
		}
		if !e.modelSet {
			e.model = m.Name
		}
	}
	if name, err := e.source.addConfigModel(cat); err != nil {
		return nil, err
	} else if name != "" && !e.modelSet {
		e.model = name
	}
	return cat, nil
}

// config resolves the flags into an engine configuration.
func (e *simEngineFlags) config(cat *simengine.Catalog) (simengine.Config, error) {
	// Only commands that register the preset-file flags may point to them.
	gpuFile, modelFile := "", ""
	if e.fileFlags {
		gpuFile, modelFile = "; or describe one in a YAML file with --gpu-file or --preset-file", "; or describe one in a YAML file with --model-file or --preset-file"
	}
	g, err := cat.LookupGPU(e.gpu)
	if err != nil {
		return simengine.Config{}, Usagef("--gpu: %v%s", err, gpuFile)
	}
	m, err := cat.LookupModel(e.model)
	if err != nil {
		return simengine.Config{}, Usagef("--model: %v%s", err, modelFile)
	}
	if m, err = e.source.withKVDtype(m); err != nil {
		return simengine.Config{}, err
	}
	switch {
	case e.tp < 1:
		return simengine.Config{}, Usagef("--tp %d: want 1 or more GPUs", e.tp)
	case e.maxNumSeqs < 0:
		return simengine.Config{}, Usagef("--max-num-seqs %d: want 0 (default) or more", e.maxNumSeqs)
	case e.maxBatchedTokens < 0:
		return simengine.Config{}, Usagef("--max-num-batched-tokens %d: want 0 (default) or more", e.maxBatchedTokens)
	case !(e.memUtil > 0 && e.memUtil <= 1):
		return simengine.Config{}, Usagef("--gpu-memory-utilization %v: want a fraction in (0, 1]", e.memUtil)
	case e.maxModelLen < 0:
		return simengine.Config{}, Usagef("--max-model-len %d: want 0 (the model's) or more", e.maxModelLen)
	case e.queueLimit < 0:
		return simengine.Config{}, Usagef("--queue-limit %d: want 0 (unbounded) or more", e.queueLimit)
	case !(e.stepTimeScale > 0):
		return simengine.Config{}, Usagef("--step-time-scale %v: want a positive factor", e.stepTimeScale)
	case e.frontEndSet && e.frontEndMS < 0:
		return simengine.Config{}, Usagef("--front-end-ms %v: want milliseconds >= 0, or -1 for the default", e.frontEndMS)
	}
	for i, f := range costShareFlags {
		if v := e.costShares[i]; !(v >= 0 && v <= 1) {
			return simengine.Config{}, Usagef("--%s %v: want a share from 0 to 1, such as %s", f.name, v, f.example)
		}
	}
	for i, f := range costDurationFlags {
		if d := e.costDurations[i]; d < 0 {
			return simengine.Config{}, Usagef("--%s %v: want a duration of 0 or more%s, such as %s", f.name, d, f.per, f.example)
		}
	}
	c := simengine.DefaultConfig(g, m, e.tp)
	c.MaxNumSeqs, c.MaxNumBatchedTokens = e.maxNumSeqs, e.maxBatchedTokens
	c.GPUMemoryUtilization, c.MaxModelLen, c.QueueLimit = e.memUtil, e.maxModelLen, e.queueLimit
	c.ChunkedPrefill = !e.noChunkedPrefill
	c.StepTimeScale = e.stepTimeScale
	c.NoPrefixCaching = e.noPrefixCaching
	c.NoAsyncScheduling = e.noAsyncScheduling
	c.Cost = e.cost
	e.applyServerProfile(&c)
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
	if e.frontEndSet {
		override(func(p *simengine.CostParams) {
			p.FrontEndNS = int64(e.frontEndMS * 1e6)
			if e.frontEndMS == 0 {
				p.FrontEndPerTokenNS = 0
			}
		})
	}
	for i, f := range costDurationFlags {
		if d := e.costDurations[i]; d > 0 {
			override(func(p *simengine.CostParams) { *f.field(p) = int64(d) })
		}
	}
	for i, f := range costShareFlags {
		if v := e.costShares[i]; v > 0 || (f.zero && e.costSharesSet[i]) {
			override(func(p *simengine.CostParams) { *f.field(p) = v })
		}
	}
	return c, nil
}

// configKV lists the resolved engine settings for reports.
func (e *simEngineFlags) configKV(c simengine.Config) [][2]string {
	kv := [][2]string{
		{"gpu", c.GPU.Name}, {"model", c.Model.Name}, {"tp", strconv.Itoa(c.TP)},
		{"max_num_seqs", strconv.Itoa(c.MaxNumSeqs)}, {"max_num_batched_tokens", strconv.Itoa(c.MaxNumBatchedTokens)},
		{"gpu_memory_utilization", strconv.FormatFloat(c.GPUMemoryUtilization, 'g', -1, 64)},
		{"max_model_len", strconv.Itoa(c.MaxModelLen)}, {"chunked_prefill", strconv.FormatBool(c.ChunkedPrefill)},
		{"prefix_caching", strconv.FormatBool(!c.NoPrefixCaching)},
		{"async_scheduling", strconv.FormatBool(c.AsyncScheduling())},
	}
	kv = append(kv, e.source.configKV(c.Model)...)
	if e.serverProfile != nil {
		kv = append(kv, [2]string{"server_profile", e.serverProfile.Name})
	}
	if c.QueueLimit > 0 {
		kv = append(kv, [2]string{"queue_limit", strconv.Itoa(c.QueueLimit)})
	}
	if e.frontEndSet {
		kv = append(kv, [2]string{"front_end_ms", strconv.FormatFloat(e.frontEndMS, 'g', -1, 64)})
	}
	for i, f := range costDurationFlags {
		if d := e.costDurations[i]; d > 0 {
			kv = append(kv, [2]string{f.key, d.String()})
		}
	}
	for i, f := range costShareFlags {
		if v := e.costShares[i]; v > 0 || (f.zero && e.costSharesSet[i]) {
			kv = append(kv, [2]string{f.key, strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	if c.StepTimeScale != 1 {
		kv = append(kv, [2]string{"step_time_scale", strconv.FormatFloat(c.StepTimeScale, 'g', -1, 64)})
	}
	if e.profile != "" && c.Cost != nil {
		kv = append(kv, [2]string{"profile", e.profile},
			[2]string{"step_overhead_ms", strconv.FormatFloat(float64(c.Cost.StepOverheadNS)/1e6, 'g', 4, 64)},
			[2]string{"step_per_seq_us", strconv.FormatFloat(float64(c.Cost.StepPerSeqNS)/1e3, 'g', 4, 64)},
			[2]string{"mem_efficiency", strconv.FormatFloat(c.Cost.MemEfficiency, 'g', 4, 64)})
		if !slices.ContainsFunc(kv, func(p [2]string) bool { return p[0] == "compute_efficiency" }) { // not given by its flag
			kv = append(kv, [2]string{"compute_efficiency", strconv.FormatFloat(c.Cost.ComputeEfficiency, 'g', 4, 64)})
		}
	}
	return kv
}
