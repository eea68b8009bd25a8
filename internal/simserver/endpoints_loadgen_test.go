package simserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
)

// runAPI runs n requests of cfg's API against url, two at a time.
func runAPI(t *testing.T, url string, cfg loadgen.Config, n int64) *loadgen.Result {
	t.Helper()
	cfg.BaseURL, cfg.Concurrency, cfg.Requests, cfg.RequestTimeout = url, 2, n, 60*time.Second
	prompt := strings.TrimSpace(strings.Repeat("hello world ", 16))
	run, err := loadgen.Start(context.Background(), cfg, func(int64) loadgen.Request {
		return loadgen.Request{Prompt: prompt, PromptTokens: 32, MaxTokens: 5}
	})
	if err != nil {
		t.Fatal(err)
	}
	return run.Wait()
}

// knee's client against knee serve, every new API: each record whole,
// items records without a first token, messages with every token.
func TestClientSpeaksEveryEndpoint(t *testing.T) {
	url, srv := startTest(t, nil)
	prompt := strings.TrimSpace(strings.Repeat("hello world ", 16))
	promptTok := tokens(srv, prompt)
	for _, c := range []struct {
		name  string
		cfg   loadgen.Config
		items int
		input int // 0: not checked
	}{
		{"embeddings", loadgen.Config{API: openai.APIEmbeddings, Items: 4}, 4, 0},
		{"rerank vLLM", loadgen.Config{API: openai.APIRerank, Items: 3}, 3, 0},
		{"rerank TEI", loadgen.Config{API: openai.APIRerank, Items: 2, RerankPath: openai.RerankTEI}, 2, 0},
		{"messages", loadgen.Config{API: openai.APIMessages, APIKey: "sk-secret-key"}, 0, promptTok},
		{"chat with images", loadgen.Config{API: openai.APIChat, Images: 2, ImageWidth: 56, ImageHeight: 84, ImageFormat: "png"}, 0, promptTok + 2*2*3},
		{"messages with images", loadgen.Config{API: openai.APIMessages, Images: 1, ImageWidth: 30, ImageHeight: 30, ImageFormat: "jpeg"}, 0, promptTok + 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runAPI(t, url, c.cfg, 6)
			if len(res.Records) != 6 {
				t.Fatalf("%d records", len(res.Records))
			}
			for i := range res.Records {
				r := &res.Records[i]
				if !r.OK() {
					t.Fatalf("request %d: %s: %s", r.ID, r.Error, r.ErrorMessage)
				}
				e2e, ok := r.E2E()
				if !ok || e2e <= 0 {
					t.Errorf("request %d: E2E %v %v", r.ID, e2e, ok)
				}
				if r.Items != c.items {
					t.Errorf("request %d: %d items, want %d", r.ID, r.Items, c.items)
				}
				if c.items > 0 {
					if _, ok := r.TTFT(); ok || len(r.TokenTimes) > 0 {
						t.Errorf("request %d: an items answer has a TTFT", r.ID)
					}
					if r.TokenSource == record.TokensFromUsage && r.InputTokens < c.items*promptTok {
						t.Errorf("request %d: %d input tokens for %d texts of %d", r.ID, r.InputTokens, c.items, promptTok)
					}
					continue
				}
				if r.OutputTokens != 5 || len(r.TokenTimes) != 5 || r.TokenSource != record.TokensFromUsage {
					t.Errorf("request %d: %d output tokens, %d chunks, source %s", r.ID, r.OutputTokens, len(r.TokenTimes), r.TokenSource)
				}
				if c.input > 0 && r.InputTokens != c.input {
					t.Errorf("request %d: %d input tokens, want %d (the server's usage)", r.ID, r.InputTokens, c.input)
				}
				if r.ServerPhases == nil || len(r.ServerTokenTimes) != 5 {
					t.Errorf("request %d: no knee_timing read", r.ID)
				}
			}
		})
	}
}

// An injected fault on /v1/messages arrives as an error event mid-stream
// and is classified by its type (api_error: 5xx).
func TestClientClassifiesMessagesErrorEvent(t *testing.T) {
	url, _ := startTest(t, func(c *Config) { c.Faults.ErrorRate = 1 })
	res := runAPI(t, url, loadgen.Config{API: openai.APIMessages}, 3)
	for _, r := range res.Records {
		if r.Error != record.ErrHTTP5xx || !strings.Contains(r.ErrorMessage, "api_error") {
			t.Errorf("request %d: %s %q, want http_5xx from the api_error event", r.ID, r.Error, r.ErrorMessage)
		}
	}
}

// Requests of one run may each name their API (a mix's classes): each goes
// to its API's endpoint, is built and read as that API, with the items and
// images of that API only.
func TestClientMixedAPIsPerRequest(t *testing.T) {
	url, _ := startTest(t, nil)
	apis := []string{openai.APIChat, openai.APIEmbeddings, openai.APIMessages, openai.APIRerank, ""}
	prompt := strings.TrimSpace(strings.Repeat("hello world ", 16))
	run, err := loadgen.Start(context.Background(), loadgen.Config{BaseURL: url, API: openai.APICompletions, Concurrency: 3, Requests: 15,
		Items: 2, Images: 1, ImageWidth: 28, ImageHeight: 28, ImageFormat: "png", RequestTimeout: 60 * time.Second}, func(i int64) loadgen.Request {
		return loadgen.Request{Prompt: prompt, PromptTokens: 32, MaxTokens: 5, API: apis[i%int64(len(apis))]}
	})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Wait()
	if len(res.Records) != 15 {
		t.Fatalf("%d records", len(res.Records))
	}
	for _, r := range res.Records {
		api := apis[r.ID%int64(len(apis))]
		_, hasTTFT := r.TTFT()
		switch {
		case !r.OK():
			t.Errorf("request %d (%q): %s %s", r.ID, api, r.Error, r.ErrorMessage)
		case openai.ItemsAPI(api) && (r.Items != 2 || hasTTFT):
			t.Errorf("request %d (%s): %d items, TTFT %v", r.ID, api, r.Items, hasTTFT)
		case !openai.ItemsAPI(api) && (r.Items != 0 || !hasTTFT || r.OutputTokens != 5):
			t.Errorf("request %d (%q): %d items, TTFT %v, %d output tokens", r.ID, api, r.Items, hasTTFT, r.OutputTokens)
		}
	}
}
