package openai

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The two streaming APIs.
const (
	APIChat        = "chat"        // POST /v1/chat/completions, one user message
	APICompletions = "completions" // POST /v1/completions, a raw prompt
	APIOllama      = "ollama"      // POST /api/chat, Ollama's native API: NDJSON stream with server durations
)

// Endpoint returns the URL for api under baseURL. A base URL may end in
// "/v1" or not ("http://host:8000" and "http://host:8000/v1" both work).
func Endpoint(baseURL, api string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want http://HOST[:PORT][/v1]", baseURL)
	}
	var tail string
	switch api {
	case APIChat, "":
		tail = "/chat/completions"
	case APICompletions:
		tail = "/completions"
	case APIEmbeddings:
		tail = "/embeddings"
	case APIRerank:
		tail = "/rerank"
	case APIMessages:
		tail = "/messages"
	case APIOllama:
		// The native API lives beside /v1, not under it.
		u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + "/api/chat"
		u.RawPath = ""
		return u.String(), nil
	default:
		return "", fmt.Errorf("api %q: want one of %s", api, strings.Join(APIs, ", "))
	}
	path := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(path, "/v1") {
		path += "/v1"
	}
	u.Path = path + tail
	u.RawPath = ""
	return u.String(), nil
}

// Params are the fields of one streaming request.
type Params struct {
	API       string // APIChat (default) or APICompletions
	Model     string
	Prompt    string
	MaxTokens int // max_tokens; 0 leaves it to the server
	// IgnoreEOS sends "ignore_eos": true (vLLM, SGLang): generation runs to
	// max_tokens, so output lengths are what the workload asked for.
	IgnoreEOS bool
	// MinTokens sends "min_tokens" (vLLM); 0 sends nothing.
	MinTokens int
	// ContinuousUsage asks vLLM for usage on every chunk
	// (stream_options.continuous_usage_stats), which tells how many tokens
	// each chunk carried. Servers that do not know the field may reject it.
	ContinuousUsage bool
	// NoStream builds a non-streaming request (used by Probe).
	NoStream bool
	// Temperature is sent when HasTemperature (else the server's default).
	Temperature    float64
	HasTemperature bool
	// History is the conversation before Prompt (multi-turn sessions):
	// chat sends it as messages before the user's; completions prefixes
	// the prompt with its contents.
	History []Message
	// Items is the number of inputs of an embeddings request, or of
	// documents of a rerank request (0: 1), each derived from Prompt
	// (Texts); RerankPath picks the rerank request's shape.
	Items      int
	RerankPath string
	// Images go with the user's prompt (chat and messages).
	Images []Image
}

// Message is one earlier message of a conversation.
type Message struct {
	Role, Content string // "user" or "assistant"
}

// appendMessages appends the history and then the user's prompt as a
// messages array; anthropic shapes the prompt's images as the Messages
// API wants them.
func appendMessages(dst []byte, p Params, anthropic bool) []byte {
	dst = append(dst, `,"messages":[`...)
	for _, m := range p.History {
		dst = append(dst, `{"role":`...)
		dst = AppendString(dst, m.Role)
		dst = append(dst, `,"content":`...)
		dst = AppendString(dst, m.Content)
		dst = append(dst, "},"...)
	}
	dst = append(dst, `{"role":"user","content":`...)
	dst = appendUserContent(dst, p, anthropic)
	return append(dst, "}]"...)
}

// AppendBody appends the JSON request body for p to dst. Streaming bodies
// ask for usage at the end of the stream (stream_options.include_usage).
func AppendBody(dst []byte, p Params) []byte {
	switch p.API {
	case APIOllama:
		return appendOllamaBody(dst, p)
	case APIEmbeddings, APIRerank:
		return appendItemsBody(dst, p)
	case APIMessages:
		return appendMessagesBody(dst, p)
	}
	dst = append(dst, `{"model":`...)
	dst = AppendString(dst, p.Model)
	if p.API == APICompletions {
		dst = append(dst, `,"prompt":`...)
		prompt := p.Prompt
		if len(p.History) > 0 {
			var b strings.Builder
			for _, m := range p.History {
				b.WriteString(m.Content)
			}
			b.WriteString(p.Prompt)
			prompt = b.String()
		}
		dst = AppendString(dst, prompt)
	} else {
		dst = appendMessages(dst, p, false)
	}
	if p.MaxTokens > 0 {
		dst = append(dst, `,"max_tokens":`...)
		dst = strconv.AppendInt(dst, int64(p.MaxTokens), 10)
	}
	if p.MinTokens > 0 {
		dst = append(dst, `,"min_tokens":`...)
		dst = strconv.AppendInt(dst, int64(p.MinTokens), 10)
	}
	if p.IgnoreEOS {
		dst = append(dst, `,"ignore_eos":true`...)
	}
	if p.HasTemperature {
		dst = append(dst, `,"temperature":`...)
		dst = strconv.AppendFloat(dst, p.Temperature, 'g', -1, 64)
	}
	if p.NoStream {
		dst = append(dst, `,"stream":false`...)
	} else {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true`...)
		if p.ContinuousUsage {
			dst = append(dst, `,"continuous_usage_stats":true`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendOllamaBody is the /api/chat body: one user message, streamed, with
// max_tokens as options.num_predict. Ollama has no ignore_eos or min_tokens.
func appendOllamaBody(dst []byte, p Params) []byte {
	dst = append(dst, `{"model":`...)
	dst = AppendString(dst, p.Model)
	dst = appendMessages(dst, p, false)
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, !p.NoStream)
	dst = append(dst, `,"options":{`...)
	sep := ""
	if p.MaxTokens > 0 {
		dst = append(dst, `"num_predict":`...)
		dst = strconv.AppendInt(dst, int64(p.MaxTokens), 10)
		sep = ","
	}
	if p.HasTemperature {
		dst = append(dst, sep...)
		dst = append(dst, `"temperature":`...)
		dst = strconv.AppendFloat(dst, p.Temperature, 'g', -1, 64)
	}
	return append(dst, "}}"...)
}

const hexDigits = "0123456789abcdef"

// plainJSON marks the bytes a JSON string holds as they are: printable
// ASCII but the quote and the backslash.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
// Runs of plain bytes are copied whole: a long prompt is almost all plain,
// and its body is encoded once per request.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainJSON[c] {
				i++
				for i < len(s) && plainJSON[s[i]] {
					i++
				}
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
