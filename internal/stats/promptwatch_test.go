package stats

import (
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// Prompts served 10% long warn once, after the first batch; exact ones,
// failures and requests without usage never do.
func TestPromptWatch(t *testing.T) {
	served := func(requested, got int) *record.Request {
		return &record.Request{TokenSource: record.TokensFromUsage, PromptTokensRequested: requested, InputTokens: got}
	}
	var exact PromptWatch
	for range 3 * PromptWatchAfter {
		if _, warn := exact.Add(served(100, 100)); warn {
			t.Fatal("exact prompts warned")
		}
	}
	var long PromptWatch
	warned := 0
	for i := range 3 * PromptWatchAfter {
		if r := served(100, 50); i%2 == 0 {
			r.Error = record.ErrTimeout // a failure does not count
			long.Add(r)
		}
		noUsage := served(100, 50)
		noUsage.TokenSource = record.TokensFromChunks
		long.Add(noUsage)
		med, warn := long.Add(served(100, 110))
		if warn {
			warned++
			if i != PromptWatchAfter-1 || med < 9.9 || med > 10.1 {
				t.Errorf("warned at request %d with median %.2f%%, want at %d with 10%%", i, med, PromptWatchAfter-1)
			}
		}
	}
	if warned != 1 {
		t.Errorf("warned %d times, want once", warned)
	}
}
