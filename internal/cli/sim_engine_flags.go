package cli

import (
	"github.com/knee-dev/knee/internal/enginesetup"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/spf13/pflag"
)

// simEngineFlags select and configure the simulated engine; knee sim, and
// anything else that runs the simulator, register them. The resolving
// lives in enginesetup.
type simEngineFlags struct{ enginesetup.Choice }

func (e *simEngineFlags) register(fs *pflag.FlagSet) {
	e.FileFlags = true
	fs.StringVar(&e.GPU, "gpu", "h100", "GPU preset (knee sim --list), or the name of one in --gpu-file/--preset-file")
	fs.StringVar(&e.Model, "model", "llama-3.1-8b", "model preset (knee sim --list), or the name of one in --model-file/--preset-file")
	fs.StringVar(&e.GPUFile, "gpu-file", "", "YAML file describing one GPU (selected unless --gpu is given)")
	fs.StringVar(&e.ModelFile, "model-file", "", "YAML file describing one model (selected unless --model is given)")
	fs.StringVar(&e.PresetFile, "preset-file", "", "YAML file with lists gpus: and models: of extra presets")
	registerModelSource(fs, &e.Source)
	fs.IntVar(&e.TP, "tp", 1, "tensor-parallel degree (GPUs per replica)")
	fs.IntVar(&e.MaxNumSeqs, "max-num-seqs", 0, "most requests running at once (0: the engine's default: vLLM's 1024 on >=70 GiB GPUs other than A100s, else 256; with --server-profile sglang, SGLang's from the KV cache)")
	fs.IntVar(&e.MaxBatchedTokens, "max-num-batched-tokens", 0, "token budget of one engine step (0: vLLM's default, 8192 on >=70 GiB GPUs other than A100s, else 2048)")
	fs.Float64Var(&e.MemUtil, "gpu-memory-utilization", 0.9, "fraction of GPU memory the engine may use")
	fs.IntVar(&e.MaxModelLen, "max-model-len", 0, "prompt + output token limit (0: the model's context length)")
	fs.IntVar(&e.QueueLimit, "queue-limit", 0, "waiting requests beyond which new ones are rejected (0: unbounded)")
	fs.BoolVar(&e.NoChunkedPrefill, "no-chunked-prefill", false, "run each prompt in one step (vLLM V0 behaviour)")
	fs.BoolVar(&e.NoPrefixCaching, "no-prefix-caching", false, "turn off automatic prefix caching (on by default, as in vLLM V1)")
	fs.BoolVar(&e.NoAsyncScheduling, "no-async-scheduling", false, "schedule each step after the last one ends (vLLM's --no-async-scheduling; async is vLLM's default: a request arriving mid-step waits one step more)")
	fs.Float64Var(&e.StepTimeScale, "step-time-scale", 1, "multiply every step time (>1 models a slower engine)")
	for i, f := range enginesetup.CostShares {
		fs.Float64Var(&e.CostShares[i], f.Name, 0, f.Help)
	}
	fs.Float64Var(&e.FrontEndMS, "front-end-ms", -1, "per-request front-end cost before the engine sees a request (HTTP, template, tokenization); -1: the model's default, 0: none")
	for i, f := range enginesetup.CostDurations {
		fs.DurationVar(&e.CostDurations[i], f.Name, 0, f.Help)
	}
	fs.StringVar(&e.Profile, "profile", "", "cost profile written by knee calibrate: its fitted step costs, and its GPU, model and TP unless given")
	fs.StringVar(&e.ServerProfileName, "server-profile", "", enginesetup.ServerProfileHelp())
}

// noteSet records which selections were given explicitly (after parsing).
func (e *simEngineFlags) noteSet(fs *pflag.FlagSet) {
	e.GPUSet, e.ModelSet, e.TPSet = fs.Changed("gpu"), fs.Changed("model"), fs.Changed("tp")
	e.FrontEndSet = fs.Changed("front-end-ms") && e.FrontEndMS != -1
	for i, f := range enginesetup.CostShares {
		e.CostSharesSet[i] = fs.Changed(f.Name)
	}
	for i, f := range enginesetup.CostDurations {
		e.CostDurationsSet[i] = fs.Changed(f.Name)
	}
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

// The names the commands call (sweep_sim.go, serve.go, calibrate.go).
func (e *simEngineFlags) catalog() (*simengine.Catalog, error) { return e.Catalog() }
func (e *simEngineFlags) config(cat *simengine.Catalog) (simengine.Config, error) {
	return e.Config(cat)
}
func (e *simEngineFlags) configKV(c simengine.Config) [][2]string { return e.ConfigKV(c) }
func (e *simEngineFlags) fittedHost() bool                        { return e.FittedHost() }

// serverProfileHelp is --server-profile's help (plan.go registers it too).
var serverProfileHelp = enginesetup.ServerProfileHelp
