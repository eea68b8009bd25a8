package simserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
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

// A conversation's next turn sends the server's answer back as an assistant
// message: the server named the answer's tokens in the same blocks as the
// prompt's, so the next prompt's blocks have the same names up to the last
// full one of prompt and answer (the block straddling the boundary
// included), and its history hits all of them but the block holding the
// answer's last token, whose KV was never computed, as in vLLM.
func TestAnswerBlocksHitNextTurn(t *testing.T) {
	url, srv := startTest(t, nil)
	user1 := strings.Repeat("harbor quiet ", 100) + "first question" // 203 tokens: the answer starts mid-block
	const out = 50
	resp, b := post(t, url, "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"max_tokens":%d}`, user1, out))
	if resp.StatusCode != 200 {
		t.Fatalf("turn 1: %d %s", resp.StatusCode, b)
	}
	var r1 struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r1); err != nil || len(r1.Choices) != 1 {
		t.Fatalf("turn 1 response %s: %v", b, err)
	}
	in1 := r1.Usage.PromptTokens
	if in1%simengine.BlockTokens == 0 || r1.Usage.CompletionTokens != out {
		t.Fatalf("turn 1: %d prompt tokens (want a partial last block), %d completion tokens", in1, r1.Usage.CompletionTokens)
	}
	body2 := fmt.Sprintf(`{"messages":[{"role":"user","content":%q},{"role":"assistant","content":%q},{"role":"user","content":"and then?"}],"max_tokens":2}`,
		user1, r1.Choices[0].Message.Content)
	before := srv.EngineStats().PrefixCacheHits
	if resp, b := post(t, url, "/v1/chat/completions", body2); resp.StatusCode != 200 {
		t.Fatalf("turn 2: %d %s", resp.StatusCode, b)
	}
	// Blocks full of computed tokens: prompt and answer but its last token.
	wantHit := (in1 + out - 1) / simengine.BlockTokens * simengine.BlockTokens
	if got := srv.EngineStats().PrefixCacheHits - before; got != int64(wantHit) {
		t.Errorf("turn 2 hit %d tokens, want %d (turn 1: %d prompt + %d answer tokens)", got, wantHit, in1, out)
	}

	// The names themselves: turn 1's content (prompt, then the answer the
	// server streamed to request id) against turn 2's prompt, block by block.
	id, err := strconv.ParseInt(strings.TrimPrefix(r1.ID, "chatcmpl-"), 10, 64)
	if err != nil {
		t.Fatalf("turn 1 id %q", r1.ID)
	}
	parse := func(body string) *genRequest {
		req, _ := http.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		g, aerr := parseRequest(req, epChat, srv.tok.Encode, true, 0)
		if aerr != nil {
			t.Fatal(aerr.Message)
		}
		return g
	}
	c1 := parse(fmt.Sprintf(`{"messages":[{"role":"user","content":%q}]}`, user1)).content(id, out, srv.wordIDs)
	g2 := parse(body2)
	c2 := g2.content(id+1, 2, srv.wordIDs)
	full := (in1 + out) / simengine.BlockTokens
	if len(c1) != full+1 || len(c2) < full+1 {
		t.Fatalf("turn 1 named %d blocks, turn 2 %d; want %d full blocks of prompt and answer and a partial one", len(c1), len(c2), full)
	}
	for k := range full {
		if c1[k] != c2[k] || c1[k].Tokens != simengine.BlockTokens {
			t.Errorf("block %d: turn 1 %+v, turn 2 %+v", k, c1[k], c2[k])
		}
	}
	if c1[full].Tokens != int32((in1+out)%simengine.BlockTokens) || c1[full] == c2[full] {
		t.Errorf("the answer's last block: turn 1 %+v, turn 2 %+v; want a partial block, unlike turn 2's full one", c1[full], c2[full])
	}
	if g2.inputTokens != in1+out+len(srv.tok.Encode("and then?")) {
		t.Errorf("turn 2 has %d prompt tokens, want %d + %d + the new message", g2.inputTokens, in1, out)
	}
}
