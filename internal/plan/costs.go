package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// Costs is the price of one GPU for an hour, in USD, by GPU preset name.
type Costs map[string]float64

// DefaultCosts are assumed on-demand cloud prices per GPU-hour (late 2025):
// A100-80GB and H100-SXM are the list prices of a large GPU cloud (Lambda:
// $1.79 and $2.99 per GPU-hour in 8-GPU instances); the others are typical
// market rates, rounded. Prices move and differ between providers and
// commitments: give yours with a cost file (LoadCosts).
var DefaultCosts = Costs{
	"A100-40GB": 1.29,
	"A100-80GB": 1.79,
	"H100-SXM":  2.99,
	"H200":      3.79,
	"B200":      5.99,
	"L4":        0.80,
	"L40S":      1.20,
	"MI300X":    2.50,
}

// maxCostsBytes bounds a cost file: a few lines, one per GPU.
const maxCostsBytes = 1 << 20

// LoadCosts reads a YAML map of GPU name (a preset name or alias) to USD
// per GPU-hour, over the defaults: `h100: 2.49`.
func LoadCosts(path string, cat *simengine.Catalog, base Costs) (Costs, error) {
	data, err := badinput.ReadFile(path, maxCostsBytes, "a map of GPU name to USD per GPU-hour (h100: 2.99)")
	if err != nil {
		return nil, err
	}
	var raw map[string]float64
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: want a map of GPU name to USD per GPU-hour (h100: 2.99): %v", path, err)
	}
	out := Costs{}
	for k, v := range base {
		out[k] = v
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := raw[k]
		g, err := cat.LookupGPU(k)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %s: price %v, want a positive USD per GPU-hour", path, k, v)
		}
		out[g.Name] = v
	}
	return out, nil
}
