package simserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/openai"
)

func tokens(srv *Server, s string) int { return len(srv.tok.Encode(s)) }

// Embeddings: one vector per input, usage the inputs' tokens, and neither
// TTFT nor generation in /metrics (an embedding has no first token).
func TestEmbeddingsAnswer(t *testing.T) {
	url, srv := startTest(t, nil)
	inputs := []string{"the cat sat on the mat", "a dog", "embeddings have no first token at all"}
	want := 0
	for _, s := range inputs {
		want += tokens(srv, s)
	}
	in, _ := json.Marshal(inputs)
	for range 3 {
		resp, b := post(t, url, "/v1/embeddings", `{"model":"llama-3.1-8b","input":`+string(in)+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d: %s", resp.StatusCode, b)
		}
		a, err := openai.DecodeEmbeddings(b, len(inputs))
		if err != nil || a.Err != nil || a.Items != 3 || !a.HasUsage || a.PromptTokens != want {
			t.Fatalf("answer %+v %v, want 3 items and %d prompt tokens: %.300s", a, err, want, b)
		}
	}
	mf := scrape(t, url)
	if n := value(t, mf, "vllm:time_to_first_token_seconds", "", ""); n != 0 {
		t.Errorf("embeddings fed the TTFT histogram: %v samples", n)
	}
	if n := value(t, mf, "vllm:e2e_request_latency_seconds", "", ""); n != 3 {
		t.Errorf("e2e histogram has %v samples, want 3", n)
	}
	if n := value(t, mf, "vllm:generation_tokens_total", "", ""); n != 0 {
		t.Errorf("embeddings generated %v tokens", n)
	}
	// A bad request in OpenAI's shape.
	resp, b := post(t, url, "/v1/embeddings", `{"input":[]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"input"`) {
		t.Errorf("empty input: %d %s", resp.StatusCode, b)
	}
}

// Rerank on both paths: vLLM's shape answered with results and usage,
// TEI's with a bare array; a document costs the query's tokens too.
func TestRerankBothShapes(t *testing.T) {
	url, srv := startTest(t, nil)
	q, docs := "which animal", []string{"cats purr", "dogs bark loudly", "fish swim"}
	want := 0
	for _, d := range docs {
		want += tokens(srv, q) + tokens(srv, d)
	}
	dj, _ := json.Marshal(docs)
	resp, b := post(t, url, "/v1/rerank", fmt.Sprintf(`{"model":"llama-3.1-8b","query":%q,"documents":%s}`, q, dj))
	a, err := openai.DecodeRerank(b, 3)
	if resp.StatusCode != 200 || err != nil || a.Items != 3 || !a.HasUsage || a.PromptTokens != want {
		t.Fatalf("vLLM rerank %d %+v %v (want %d tokens): %s", resp.StatusCode, a, err, want, b)
	}
	resp, b = post(t, url, "/rerank", fmt.Sprintf(`{"query":%q,"texts":%s}`, q, dj))
	a, err = openai.DecodeRerank(b, 3)
	if resp.StatusCode != 200 || err != nil || a.Items != 3 || a.HasUsage || b[0] != '[' {
		t.Fatalf("TEI rerank %d %+v %v: %s", resp.StatusCode, a, err, b)
	}
	// TEI's error shape, recognised by the client's decoder.
	resp, b = post(t, url, "/rerank", `{"texts":["a"]}`)
	a, err = openai.DecodeRerank(b, 1)
	if resp.StatusCode != 400 || err != nil || a.Err == nil || !strings.Contains(a.Err.Message, "query") || a.Err.Type != "invalid_request_error" {
		t.Errorf("TEI error %d %+v %v: %s", resp.StatusCode, a, err, b)
	}
	if n := value(t, scrape(t, url), "vllm:time_to_first_token_seconds", "", ""); n != 0 {
		t.Errorf("rerank fed the TTFT histogram: %v samples", n)
	}
}

// A Messages stream has Anthropic's events in order, one delta per token,
// the usage in message_start and message_delta, on both write paths.
func TestMessagesStream(t *testing.T) {
	for _, nh := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoHijack=%v", nh), func(t *testing.T) {
			url, srv := startTest(t, func(c *Config) { c.NoHijack = nh })
			prompt := "tell me about the sea"
			resp, b := post(t, url, "/v1/messages", fmt.Sprintf(`{"model":"llama-3.1-8b","max_tokens":7,"system":"be brief","stream":true,"messages":[{"role":"user","content":%q}]}`, prompt))
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			var types []string
			for _, line := range strings.Split(string(b), "\n") {
				if ty, ok := strings.CutPrefix(line, "event: "); ok {
					types = append(types, ty)
				}
			}
			wantTypes := "message_start content_block_start ping " + strings.Repeat("content_block_delta ", 7) + "content_block_stop message_delta message_stop"
			if strings.Join(types, " ") != wantTypes {
				t.Errorf("events %v", types)
			}
			var c openai.Chunk
			content, in, out, stop, done := 0, 0, 0, "", false
			for _, ev := range sseEvents(t, b) {
				if err := openai.DecodeMessages([]byte(ev), &c); err != nil || c.Err != nil {
					t.Fatalf("%s: %v %v", ev, err, c.Err)
				}
				if c.Content {
					content++
				}
				if c.HasUsage {
					out = c.CompletionTokens
					if !c.NoPromptTokens {
						in = c.PromptTokens
					}
				}
				if c.FinishReason != "" {
					stop = c.FinishReason
				}
				done = done || c.Done
				if c.Timing != nil && len(c.Timing.TokenTimesMS) != 7 {
					t.Errorf("knee_timing has %d token times", len(c.Timing.TokenTimesMS))
				}
			}
			if content != 7 || out != 7 || in != tokens(srv, prompt)+tokens(srv, "be brief") || stop != "max_tokens" || !done {
				t.Errorf("content %d, output %d, input %d, stop %q, done %v", content, out, in, stop, done)
			}
		})
	}
}

// /v1/messages fails in Anthropic's shapes: an error object with its type
// (an injected fault too, answered whole), and an injected fault as an
// error event mid-stream.
func TestMessagesErrorsAreAnthropic(t *testing.T) {
	url, _ := startTest(t, func(c *Config) { c.Faults.ErrorRate = 1 })
	for body, wantType := range map[string]string{
		`{"model":"llama-3.1-8b","stream":true,"messages":[{"role":"user","content":"x"}]}`:           "invalid_request_error",
		`{"model":"no-such","max_tokens":3,"stream":true,"messages":[{"role":"user","content":"x"}]}`: "not_found_error",
		// Whole (not streamed), an injected fault is Anthropic's error object.
		`{"model":"llama-3.1-8b","max_tokens":3,"messages":[{"role":"user","content":"x"}]}`: "api_error",
	} {
		resp, b := post(t, url, "/v1/messages", body)
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode < 400 || e.Type != "error" || e.Error.Type != wantType || e.Error.Message == "" {
			t.Errorf("%s: %d %s, want a %s", body, resp.StatusCode, b, wantType)
		}
	}
	resp, b := post(t, url, "/v1/messages", `{"model":"llama-3.1-8b","max_tokens":3,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	evs := sseEvents(t, b)
	var c openai.Chunk
	if resp.StatusCode != 200 || len(evs) == 0 || openai.DecodeMessages([]byte(evs[len(evs)-1]), &c) != nil || c.Err == nil || c.Err.Code != 500 {
		t.Errorf("injected fault: %d %s", resp.StatusCode, b)
	}
}

// An image costs ⌈W/28⌉·⌈H/28⌉ tokens, or --image-tokens; in chat as a
// data URL and in messages as a base64 source.
func TestImageTokens(t *testing.T) {
	img, err := openai.SyntheticImage(3, 300, 200, "jpeg")
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString(img.Data)
	chat := `{"model":"llama-3.1-8b","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,` + enc + `"}}]}]}`
	msgs := `{"model":"llama-3.1-8b","max_tokens":1,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"` + enc + `"}}]}]}`
	for _, per := range []int{0, 500} {
		url, srv := startTest(t, func(c *Config) { c.ImageTokens = per })
		want := tokens(srv, "what is this") + 11*8 // ⌈300/28⌉ × ⌈200/28⌉
		if per > 0 {
			want = tokens(srv, "what is this") + per
		}
		resp, b := post(t, url, "/v1/chat/completions", chat)
		var v struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		if json.Unmarshal(b, &v); resp.StatusCode != 200 || v.Usage.PromptTokens != want {
			t.Errorf("image tokens %d: chat usage %d, want %d: %.300s", per, v.Usage.PromptTokens, want, b)
		}
		_, b = post(t, url, "/v1/messages", msgs)
		var c openai.Chunk
		evs := sseEvents(t, b)
		if len(evs) == 0 || openai.DecodeMessages([]byte(evs[0]), &c) != nil || c.PromptTokens != want {
			t.Errorf("image tokens %d: messages input %d, want %d", per, c.PromptTokens, want)
		}
	}
	url, _ := startTest(t, nil)
	resp, b := post(t, url, "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://example.com/x.png"}}]}]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "data URL") {
		t.Errorf("remote image URL: %d %s", resp.StatusCode, b)
	}
}
