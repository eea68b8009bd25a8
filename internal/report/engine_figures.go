package report

import (
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
)

// SimEngineFigures are sim.Notes' figures for summary.json.
func SimEngineFigures(eng *simengine.Engine, res sim.Result) *EngineFigures {
	s := res.Engine
	f := &EngineFigures{Steps: s.Steps, Preemptions: s.Preemptions, Rejected: s.Rejected, VirtualTimeS: res.End.Seconds(),
		KVCapacityTokens: s.KVCapacityTokens, KVBlocks: s.KVBlocksTotal, PrefillTokens: s.PrefillTokens}
	if !eng.Config().NoPrefixCaching && s.PrefixCacheQueries > 0 {
		f.PrefixCache = &PrefixCacheFigures{HitTokens: s.PrefixCacheHits, QueryTokens: s.PrefixCacheQueries,
			HitRate: float64(s.PrefixCacheHits) / float64(s.PrefixCacheQueries)}
	}
	return f
}
