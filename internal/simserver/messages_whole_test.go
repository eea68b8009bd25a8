package simserver

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/openai"
)

// A non-streaming /v1/messages request gets one message in Anthropic's
// shape (a text block, the stop reason, usage in input/output tokens), and
// knee's own probe of what the server adds to a prompt reads it.
func TestMessagesWhole(t *testing.T) {
	url, srv := startTest(t, nil)
	resp, b := post(t, url, "/v1/messages", `{"model":"llama-3.1-8b","max_tokens":5,"system":"be brief","messages":[{"role":"user","content":"tell me about the sea"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var m struct {
		ID, Type, Role, Model string
		Content               []struct{ Type, Text string }
		StopReason            string `json:"stop_reason"`
		Usage                 struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
		Timing *struct {
			TokenTimesMS []float64 `json:"token_times_ms"`
		} `json:"knee_timing"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	wantIn := tokens(srv, "tell me about the sea") + tokens(srv, "be brief")
	if m.Type != "message" || m.Role != "assistant" || m.Model == "" || len(m.Content) != 1 || m.Content[0].Type != "text" ||
		m.Content[0].Text == "" || m.StopReason != "max_tokens" || m.Usage.OutputTokens != 5 || m.Usage.InputTokens != wantIn ||
		m.Timing == nil || len(m.Timing.TokenTimesMS) != 5 {
		t.Errorf("message %+v, want one text block, stop max_tokens, 5 output and %d input tokens, 5 token times: %s", m, wantIn, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := openai.PromptTokens(ctx, http.DefaultClient, url+"/v1/messages", "", srv.Model(), "messages", "tell me about the sea")
	if err != nil || n != tokens(srv, "tell me about the sea") {
		t.Errorf("knee's prompt probe over /v1/messages: %d, %v; want %d", n, err, tokens(srv, "tell me about the sea"))
	}
}
