package simserver

import (
	"fmt"
	"strings"
	"testing"
)

// The server names a prompt's tokens block by block, so a repeated system
// prompt hits the engine's prefix cache across requests, and /metrics
// reports vLLM's prefix-cache counters in tokens; with caching off it does
// not.
func TestPrefixCacheAcrossRequests(t *testing.T) {
	for _, off := range []bool{false, true} {
		url, srv := startTest(t, func(c *Config) { c.Engine.NoPrefixCaching = off })
		system := strings.Repeat("harbor quiet ", 200) // 400 tokens in cl100k_base
		var in int
		for k, user := range []string{"first question here", "another question"} {
			body := fmt.Sprintf(`{"messages":[{"role":"system","content":%q},{"role":"user","content":%q}],"max_tokens":2}`, system, user)
			if resp, b := post(t, url, "/v1/chat/completions", body); resp.StatusCode != 200 {
				t.Fatalf("request %d: %d %s", k, resp.StatusCode, b)
			}
			if k == 0 {
				in = int(srv.EngineStats().PrefixCacheQueries)
			}
		}
		st := srv.EngineStats()
		mf := scrape(t, url)
		q, h := value(t, mf, "vllm:prefix_cache_queries_total", "", ""), value(t, mf, "vllm:prefix_cache_hits_total", "", "")
		if q != float64(st.PrefixCacheQueries) || h != float64(st.PrefixCacheHits) {
			t.Errorf("metrics say %v queries %v hits; engine %d and %d", q, h, st.PrefixCacheQueries, st.PrefixCacheHits)
		}
		if off {
			if q != 0 || h != 0 {
				t.Errorf("caching off: %v queries, %v hits; want 0", q, h)
			}
			continue
		}
		// Blocks wholly inside the shared 400-token system prompt hit: 25.
		if in < 400 || h != 400 {
			t.Errorf("first prompt %d tokens; second hit %v tokens, want 400 (25 full blocks of the system prompt)", in, h)
		}
	}
}
