package enginesetup

import (
	"errors"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/hfconfig"
	"github.com/knee-dev/knee/internal/simengine"
)

// ModelSource says which model the simulator runs beyond a preset's name:
// a Hugging Face config.json, and the KV cache's dtype.
type ModelSource struct {
	ModelConfig  string   // --model-config
	KVCacheDtype string   // --kv-cache-dtype
	notes        []string // what the config's model approximates
}

// AddConfigModel adds the --model-config model to the catalog and returns
// its name ("" without one).
func (f *ModelSource) AddConfigModel(cat *simengine.Catalog) (string, error) {
	if f.ModelConfig == "" {
		return "", nil
	}
	m, notes, err := hfconfig.Load(f.ModelConfig)
	if err != nil {
		var fe *hfconfig.FieldError
		if errors.As(err, &fe) {
			return "", badinput.Errorf("--model-config %s: %v", f.ModelConfig, err)
		}
		return "", badinput.Errorf("--model-config: %v", err)
	}
	if err := cat.AddModel(m); err != nil {
		return "", badinput.Errorf("--model-config %s: %v", f.ModelConfig, err)
	}
	f.notes = notes
	return m.Name, nil
}

// WithKVDtype applies --kv-cache-dtype to a model.
func (f *ModelSource) WithKVDtype(m simengine.Model) (simengine.Model, error) {
	m, err := m.WithKVCacheDtype(f.KVCacheDtype)
	if err != nil {
		return m, badinput.Errorf("--kv-cache-dtype: %v", err)
	}
	return m, nil
}

// ConfigKV lists the model's source for reports.
func (f *ModelSource) ConfigKV(m simengine.Model) [][2]string {
	kv := [][2]string{{"kv_cache_dtype", m.KVPrecision}}
	if f.ModelConfig != "" {
		kv = append(kv, [2]string{"model_config", f.ModelConfig})
		if len(f.notes) > 0 {
			kv = append(kv, [2]string{"model_config_notes", strings.Join(f.notes, "; ")})
		}
	}
	return kv
}
