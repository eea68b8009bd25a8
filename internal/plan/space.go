package plan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
)

// SpaceChoice is the search space a user chose for knee plan, as given:
// comma-separated GPU presets, TP degrees, engine limits and routers, the
// most replicas, and a cost file of GPU prices over the defaults.
type SpaceChoice struct {
	GPUs, TPs, MaxNumSeqs, MaxBatchedTokens, Routers string
	MaxReplicas                                      int
	CostFile                                         string
}

// Resolve looks the GPUs up in cat and reads the lists; prefixAffinity
// adds the prefix-affinity router (shared prefixes, routers not given).
// mostReplicas bounds --max-replicas. Errors are bad input naming the flag.
func (c SpaceChoice) Resolve(cat *simengine.Catalog, prefixAffinity bool, mostReplicas int) (Space, error) {
	space := Space{MaxReplicas: c.MaxReplicas}
	for _, name := range SplitList(c.GPUs) {
		g, err := cat.LookupGPU(name)
		if err != nil {
			return Space{}, badinput.Errorf("--gpus: %v", err)
		}
		space.GPUs = append(space.GPUs, g)
	}
	var err error
	if space.TPs, err = intList("tp", c.TPs, 1); err != nil {
		return Space{}, err
	}
	if space.MaxNumSeqs, err = intList("max-num-seqs", c.MaxNumSeqs, 0); err != nil {
		return Space{}, err
	}
	if space.MaxBatchedTokens, err = intList("max-num-batched-tokens", c.MaxBatchedTokens, 0); err != nil {
		return Space{}, err
	}
	routers := c.Routers
	if prefixAffinity {
		// Shared prefixes are what prefix affinity is for.
		routers += "," + sim.PrefixAffinity
	}
	for _, r := range SplitList(routers) {
		if !slices.Contains(sim.Routers, r) {
			return Space{}, badinput.Errorf("--routers: %q is not a router (want %s)", r, strings.Join(sim.Routers, ", "))
		}
		space.Routers = append(space.Routers, r)
	}
	switch {
	case len(space.GPUs) == 0 || len(space.Routers) == 0:
		return Space{}, badinput.Errorf("--gpus and --routers: give at least one each")
	case c.MaxReplicas < 1 || c.MaxReplicas > mostReplicas:
		return Space{}, badinput.Errorf("--max-replicas %d: want 1 to %d", c.MaxReplicas, mostReplicas)
	}
	return space, nil
}

// Costs are the GPU prices (the defaults, with the cost file's over them);
// every GPU of space must have one.
func (c SpaceChoice) Costs(cat *simengine.Catalog, space Space) (Costs, error) {
	costs := DefaultCosts
	if c.CostFile != "" {
		var err error
		if costs, err = LoadCosts(c.CostFile, cat, DefaultCosts); err != nil {
			return nil, badinput.Errorf("--cost-file: %v", err)
		}
	}
	for _, g := range space.GPUs {
		if _, ok := costs[g.Name]; !ok {
			return nil, badinput.Errorf("--gpus: no price for %s; give one in --cost-file (%s: USD per GPU-hour)", g.Name, strings.ToLower(g.Name))
		}
	}
	return costs, nil
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// intList reads a comma-separated list of whole numbers of at least least.
func intList(flagName, s string, least int) ([]int, error) {
	var out []int
	for _, p := range SplitList(s) {
		v, err := strconv.Atoi(p)
		if err != nil || v < least {
			return nil, badinput.Errorf("--%s: %q is not a whole number >= %d", flagName, p, least)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, badinput.Errorf("--%s: give at least one value", flagName)
	}
	return out, nil
}
