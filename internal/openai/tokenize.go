package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/knee-dev/knee/internal/redact"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Servers that tokenize on request, at POST {root}/tokenize:
//
//   - vLLM: {"model", "messages": [...]} applies the chat template (with the
//     generation prompt, as a chat request does) or {"model", "prompt"};
//     the answer is {"count", "max_model_len", "tokens"}.
//   - SGLang: {"model", "prompt"} (newer versions also take "messages");
//     the answer has "tokens" and "count".
//   - llama.cpp's server: {"content", "add_special"}; the answer is
//     {"tokens": [...]}. It does not apply the chat template: the overhead
//     of the template is measured once with a real request (PromptTokens).
//
// ProbeTokenize tries these shapes in that order and keeps the first the
// server answers with a count.

// ServerTokenize counts tokens with a server's /tokenize.
type ServerTokenize struct {
	client   *http.Client
	endpoint string
	apiKey   string
	model    string
	// Shape is the request that worked: "messages" (the chat template is
	// applied by the server), "prompt" or "content" (text only).
	Shape string
}

// ErrNoTokenize means the server has no /tokenize knee can use.
var ErrNoTokenize = errors.New("no usable /tokenize")

// ProbeTokenize finds the server's /tokenize under baseURL (a trailing
// /v1 is dropped: vLLM, SGLang and llama.cpp serve it at the root). For
// the chat API the messages shape is tried first, so the count includes
// the chat template where the server can apply it.
func ProbeTokenize(ctx context.Context, client *http.Client, baseURL, apiKey, model, api string) (*ServerTokenize, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("base URL %q: want http://HOST[:PORT][/v1]", baseURL)
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + "/tokenize"
	u.RawPath, u.RawQuery = "", ""
	t := &ServerTokenize{client: client, endpoint: u.String(), apiKey: apiKey, model: model}
	shapes := []string{"prompt", "content"}
	if api == APIChat || api == "" {
		shapes = []string{"messages", "prompt", "content"}
	}
	var last error
	for _, shape := range shapes {
		t.Shape = shape
		withText, err1 := t.count(ctx, "hello hello hello")
		if err1 != nil {
			last = err1
			continue
		}
		without, err2 := t.count(ctx, "hello")
		if err2 != nil || withText <= without {
			// A server that ignores the field it does not know counts
			// every text alike: this shape is not being read.
			last = fmt.Errorf("%s: the %s shape counts %q and %q alike", redact.URL(t.endpoint), shape, "hello hello hello", "hello")
			continue
		}
		return t, nil
	}
	return nil, fmt.Errorf("%w at %s: %v", ErrNoTokenize, redact.URL(t.endpoint), redact.Text(fmt.Sprint(last)))
}

// Describe names the endpoint and shape for reports.
func (t *ServerTokenize) Describe() string {
	if t.Shape == "messages" {
		return "the server's /tokenize (" + redact.URL(t.endpoint) + ", chat template applied)"
	}
	return "the server's /tokenize (" + redact.URL(t.endpoint) + ")"
}

// Count returns the number of tokens the server makes of text.
func (t *ServerTokenize) Count(ctx context.Context, text string) (int, error) {
	return t.count(ctx, text)
}

func (t *ServerTokenize) count(ctx context.Context, text string) (int, error) {
	var body []byte
	switch t.Shape {
	case "messages":
		body = append(append([]byte(`{"model":`), jsonString(t.model)...), `,"messages":[{"role":"user","content":`...)
		body = append(append(body, jsonString(text)...), "}]}"...)
	case "prompt":
		body = append(append([]byte(`{"model":`), jsonString(t.model)...), `,"prompt":`...)
		body = append(append(body, jsonString(text)...), '}')
	default:
		body = append(append([]byte(`{"content":`), jsonString(text)...), `,"add_special":true}`...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if t.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.apiKey)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("tokenize %s: HTTP %d: %s", redact.URL(t.endpoint), resp.StatusCode, firstLine(b))
	}
	var out struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("tokenize %s: not JSON: %s", redact.URL(t.endpoint), firstLine(b))
	}
	switch {
	case out.Count != nil:
		return *out.Count, nil
	case out.Tokens != nil:
		return len(out.Tokens), nil
	}
	return 0, fmt.Errorf("tokenize %s: the answer has neither count nor tokens: %s", redact.URL(t.endpoint), firstLine(b))
}

// PromptTokens sends one tiny non-streaming request with text as the
// prompt and returns the server's usage.prompt_tokens: what it really
// counts, chat template included (Ollama's native API: prompt_eval_count).
func PromptTokens(ctx context.Context, client *http.Client, endpoint, apiKey, model, api, text string) (int, error) {
	p := Params{API: api, Model: model, Prompt: text, MaxTokens: 1, NoStream: true}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(AppendBody(nil, p)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, firstLine(b))
	}
	var out struct {
		Usage *struct {
			PromptTokens *int `json:"prompt_tokens"`
			InputTokens  *int `json:"input_tokens"` // the Messages API's name
		} `json:"usage"`
		PromptEvalCount *int `json:"prompt_eval_count"` // Ollama's native API
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("the answer is not JSON: %s", firstLine(b))
	}
	switch {
	case out.Usage != nil && out.Usage.PromptTokens != nil:
		return *out.Usage.PromptTokens, nil
	case out.Usage != nil && out.Usage.InputTokens != nil:
		return *out.Usage.InputTokens, nil
	case out.PromptEvalCount != nil:
		return *out.PromptEvalCount, nil
	}
	return 0, fmt.Errorf("the answer has no usage.prompt_tokens: %s", firstLine(b))
}

func jsonString(s string) []byte { return AppendString(nil, s) }

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
