package sim

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// PresetFile is the YAML shape of a file holding several presets:
//
//	gpus:
//	  - name: my-gpu
//	    memory_gib: 48
//	    ...
//	models:
//	  - name: my-model
//	    layers: 40
//	    ...
//
// The fields of each entry are those of simengine.GPU and simengine.Model
// (the same keys as the built-in presets).
type PresetFile struct {
	GPUs   []simengine.GPU   `yaml:"gpus"`
	Models []simengine.Model `yaml:"models"`
}

func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

// maxPresetFileBytes bounds a preset file: a few KB a preset, so 1 MiB
// holds hundreds and a wrong path (a log, a device) is refused, not read.
const maxPresetFileBytes = 1 << 20

// LoadGPUFile reads one GPU from a YAML file (the preset keys at top level)
// and adds it to c. It returns the GPU so that it can be selected directly.
func LoadGPUFile(c *simengine.Catalog, path string) (simengine.GPU, error) {
	var g simengine.GPU
	data, err := badinput.ReadFile(path, maxPresetFileBytes, "a GPU preset YAML file")
	if err != nil {
		return g, err
	}
	if err := decodeStrict(data, &g); err != nil {
		return g, fmt.Errorf("%s: %w (want the keys of a GPU preset: name, memory_gib, bandwidth_gbps, bf16_tflops, interconnect_gbps)", path, err)
	}
	if err := c.AddGPU(g); err != nil {
		return g, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// LoadModelFile reads one model from a YAML file and adds it to c.
func LoadModelFile(c *simengine.Catalog, path string) (simengine.Model, error) {
	var m simengine.Model
	data, err := badinput.ReadFile(path, maxPresetFileBytes, "a model preset YAML file")
	if err != nil {
		return m, err
	}
	if err := decodeStrict(data, &m); err != nil {
		return m, fmt.Errorf("%s: %w (want the keys of a model preset: name, layers, hidden_size, heads, kv_heads, head_dim, ffn_size, vocab_size, max_context, weight_precision)", path, err)
	}
	if err := c.AddModel(m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// LoadPresetFile reads a file of gpus: and models: lists and adds them all to c.
func LoadPresetFile(c *simengine.Catalog, path string) (PresetFile, error) {
	var pf PresetFile
	data, err := badinput.ReadFile(path, maxPresetFileBytes, "a YAML file of gpus: and models: presets")
	if err != nil {
		return pf, err
	}
	if err := decodeStrict(data, &pf); err != nil {
		return pf, fmt.Errorf("%s: %w (want top-level lists gpus: and models:)", path, err)
	}
	if len(pf.GPUs) == 0 && len(pf.Models) == 0 {
		return pf, fmt.Errorf("%s: %w", path, errors.New("no gpus: or models: entries"))
	}
	for i, g := range pf.GPUs {
		if err := c.AddGPU(g); err != nil {
			return pf, fmt.Errorf("%s: gpus[%d]: %w", path, i, err)
		}
	}
	for i, m := range pf.Models {
		if err := c.AddModel(m); err != nil {
			return pf, fmt.Errorf("%s: models[%d]: %w", path, i, err)
		}
	}
	return pf, nil
}
