package cli

import (
	"errors"
	"strings"

	"github.com/knee-dev/knee/internal/hfconfig"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/spf13/pflag"
)

// modelSourceFlags say which model the simulator runs beyond a preset's
// name: a Hugging Face config.json, and the KV cache's dtype. knee sim,
// sim sweep, serve (through simEngineFlags) and plan register them.
type modelSourceFlags struct {
	modelConfig  string
	kvCacheDtype string
	notes        []string // what the config's model approximates
}

func (f *modelSourceFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.modelConfig, "model-config", "", "a Hugging Face config.json: simulate the model it describes (selected unless --model is given)")
	fs.StringVar(&f.kvCacheDtype, "kv-cache-dtype", "auto", "KV cache dtype: auto (the model's dtype, as vLLM's default), bf16, fp16 or fp8")
}

// addConfigModel adds the --model-config model to the catalog and returns
// its name ("" without the flag).
func (f *modelSourceFlags) addConfigModel(cat *simengine.Catalog) (string, error) {
	if f.modelConfig == "" {
		return "", nil
	}
	m, notes, err := hfconfig.Load(f.modelConfig)
	if err != nil {
		var fe *hfconfig.FieldError
		if errors.As(err, &fe) {
			return "", Usagef("--model-config %s: %v", f.modelConfig, err)
		}
		return "", Usagef("--model-config: %v", err)
	}
	if err := cat.AddModel(m); err != nil {
		return "", Usagef("--model-config %s: %v", f.modelConfig, err)
	}
	f.notes = notes
	return m.Name, nil
}

// withKVDtype applies --kv-cache-dtype to a model.
func (f *modelSourceFlags) withKVDtype(m simengine.Model) (simengine.Model, error) {
	m, err := m.WithKVCacheDtype(f.kvCacheDtype)
	if err != nil {
		return m, Usagef("--kv-cache-dtype: %v", err)
	}
	return m, nil
}

// configKV lists the model's source for reports.
func (f *modelSourceFlags) configKV(m simengine.Model) [][2]string {
	kv := [][2]string{{"kv_cache_dtype", m.KVPrecision}}
	if f.modelConfig != "" {
		kv = append(kv, [2]string{"model_config", f.modelConfig})
		if len(f.notes) > 0 {
			kv = append(kv, [2]string{"model_config_notes", strings.Join(f.notes, "; ")})
		}
	}
	return kv
}
