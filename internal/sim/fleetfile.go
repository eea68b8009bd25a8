package sim

import (
	"errors"
	"fmt"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// FleetFile describes a mixed fleet: groups of replicas, each group its own
// GPU, TP and engine limits, all serving one model.
//
//	replicas:
//	  - {gpu: h100, tp: 2, count: 2}
//	  - {gpu: a100-80gb, tp: 4, max_num_seqs: 128, max_num_batched_tokens: 2048}
type FleetFile struct {
	Replicas []FleetGroup `yaml:"replicas"`
}

// FleetGroup is Count replicas of one engine; zero fields keep the base
// engine's (the command line's) settings.
type FleetGroup struct {
	GPU                 string `yaml:"gpu"`
	TP                  int    `yaml:"tp"`
	Count               int    `yaml:"count"` // 0 = 1
	MaxNumSeqs          int    `yaml:"max_num_seqs"`
	MaxNumBatchedTokens int    `yaml:"max_num_batched_tokens"`
}

// maxFleetReplicas bounds a fleet file's replicas.
const maxFleetReplicas = 1024

// LoadFleetFile reads a fleet file and returns one engine configuration per
// replica, each the base with its group's settings; a group whose model
// does not fit its GPUs is an error naming the group.
func LoadFleetFile(c *simengine.Catalog, path string, base simengine.Config) ([]simengine.Config, error) {
	data, err := badinput.ReadFile(path, maxPresetFileBytes, "a fleet YAML file (replicas:)")
	if err != nil {
		return nil, err
	}
	var ff FleetFile
	if err := decodeStrict(data, &ff); err != nil {
		return nil, fmt.Errorf("%s: %w (want a list replicas: of {gpu, tp, count, max_num_seqs, max_num_batched_tokens})", path, err)
	}
	if len(ff.Replicas) == 0 {
		return nil, fmt.Errorf("%s: %w", path, errors.New("no replicas: entries"))
	}
	var out []simengine.Config
	for i, g := range ff.Replicas {
		cfg := base
		if g.GPU != "" {
			gpu, err := c.LookupGPU(g.GPU)
			if err != nil {
				return nil, fmt.Errorf("%s: replicas[%d]: %w", path, i, err)
			}
			cfg.GPU = gpu
		}
		if g.TP < 0 || g.Count < 0 || g.MaxNumSeqs < 0 || g.MaxNumBatchedTokens < 0 {
			return nil, fmt.Errorf("%s: replicas[%d]: tp, count and the limits must not be negative", path, i)
		}
		if g.TP > 0 {
			cfg.TP = g.TP
		}
		if g.MaxNumSeqs > 0 {
			cfg.MaxNumSeqs = g.MaxNumSeqs
		}
		if g.MaxNumBatchedTokens > 0 {
			cfg.MaxNumBatchedTokens = g.MaxNumBatchedTokens
		}
		if _, err := simengine.NewEngine(cfg); err != nil {
			return nil, fmt.Errorf("%s: replicas[%d] (%s, tp %d): %w", path, i, cfg.GPU.Name, cfg.TP, err)
		}
		n := max(g.Count, 1)
		if len(out)+n > maxFleetReplicas {
			return nil, fmt.Errorf("%s: more than %d replicas", path, maxFleetReplicas)
		}
		for range n {
			out = append(out, cfg)
		}
	}
	return out, nil
}
