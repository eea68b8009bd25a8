package simserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"image"
	_ "image/jpeg" // image.DecodeConfig reads the prompts' JPEGs
	_ "image/png"  // and PNGs
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// endpoint is what a request asks for: one of the generation APIs, or an
// answer of items (embeddings, rerank).
type endpoint uint8

const (
	epCompletions endpoint = iota
	epChat
	epMessages   // Anthropic's /v1/messages, streamed
	epEmbeddings // /v1/embeddings
	epRerank     // /v1/rerank, vLLM's request shape
	epRerankTEI  // /rerank, TEI's request shape
)

// chat: the prompt is a list of messages.
func (ep endpoint) chat() bool { return ep == epChat || ep == epMessages }

// items: answered whole with one item per input, nothing generated.
func (ep endpoint) items() bool { return ep >= epEmbeddings }

// promptParam names the request field holding the prompt, for errors.
func (ep endpoint) promptParam() string {
	switch ep {
	case epChat, epMessages:
		return "messages"
	case epEmbeddings:
		return "input"
	case epRerank:
		return "documents"
	case epRerankTEI:
		return "texts"
	}
	return "prompt"
}

// endpointOf maps a path to its endpoint.
func endpointOf(path string) (endpoint, bool) {
	switch path {
	case "/v1/chat/completions":
		return epChat, true
	case "/v1/completions":
		return epCompletions, true
	case "/v1/messages":
		return epMessages, true
	case "/v1/embeddings":
		return epEmbeddings, true
	case "/v1/rerank":
		return epRerank, true
	case "/rerank":
		return epRerankTEI, true
	}
	return 0, false
}

// anthropicType is the Anthropic error type of an HTTP status.
func anthropicType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// writeErrorAs writes e in the shape of the endpoint's API: Anthropic's
// {"type":"error","error":{"type","message"}} for /v1/messages, TEI's
// {"error","error_type"} for /rerank, else OpenAI's.
func writeErrorAs(w http.ResponseWriter, ep endpoint, e *apiError) {
	var b []byte
	switch ep {
	case epMessages:
		b, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": anthropicType(e.Status), "message": e.Message}})
	case epRerankTEI:
		b, _ = json.Marshal(map[string]string{"error": e.Message, "error_type": e.Type})
	default:
		writeError(w, e)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(e.Status)
	w.Write(append(b, '\n'))
}

// wireItems holds the fields of an embeddings or rerank request.
type wireItems struct {
	Model     *string         `json:"model"`
	Input     json.RawMessage `json:"input"`
	Query     *string         `json:"query"`
	Documents json.RawMessage `json:"documents"`
	Texts     json.RawMessage `json:"texts"`
}

// parseItems reads an embeddings or rerank body: the number of items and
// their tokens. A rerank pairs the query with each document, as vLLM's
// cross-encoders and TEI do, so each document costs the query's tokens too.
func parseItems(body []byte, ep endpoint, g *genRequest, count func(string) int) *apiError {
	var w wireItems
	if err := json.Unmarshal(body, &w); err != nil {
		return badRequest("", "invalid_json", "We could not parse the JSON body of your request: "+err.Error())
	}
	if w.Model != nil {
		g.model = *w.Model
	}
	param := ep.promptParam()
	raw := w.Input
	switch ep {
	case epRerank:
		raw = w.Documents
	case epRerankTEI:
		raw = w.Texts
	}
	texts, aerr := stringOrStrings(raw, param)
	if aerr != nil {
		return aerr
	}
	if len(texts) == 0 {
		return badRequest(param, "", fmt.Sprintf("'%s' must hold at least one text.", param))
	}
	query := 0
	if ep != epEmbeddings {
		if w.Query == nil {
			return badRequest("query", "", "Missing required parameter: 'query'.")
		}
		query = count(*w.Query)
	}
	g.items = len(texts)
	for _, t := range texts {
		g.inputTokens += query + count(t)
	}
	return nil
}

// stringOrStrings reads a string or an array of strings.
func stringOrStrings(raw json.RawMessage, param string) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest(param, "", fmt.Sprintf("Missing required parameter: '%s'.", param))
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest(param, "", err.Error())
		}
		return []string{s}, nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err != nil {
		return nil, badRequest(param, "", fmt.Sprintf("'%s' must be a string or an array of strings: %v", param, err))
	}
	return ss, nil
}

// QwenPatch is the side in pixels of what one image token covers in
// Qwen2-VL (14-pixel patches merged 2×2): the default image cost.
const QwenPatch = 28

// imageCost counts an image part's tokens: ⌈W/28⌉·⌈H/28⌉ from the image's
// own size (only its header is decoded), or perImage when set. ids names
// the tokens for the prefix cache: the same image, the same ids.
func imageCost(p wirePart, perImage int) (n int, ids []int, aerr *apiError) {
	var data string
	switch p.Type {
	case "image_url":
		if p.ImageURL == nil {
			return 0, nil, badRequest("image_url", "", "an image_url part needs {\"url\": ...}")
		}
		u := p.ImageURL.URL
		comma := strings.IndexByte(u, ',')
		if !strings.HasPrefix(u, "data:image/") || comma < 0 || !strings.HasSuffix(u[:comma], ";base64") {
			return 0, nil, badRequest("image_url", "", "knee serve reads images only as base64 data URLs (data:image/png;base64,...)")
		}
		data = u[comma+1:]
	case "image":
		if p.Source == nil || p.Source.Type != "base64" {
			return 0, nil, badRequest("source", "", "knee serve reads images only as {\"type\":\"base64\",\"media_type\":...,\"data\":...} sources")
		}
		data = p.Source.Data
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)))
	if err != nil {
		return 0, nil, badRequest("image", "invalid_image", "could not read the image (want PNG or JPEG): "+err.Error())
	}
	n = perImage
	if n <= 0 {
		n = ((cfg.Width + QwenPatch - 1) / QwenPatch) * ((cfg.Height + QwenPatch - 1) / QwenPatch)
	}
	h := fnv.New64a()
	h.Write([]byte(data))
	base := int(h.Sum64() >> 2)
	ids = make([]int, n)
	for i := range ids {
		ids[i] = base + i
	}
	return n, ids, nil
}

// embeddingDims is the length of knee serve's embeddings.
const embeddingDims = 256

// unit maps a hash to a value in [-1, 1).
func unit(h uint64) float64 { return float64(h>>11)/float64(1<<52) - 1 }

func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// appendItemsAnswer appends the body of an embeddings or rerank answer
// for request id with n items of the prompt tokens given.
func appendItemsAnswer(b []byte, ep endpoint, id int64, created int64, modelJSON []byte, n, prompt int) []byte {
	switch ep {
	case epEmbeddings:
		b = append(b, `{"id":"embd-`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `","object":"list","created":`...)
		b = strconv.AppendInt(b, created, 10)
		b = append(b, `,"model":`...)
		b = append(b, modelJSON...)
		b = append(b, `,"data":[`...)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"object":"embedding","embedding":[`...)
			for d := range embeddingDims {
				if d > 0 {
					b = append(b, ',')
				}
				v := unit(mix64(uint64(id)<<20 ^ uint64(i)<<10 ^ uint64(d)))
				b = strconv.AppendFloat(b, math.Round(v*1e4)/1e4, 'g', -1, 64)
			}
			b = append(b, "]}"...)
		}
		b = append(b, `],"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(prompt), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(prompt), 10)
		b = append(b, `,"completion_tokens":0}}`...)
		return append(b, '\n')
	}
	// Scores from the request and document, sorted best first as both
	// servers return them.
	idx := make([]int, n)
	score := make([]float64, n)
	for i := range idx {
		idx[i] = i
		score[i] = math.Round((unit(mix64(uint64(id)<<20^uint64(i)))+1)/2*1e6) / 1e6
	}
	sort.SliceStable(idx, func(a, c int) bool { return score[idx[a]] > score[idx[c]] })
	if ep == epRerankTEI {
		b = append(b, '[')
		for k, i := range idx {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"score":`...)
			b = strconv.AppendFloat(b, score[i], 'g', -1, 64)
			b = append(b, '}')
		}
		return append(b, "]\n"...)
	}
	b = append(b, `{"id":"rerank-`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `","model":`...)
	b = append(b, modelJSON...)
	b = append(b, `,"usage":{"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `},"results":[`...)
	for k, i := range idx {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"relevance_score":`...)
		b = strconv.AppendFloat(b, score[i], 'g', -1, 64)
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// Messages streams: Anthropic's events around the same token pacing. The
// template's prefix and suffix make each token a content_block_delta.

// newMessagesTemplate builds a stream's template for /v1/messages.
func newMessagesTemplate(id int64, modelJSON []byte, input int) chunkTemplate {
	t := chunkTemplate{chat: true, messages: true, input: input}
	h := make([]byte, 0, 64+len(modelJSON))
	h = append(h, `{"id":"msg_`...)
	h = strconv.AppendInt(h, id, 10)
	h = append(h, `","type":"message","role":"assistant","content":[],"model":`...)
	h = append(h, modelJSON...)
	t.head = h
	t.prefix = []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"")
	t.suffix = []byte("\"}}\n\n")
	return t
}

// appendMessagesStart is message_start, content_block_start and a ping.
func (t *chunkTemplate) appendMessagesStart(b []byte) []byte {
	b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":"...)
	b = append(b, t.head...)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(t.input), 10)
	b = append(b, `,"output_tokens":1}}}`+"\n\n"...)
	b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"...)
	return append(b, "event: ping\ndata: {\"type\": \"ping\"}\n\n"...)
}

// appendMessagesFinal is content_block_stop, message_delta (the stop
// reason, output tokens and knee_timing) and message_stop.
func (t *chunkTemplate) appendMessagesFinal(b []byte, reason string, completion int, tm *timing) []byte {
	stop := "end_turn"
	if reason == "length" {
		stop = "max_tokens"
	}
	b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"...)
	b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	b = append(b, stop...)
	b = append(b, `","stop_sequence":null},"usage":{"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, "},"...)
	b = appendTiming(b, tm)
	b = append(b, "}\n\n"...)
	return append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// appendMessagesWhole is a non-streaming /v1/messages answer, as
// Anthropic's API gives it: one message with one text block, the stop
// reason and usage (knee_timing beside them).
func (t *chunkTemplate) appendMessagesWhole(b []byte, id int64, n int, reason string, prompt int, tm *timing) []byte {
	stop := "end_turn"
	if reason == "length" {
		stop = "max_tokens"
	}
	b = append(b, `{"id":"msg_`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `","type":"message","role":"assistant"`...)
	b = append(b, t.head[modelAt(t.head):]...) // ,"model":"…"
	b = append(b, `,"content":[{"type":"text","text":"`...)
	for i := 0; i < n; i++ {
		b = append(b, word(id, i)...)
	}
	b = append(b, `"}],"stop_reason":"`...)
	b = append(b, stop...)
	b = append(b, `","stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, "},"...)
	b = appendTiming(b, tm)
	return append(b, "}\n"...)
}

// writeMessagesFault answers an injected fault on /v1/messages as
// Anthropic's API fails mid-stream: a 200 stream whose message_start is
// followed by an error event.
func writeMessagesFault(w http.ResponseWriter, id int64, modelJSON []byte, input int) {
	t := newMessagesTemplate(id, modelJSON, input)
	b := t.appendMessagesStart(nil)
	b = append(b, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"injected fault: the simulated server failed this request (--fault-error-rate)\"}}\n\n"...)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}
