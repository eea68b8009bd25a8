package stats

import (
	"math"
	"sync"

	"github.com/knee-dev/knee/internal/record"
)

// PromptWatchAfter is how many served prompts PromptWatch reads before it
// judges, and again after each judgement that found nothing.
const PromptWatchAfter = 16

// PromptWatch notices early in a run that the server serves prompts more
// than PromptOffLimitPct off the requested length, so the live output can
// warn before the run ends. Safe for concurrent use.
type PromptWatch struct {
	mu     sync.Mutex
	off    []float64
	warned bool
}

// Add reads one finished request; it returns the median off in percent
// and true once, the first time a batch of requests is off.
func (p *PromptWatch) Add(r *record.Request) (medianPct float64, warn bool) {
	if !r.OK() || r.TokenSource != record.TokensFromUsage || r.PromptTokensRequested <= 0 {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.warned {
		return 0, false
	}
	p.off = append(p.off, float64(r.InputTokens-r.PromptTokensRequested)/float64(r.PromptTokensRequested))
	if len(p.off) < PromptWatchAfter {
		return 0, false
	}
	med := 100 * Median(p.off)
	p.off = p.off[:0]
	if math.Abs(med) > PromptOffLimitPct {
		p.warned = true
		return med, true
	}
	return 0, false
}
