package cli

import (
	"github.com/knee-dev/knee/internal/enginesetup"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/spf13/pflag"
)

// modelSourceFlags say which model the simulator runs beyond a preset's
// name (enginesetup.ModelSource); plan registers them on its own, the
// simulating commands through simEngineFlags.
type modelSourceFlags struct{ enginesetup.ModelSource }

func (f *modelSourceFlags) register(fs *pflag.FlagSet) { registerModelSource(fs, &f.ModelSource) }

func registerModelSource(fs *pflag.FlagSet, f *enginesetup.ModelSource) {
	fs.StringVar(&f.ModelConfig, "model-config", "", "a Hugging Face config.json: simulate the model it describes (selected unless --model is given)")
	fs.StringVar(&f.KVCacheDtype, "kv-cache-dtype", "auto", "KV cache dtype: auto (the model's dtype, as vLLM's default), bf16, fp16 or fp8")
}

// The names plan.go calls.
func (f *modelSourceFlags) addConfigModel(cat *simengine.Catalog) (string, error) {
	return f.AddConfigModel(cat)
}
func (f *modelSourceFlags) withKVDtype(m simengine.Model) (simengine.Model, error) {
	return f.WithKVDtype(m)
}
