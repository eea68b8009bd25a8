package simserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/knee-dev/knee/internal/simengine"
)

// genRequest is what the server needs of a chat or completions request.
type genRequest struct {
	ep           endpoint
	chat         bool
	items        int    // embeddings inputs or rerank documents; 0 for generation
	model        string // "" = the served model
	stream       bool
	includeUsage bool
	inputTokens  int
	named        bool         // prefix caching: prompt names the prompt's tokens
	prompt       promptHasher // the prompt's tokens, block by block, the last block open
	maxTokens    int          // 0 = not given
	minTokens    int
}

// wireRequest holds the fields of both endpoints that the server reads;
// unknown fields are accepted and ignored, as OpenAI-compatible servers do.
type wireRequest struct {
	Model               *string          `json:"model"`
	Messages            *json.RawMessage `json:"messages"`
	Prompt              *json.RawMessage `json:"prompt"`
	Stream              *bool            `json:"stream"`
	StreamOptions       *json.RawMessage `json:"stream_options"`
	MaxTokens           *int             `json:"max_tokens"`
	MaxCompletionTokens *int             `json:"max_completion_tokens"`
	MinTokens           *int             `json:"min_tokens"`
	IgnoreEOS           *bool            `json:"ignore_eos"`
	N                   *int             `json:"n"`
	System              *json.RawMessage `json:"system"` // Anthropic's system prompt
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
	Source *struct { // Anthropic's image part
		Type string `json:"type"`
		Data string `json:"data"`
	} `json:"source"`
}

const maxBodyBytes = 64 << 20

// parseRequest reads and validates a request body. encode tokenizes a piece
// of prompt text; with content set, the prompt's tokens are also named block
// by block (g.content) so the engine's prefix cache sees the reuse.
// imageTokens > 0 is every image's cost (else imageCost's patches).
func parseRequest(r *http.Request, ep endpoint, encode func(string) []int, content bool, imageTokens int) (*genRequest, *apiError) {
	chat := ep.chat()
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
				Message: fmt.Sprintf("request body over %d bytes", maxBodyBytes)}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error",
				Message: "the request body did not arrive in time"}
		}
		if errors.Is(err, errBodiesOverBudget) {
			return nil, bodiesBusy()
		}
		return nil, badRequest("", "", "could not read the request body: "+err.Error())
	}
	if ep.items() {
		g := &genRequest{ep: ep}
		count := func(s string) int { return len(encode(s)) }
		if aerr := parseItems(body, ep, g, count); aerr != nil {
			return nil, aerr
		}
		return g, nil
	}
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&w); err != nil {
		return nil, badRequest("", "invalid_json", "We could not parse the JSON body of your request: "+err.Error()+
			". The OpenAI API expects a JSON payload.")
	}
	if dec.More() {
		return nil, badRequest("", "invalid_json", "We could not parse the JSON body of your request: trailing data after the JSON object.")
	}
	g := &genRequest{ep: ep, chat: chat}
	if w.Model != nil {
		g.model = *w.Model
	}
	if w.Stream != nil {
		g.stream = *w.Stream
	}
	if w.StreamOptions != nil && string(*w.StreamOptions) != "null" {
		if !g.stream {
			return nil, badRequest("stream_options", "", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		var so struct {
			IncludeUsage *bool `json:"include_usage"`
		}
		if err := json.Unmarshal(*w.StreamOptions, &so); err != nil {
			return nil, badRequest("stream_options", "", "stream_options must be an object such as {\"include_usage\": true}: "+err.Error())
		}
		g.includeUsage = so.IncludeUsage != nil && *so.IncludeUsage
	}
	if w.N != nil && *w.N != 1 {
		return nil, badRequest("n", "", fmt.Sprintf("n=%d is not supported by knee's simulated server (want 1)", *w.N))
	}
	switch {
	case w.MaxTokens != nil:
		g.maxTokens = *w.MaxTokens
		if g.maxTokens < 1 {
			return nil, badRequest("max_tokens", "", fmt.Sprintf("max_tokens must be at least 1, got %d.", g.maxTokens))
		}
	case w.MaxCompletionTokens != nil:
		g.maxTokens = *w.MaxCompletionTokens
		if g.maxTokens < 1 {
			return nil, badRequest("max_completion_tokens", "", fmt.Sprintf("max_completion_tokens must be at least 1, got %d.", g.maxTokens))
		}
	}
	if w.MinTokens != nil {
		g.minTokens = *w.MinTokens
		if g.minTokens < 0 || (g.maxTokens > 0 && g.minTokens > g.maxTokens) {
			return nil, badRequest("min_tokens", "", fmt.Sprintf("min_tokens must be between 0 and max_tokens (%d), got %d.", g.maxTokens, g.minTokens))
		}
	}
	if ep == epMessages && w.MaxTokens == nil {
		// The Messages API requires max_tokens, streamed or whole.
		return nil, badRequest("max_tokens", "", "max_tokens: Field required")
	}
	var perr *apiError
	var ph promptHasher
	count := func(s string) int { return len(encode(s)) }
	addIDs := func([]int) {}
	if content {
		addIDs = ph.add
		count = func(s string) int {
			ids := encode(s)
			ph.add(ids)
			return len(ids)
		}
	}
	if chat {
		image := func(p wirePart) (int, *apiError) {
			n, ids, aerr := imageCost(p, imageTokens)
			if content {
				ph.add(ids)
			}
			return n, aerr
		}
		if w.System != nil && ep == epMessages {
			n, aerr := countContent(*w.System, "system", count, image)
			if aerr != nil {
				return nil, aerr
			}
			g.inputTokens += n
		}
		var n int
		n, perr = countMessages(w.Messages, count, image)
		g.inputTokens += n
	} else {
		g.inputTokens, perr = countPrompt(w.Prompt, count, addIDs)
	}
	if perr != nil {
		return nil, perr
	}
	if content {
		g.named, g.prompt = true, ph
	}
	return g, nil
}

// content names the request's tokens for the engine's prefix cache: the
// prompt's, then the answer's that the server will stream (word(id, i) for
// i < out, each word's token ids in wordIDs), in the same run of blocks, as
// vLLM hashes the tokens it generates. A later turn that sends the answer
// back as an assistant message names the same blocks, so its history hits
// up to the block holding the answer's last token.
func (g *genRequest) content(id int64, out int, wordIDs *[len(words)][]int) []simengine.Segment {
	if !g.named {
		return nil
	}
	if g.inputTokens > 0 { // else the engine's one (BOS) token is unnamed
		for i := range out {
			g.prompt.add(wordIDs[wordIndex(id, i)])
		}
	}
	return g.prompt.finish()
}

// countMessages counts the tokens of the messages' text. No chat template is
// applied: the simulated model's prompt is exactly the contents, so a prompt
// built to N tokens is reported as N prompt tokens.
func countMessages(raw *json.RawMessage, count func(string) int, image func(wirePart) (int, *apiError)) (int, *apiError) {
	if raw == nil || string(*raw) == "null" {
		return 0, badRequest("messages", "", "Missing required parameter: 'messages'.")
	}
	var msgs []wireMessage
	if err := json.Unmarshal(*raw, &msgs); err != nil {
		return 0, badRequest("messages", "", "'messages' must be an array of {role, content} objects: "+err.Error())
	}
	if len(msgs) == 0 {
		return 0, badRequest("messages", "", "'messages' must contain at least one message.")
	}
	n := 0
	for i, m := range msgs {
		if m.Role == "" {
			return 0, badRequest(fmt.Sprintf("messages.[%d].role", i), "", fmt.Sprintf("Missing required parameter: 'messages.[%d].role'.", i))
		}
		k, aerr := countContent(m.Content, fmt.Sprintf("messages.[%d].content", i), count, image)
		if aerr != nil {
			return 0, aerr
		}
		n += k
	}
	return n, nil
}

// countContent counts one message's content: a string, or parts of text
// and images.
func countContent(raw json.RawMessage, param string, count func(string) int, image func(wirePart) (int, *apiError)) (int, *apiError) {
	c := bytes.TrimSpace(raw)
	switch {
	case len(c) == 0 || string(c) == "null":
		// an assistant message with tool calls may have no content
		return 0, nil
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return 0, badRequest(param, "", err.Error())
		}
		return count(s), nil
	case c[0] == '[':
		var parts []wirePart
		if err := json.Unmarshal(c, &parts); err != nil {
			return 0, badRequest(param, "", "content parts must be objects such as {\"type\":\"text\",\"text\":\"...\"}: "+err.Error())
		}
		n := 0
		for _, p := range parts {
			if p.Type == "image_url" || p.Type == "image" {
				k, aerr := image(p)
				if aerr != nil {
					return 0, aerr
				}
				n += k
				continue
			}
			n += count(p.Text)
		}
		return n, nil
	}
	return 0, badRequest(param, "", "content must be a string or an array of content parts")
}

// countPrompt counts a completions prompt: a string, a one-element array of
// strings, or an array of token ids.
func countPrompt(raw *json.RawMessage, count func(string) int, addIDs func([]int)) (int, *apiError) {
	if raw == nil || string(*raw) == "null" {
		return 0, badRequest("prompt", "", "Missing required parameter: 'prompt'.")
	}
	c := bytes.TrimSpace(*raw)
	if len(c) > 0 && c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return 0, badRequest("prompt", "", err.Error())
		}
		return count(s), nil
	}
	var strs []string
	if err := json.Unmarshal(c, &strs); err == nil {
		if len(strs) != 1 {
			return 0, badRequest("prompt", "", fmt.Sprintf("a batch of %d prompts is not supported by knee's simulated server (send one)", len(strs)))
		}
		return count(strs[0]), nil
	}
	var ids []int
	if err := json.Unmarshal(c, &ids); err == nil {
		addIDs(ids)
		return len(ids), nil
	}
	return 0, badRequest("prompt", "", "'prompt' must be a string, an array of one string, or an array of token ids")
}

// promptHasher names a prompt's tokens in blocks of the engine's block size:
// each full block a segment whose id hashes its token ids (the engine chains
// the ids, so equal ids mean equal prefixes too). Messages are joined with no
// template, as the token count is; the answer's tokens continue the blocks.
type promptHasher struct {
	segs []simengine.Segment
	h    uint64
	n    int32
}

func (p *promptHasher) add(ids []int) {
	for _, id := range ids {
		p.h = (p.h ^ uint64(id)) * 0x100000001b3 // FNV-1a over token ids
		if p.n++; p.n == simengine.BlockTokens {
			p.flush()
		}
	}
}

func (p *promptHasher) flush() {
	p.segs = append(p.segs, simengine.Segment{ID: p.h | 1, Tokens: p.n}) // 0 means unique
	p.h, p.n = 0, 0
}

func (p *promptHasher) finish() []simengine.Segment {
	if p.n > 0 {
		p.flush()
	}
	return p.segs
}
