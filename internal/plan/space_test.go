package plan

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
)

func TestSpaceChoiceResolve(t *testing.T) {
	t.Parallel()
	cat := simengine.NewCatalog()
	c := SpaceChoice{GPUs: "h100, a100-80gb", TPs: "1,2", MaxNumSeqs: "0", MaxBatchedTokens: "0,2048", Routers: sim.RoundRobin, MaxReplicas: 4}
	sp, err := c.Resolve(cat, true, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.GPUs) != 2 || len(sp.TPs) != 2 || len(sp.MaxBatchedTokens) != 2 || sp.MaxReplicas != 4 ||
		strings.Join(sp.Routers, ",") != sim.RoundRobin+","+sim.PrefixAffinity {
		t.Errorf("space %+v", sp)
	}
	if _, err := c.Costs(cat, sp); err != nil {
		t.Errorf("default prices: %v", err)
	}
	for _, b := range []struct {
		edit func(*SpaceChoice)
		want string
	}{
		{func(c *SpaceChoice) { c.TPs = "1,x" }, `--tp: "x" is not a whole number >= 1`},
		{func(c *SpaceChoice) { c.MaxNumSeqs = "" }, "--max-num-seqs: give at least one value"},
		{func(c *SpaceChoice) { c.Routers = "random" }, `--routers: "random" is not a router`},
		{func(c *SpaceChoice) { c.GPUs = "" }, "--gpus and --routers: give at least one each"},
		{func(c *SpaceChoice) { c.MaxReplicas = 65 }, "--max-replicas 65: want 1 to 64"},
	} {
		bad := c
		b.edit(&bad)
		if _, err := bad.Resolve(cat, false, 64); !badinput.Is(err) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: %v, want %q", bad, err, b.want)
		}
	}
}
