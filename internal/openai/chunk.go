// Package openai speaks the streaming side of the OpenAI-compatible
// /v1/chat/completions and /v1/completions APIs as vLLM, SGLang, TGI,
// llama.cpp and Ollama implement them, and the APIs beside them:
// embeddings and rerank (items.go), Anthropic's Messages (messages.go),
// image prompts (image.go).
//
// Reading order: DecodeChunk (this file) classifies one SSE data payload by
// the rules of SPEC §2 — which chunks start TTFT and count as token
// arrivals, which never do — with a small hand-rolled JSON scanner
// (scan.go) so the per-token path costs well under a microsecond and does
// not allocate. request.go builds request bodies and endpoints; probe.go
// asks a server whether it accepts ignore_eos and min_tokens.
package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Chunk is what one SSE data payload says. DecodeChunk overwrites every
// field except Timing's slice, which it reuses.
type Chunk struct {
	// Content reports a token-bearing chunk: some choice's delta has a
	// non-empty content, reasoning_content or reasoning string, or a
	// non-empty tool_calls array (chat), or a non-empty text (completions).
	// Only such chunks start TTFT and count as token arrivals; role-only,
	// empty and keep-alive chunks never do.
	Content bool
	// Done is the "[DONE]" sentinel.
	Done bool
	// Empty is a payload with nothing in it (blank data, a keep-alive).
	Empty bool
	// FinishReason is the first non-null finish_reason among the choices.
	FinishReason string
	// HasUsage reports a non-null usage object; the counts are its
	// prompt_tokens and completion_tokens (cumulative when the server sends
	// usage on every chunk, as vLLM's continuous_usage_stats does).
	HasUsage                       bool
	PromptTokens, CompletionTokens int
	// NoPromptTokens: the usage left out the prompt count (an Anthropic
	// message_delta without input_tokens), so an earlier one stands.
	NoPromptTokens bool
	// Err is set when the payload is an error object ({"error": ...}, or a
	// top-level "object": "error" as older vLLM sends) rather than a chunk.
	Err *APIError
	// CachedTokens is usage.prompt_tokens_details.cached_tokens (vLLM,
	// llama.cpp), valid when HasCached.
	CachedTokens int
	HasCached    bool
	// Timing is knee's server phase truth (the "knee_timing" extension),
	// nil when absent.
	Timing *Timing
	// Server is what a real server reports of its own per-request timing:
	// llama.cpp's "timings" object, Ollama's final durations (ollama.go).
	// Nil when absent or unusable: a malformed timing never fails a chunk.
	Server *ServerTimings

	timing Timing        // storage for Timing, reused between chunks
	server ServerTimings // storage for Server
}

// APIError is an error payload sent in place of a chunk.
type APIError struct {
	Message string
	Type    string
	Code    int // the numeric "code" when present (an HTTP-like status), else 0
}

func (e *APIError) Error() string {
	var b []byte
	if e.Code != 0 {
		b = strconv.AppendInt(b, int64(e.Code), 10)
		b = append(b, ' ')
	}
	if e.Type != "" {
		b = append(b, e.Type...)
		b = append(b, ": "...)
	}
	return string(append(b, e.Message...))
}

// Timing is the "knee_timing" object knee's own servers put on the final
// chunk of a stream: phase times, the intended emission time of every
// token (token_times_ms) and the time the server actually wrote each token
// to the connection (write_times_ms), all as milliseconds from the
// server's receipt of the request.
type Timing struct {
	QueueMS, PrefillMS, DecodeMS float64
	TokenTimesMS                 []float64
	WriteTimesMS                 []float64
}

// ServerTimings are a server's own report of one request's phases, in
// milliseconds, as DecodeChunk (llama.cpp) and DecodeOllama (Ollama) read
// them. docs/servers.md says how each server's fields map here.
type ServerTimings struct {
	// PrefillMS is prompt evaluation (llama.cpp prompt_ms, Ollama
	// prompt_eval_duration); DecodeMS generation (predicted_ms,
	// eval_duration).
	PrefillMS, DecodeMS float64
	// PromptEvaluated is how many prompt tokens the server computed
	// (prompt_n, prompt_eval_count), CachedPrompt how many it took from its
	// cache (cache_n; valid when HasCached), Generated the tokens generated
	// (predicted_n, eval_count).
	PromptEvaluated, CachedPrompt, Generated int
	HasCached                                bool
	// Ollama only: load_duration and total_duration (valid when HasTotal).
	LoadMS, TotalMS float64
	HasTotal        bool
}

// QueueMS is the server time before prefill began, where the server's
// fields give it: Ollama's total_duration less prompt evaluation and
// generation (the model load, the wait for a parallel slot, templating).
// llama.cpp reports no total, so it has none.
func (t *ServerTimings) QueueMS() (float64, bool) {
	if !t.HasTotal {
		return 0, false
	}
	return max(t.TotalMS-t.PrefillMS-t.DecodeMS, 0), true
}

// ErrPayload wraps every decoding failure: the payload is not a chunk.
var ErrPayload = errors.New("undecodable chunk")

var doneSentinel = []byte("[DONE]")

// DecodeChunk decodes one SSE data payload into c. An error (wrapping
// ErrPayload) means the payload is not valid JSON of the expected shape.
func DecodeChunk(data []byte, c *Chunk) error {
	c.reset()
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		c.Empty = true
		return nil
	}
	if bytes.Equal(data, doneSentinel) {
		c.Done = true
		return nil
	}
	s := scanner{b: data}
	var isErrorObject bool
	var topMessage, topType string
	var topCode int
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			c.Content, c.FinishReason = false, ""
			if s.null() {
				return true
			}
			return s.array(func() bool { return decodeChoice(&s, c) })
		case "usage":
			c.HasUsage, c.PromptTokens, c.CompletionTokens = false, 0, 0
			c.HasCached, c.CachedTokens = false, 0
			if s.null() {
				return true
			}
			c.HasUsage = true
			return s.object(func(k []byte) bool {
				var ok bool
				switch string(k) {
				case "prompt_tokens":
					c.PromptTokens, ok = s.int()
				case "completion_tokens":
					c.CompletionTokens, ok = s.int()
				case "prompt_tokens_details":
					ok = decodePromptDetails(&s, c)
				default:
					ok = s.skip()
				}
				return ok
			})
		case "error":
			return decodeErrorField(&s, c)
		case "object":
			if s.null() {
				isErrorObject = false
				return true
			}
			raw, _, ok := s.str()
			isErrorObject = string(raw) == "error"
			return ok
		case "message":
			return s.optString(&topMessage)
		case "type":
			return s.optString(&topType)
		case "code":
			topCode = 0
			return decodeCode(&s, &topCode)
		case "timings":
			c.Server = nil
			if s.peek() != '{' {
				return s.skip() // not an object: no timings, not a broken chunk
			}
			t := &c.server
			*t = ServerTimings{}
			var prefill, decode bool
			ok := s.object(func(k []byte) bool {
				var ok bool
				switch string(k) {
				case "prompt_ms":
					t.PrefillMS, prefill, ok = s.lenientMS(1)
				case "predicted_ms":
					t.DecodeMS, decode, ok = s.lenientMS(1)
				case "prompt_n":
					t.PromptEvaluated, _, ok = s.lenientCount()
				case "predicted_n":
					t.Generated, _, ok = s.lenientCount()
				case "cache_n":
					t.CachedPrompt, t.HasCached, ok = s.lenientCount()
				default:
					ok = s.skip()
				}
				return ok
			})
			if prefill && decode {
				c.Server = t
			}
			return ok
		case "knee_timing":
			return c.decodeKneeTiming(&s)
		default:
			return s.skip()
		}
	})
	if s.ws(); ok && s.i < len(s.b) {
		ok = s.fail("unexpected %s after the chunk object", s.describe())
	}
	if !ok {
		c.reset()
		return fmt.Errorf("%w: %v", ErrPayload, s.err)
	}
	if isErrorObject && c.Err == nil {
		c.Err = &APIError{Message: topMessage, Type: topType, Code: topCode}
	}
	if c.Err != nil {
		c.notAChunk()
	}
	return nil
}

// reset clears c for the next payload, keeping the storage it reuses.
func (c *Chunk) reset() {
	timing := c.timing
	timing.TokenTimesMS = timing.TokenTimesMS[:0]
	timing.WriteTimesMS = timing.WriteTimesMS[:0]
	*c = Chunk{timing: timing}
}

// notAChunk clears what an error payload may also carry: nothing in it counts.
func (c *Chunk) notAChunk() {
	c.Content, c.FinishReason, c.HasUsage, c.PromptTokens, c.CompletionTokens = false, "", false, 0, 0
	c.HasCached, c.CachedTokens, c.Server = false, 0, nil
}

// decodePromptDetails reads usage.prompt_tokens_details for cached_tokens;
// any other shape is skipped (it never fails a chunk that is valid JSON).
func decodePromptDetails(s *scanner, c *Chunk) bool {
	c.HasCached, c.CachedTokens = false, 0
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(k []byte) bool {
		if string(k) != "cached_tokens" {
			return s.skip()
		}
		var ok bool
		c.CachedTokens, c.HasCached, ok = s.lenientCount()
		return ok
	})
}

// decodeChoice reads one element of "choices". Within an object a repeated
// key overrides the earlier one, as encoding/json does.
func decodeChoice(s *scanner, c *Chunk) bool {
	if s.null() {
		return true
	}
	var deltaContent, textContent bool
	var finish string
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "delta":
			deltaContent = false
			if s.null() {
				return true
			}
			// Per field the last occurrence wins, as with encoding/json.
			var has [4]bool
			ok := s.object(func(k []byte) bool {
				var ok bool
				switch string(k) {
				case "content":
					has[0], ok = nonEmptyString(s)
				case "reasoning_content":
					has[1], ok = nonEmptyString(s)
				case "reasoning":
					has[2], ok = nonEmptyString(s)
				case "tool_calls":
					has[3], ok = nonEmptyArray(s)
				default:
					ok = s.skip()
				}
				return ok
			})
			deltaContent = has[0] || has[1] || has[2] || has[3]
			return ok
		case "text":
			var ok bool
			textContent, ok = nonEmptyString(s)
			return ok
		case "finish_reason":
			finish = ""
			if s.null() {
				return true
			}
			raw, esc, ok := s.str()
			finish = internFinish(raw, esc)
			return ok
		default:
			return s.skip()
		}
	})
	if deltaContent || textContent {
		c.Content = true
	}
	if c.FinishReason == "" {
		c.FinishReason = finish
	}
	return ok
}

// nonEmptyString reads a string or null and reports whether it is a
// non-empty string. Any other type is an error.
func nonEmptyString(s *scanner) (bool, bool) {
	if s.null() {
		return false, true
	}
	raw, _, ok := s.str()
	return len(raw) > 0, ok
}

// nonEmptyArray reads an array or null and reports whether it has elements.
func nonEmptyArray(s *scanner) (bool, bool) {
	if s.null() {
		return false, true
	}
	n := 0
	ok := s.array(func() bool { n++; return s.skip() })
	return n > 0, ok
}

// decodeErrorField reads an "error" value: null, a message string, or an
// object with message, type and code.
func decodeErrorField(s *scanner, c *Chunk) bool {
	c.Err = nil
	switch s.peek() {
	case 'n':
		return s.literal("null")
	case '"':
		raw, esc, ok := s.str()
		c.Err = &APIError{Message: unquote(raw, esc)}
		return ok
	}
	e := &APIError{}
	c.Err = e
	return decodeError(s, e)
}

func decodeError(s *scanner, e *APIError) bool {
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "message":
			return s.optString(&e.Message)
		case "type":
			return s.optString(&e.Type)
		case "code":
			e.Code = 0
			return decodeCode(s, &e.Code)
		default:
			return s.skip()
		}
	})
}

// decodeCode reads an error code: a whole number, or a string of digits
// (some servers quote it); anything else leaves 0.
func decodeCode(s *scanner, code *int) bool {
	switch c := s.peek(); {
	case c == '-' || isDigit(c):
		raw, ok := s.number()
		if n, err := strconv.Atoi(string(raw)); err == nil {
			*code = n
		}
		return ok
	case c == '"':
		raw, _, ok := s.str()
		if n, err := strconv.Atoi(string(raw)); err == nil {
			*code = n
		}
		return ok
	default:
		return s.skip()
	}
}

func decodeTiming(s *scanner, t *Timing) bool {
	return s.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "queue_ms":
			t.QueueMS, ok = s.float()
		case "prefill_ms":
			t.PrefillMS, ok = s.float()
		case "decode_ms":
			t.DecodeMS, ok = s.float()
		case "token_times_ms":
			ok = decodeFloats(s, &t.TokenTimesMS)
		case "write_times_ms":
			ok = decodeFloats(s, &t.WriteTimesMS)
		default:
			ok = s.skip()
		}
		return ok
	})
}

// decodeFloats decodes an array of numbers (or null, as empty) into *dst,
// reusing its storage.
func decodeFloats(s *scanner, dst *[]float64) bool {
	*dst = (*dst)[:0]
	if s.null() {
		return true
	}
	return s.array(func() bool {
		v, ok := s.float()
		*dst = append(*dst, v)
		return ok
	})
}

// internFinish returns the usual finish reasons without allocating.
func internFinish(raw []byte, escaped bool) string {
	switch string(raw) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "abort":
		return "abort"
	case "eos_token":
		return "eos_token"
	}
	return unquote(raw, escaped)
}

// AppendDeltaText appends the text a content chunk carries (chat delta
// content, completions text, Ollama message content) to dst: what a
// multi-turn session sends back as the assistant's answer. It decodes the
// payload again, so only requests that keep their text pay for it.
func AppendDeltaText(dst, data []byte) []byte {
	var c struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
			Text string `json:"text"`
		} `json:"choices"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Delta struct { // Anthropic's content_block_delta
			Text string `json:"text"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &c) != nil {
		return dst
	}
	for _, ch := range c.Choices {
		dst = append(dst, ch.Delta.Content...)
		dst = append(dst, ch.Text...)
	}
	dst = append(dst, c.Delta.Text...)
	return append(dst, c.Message.Content...)
}

// decodeKneeTiming reads knee serve's knee_timing object into the chunk's
// reused buffers (the chat chunk's and the Messages event's field alike).
func (c *Chunk) decodeKneeTiming(s *scanner) bool {
	c.Timing = nil
	if s.null() {
		return true
	}
	c.timing.TokenTimesMS = c.timing.TokenTimesMS[:0]
	c.timing.WriteTimesMS = c.timing.WriteTimesMS[:0]
	c.timing.QueueMS, c.timing.PrefillMS, c.timing.DecodeMS = 0, 0, 0
	c.Timing = &c.timing
	return decodeTiming(s, &c.timing)
}
