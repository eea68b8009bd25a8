package report

import (
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
)

// The figures carry the engine's counts; the prefix cache only when it is
// on and was asked.
func TestSimEngineFigures(t *testing.T) {
	cfg := enginetest.H100Llama8B(t, 1)
	eng, err := simengine.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := sim.Result{End: 1500 * time.Millisecond, Engine: simengine.EngineStats{Steps: 9, Preemptions: 2, PrefixCacheHits: 10, PrefixCacheQueries: 40}}
	f := SimEngineFigures(eng, res)
	if f.Steps != 9 || f.Preemptions != 2 || f.VirtualTimeS != 1.5 || f.PrefixCache == nil || f.PrefixCache.HitRate != 0.25 {
		t.Errorf("figures %+v, prefix cache %+v", f, f.PrefixCache)
	}
	res.Engine.PrefixCacheQueries = 0
	if f := SimEngineFigures(eng, res); f.PrefixCache != nil {
		t.Errorf("nothing looked up: prefix cache %+v", f.PrefixCache)
	}
}
