package openai

import (
	"bytes"
	"fmt"
)

// Anthropic's Messages API streams typed events, each an SSE event whose
// data is a JSON object with a "type": message_start (the message, with
// usage.input_tokens), content_block_start, ping, content_block_delta
// (text_delta, thinking_delta or input_json_delta: the token arrivals),
// content_block_stop, message_delta (stop_reason and the cumulative
// usage.output_tokens), message_stop, and error ({"error": {"type",
// "message"}}, sent mid-stream, e.g. overloaded_error). Event types the
// API may add later are ignored, as its documentation asks.

// anthropicStatus is the HTTP status Anthropic documents for each error
// type; an error event is classified by it.
var anthropicStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

// AnthropicErrorStatus is the HTTP status of an Anthropic error type (0
// when unknown).
func AnthropicErrorStatus(errType string) int { return anthropicStatus[errType] }

// DecodeMessages decodes one event's data of a Messages stream into c, with
// DecodeChunk's rules: a content_block_delta carrying non-empty text,
// thinking or partial JSON is a token arrival; message_start gives the
// input tokens, message_delta the stop reason and output tokens
// (NoPromptTokens when it leaves out input_tokens), message_stop ends the
// stream (Done); an error event sets Err with the type's status as Code.
// knee's own server puts knee_timing on message_delta.
func DecodeMessages(data []byte, c *Chunk) error {
	c.reset()
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		c.Empty = true
		return nil
	}
	s := scanner{b: data}
	var typ, stop string
	var hasType, content bool
	var u msgUsage
	var e *APIError
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			hasType = true
			return s.optString(&typ)
		case "message":
			if s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(k []byte) bool {
				if string(k) == "usage" {
					return u.decode(&s)
				}
				return s.skip()
			})
		case "content_block", "delta":
			content, stop = false, ""
			if s.null() {
				return true
			}
			return s.object(func(k []byte) bool {
				var ok, has bool
				switch string(k) {
				case "text", "thinking", "partial_json":
					has, ok = nonEmptyString(&s)
					content = content || has
				case "stop_reason":
					ok = s.optString(&stop)
				default:
					ok = s.skip()
				}
				return ok
			})
		case "usage":
			return u.decode(&s)
		case "error":
			e = nil
			if s.null() {
				return true
			}
			if s.peek() == '"' {
				var msg string
				ok := s.optString(&msg)
				e = &APIError{Message: msg}
				return ok
			}
			e = &APIError{}
			return decodeError(&s, e)
		case "knee_timing":
			return c.decodeKneeTiming(&s)
		default:
			return s.skip()
		}
	})
	if s.ws(); ok && s.i < len(s.b) {
		ok = s.fail("unexpected %s after the event object", s.describe())
	}
	if ok && !hasType && e == nil {
		ok = s.fail("the event has no \"type\"")
	}
	if !ok {
		c.reset()
		return fmt.Errorf("%w: %v", ErrPayload, s.err)
	}
	timing := c.Timing
	c.Timing = nil
	switch {
	case typ == "error" || e != nil:
		if e == nil {
			e = &APIError{Message: "error event without an error object"}
		}
		if e.Code == 0 {
			e.Code = anthropicStatus[e.Type]
		}
		c.Err = e
	case typ == "message_start":
		if u.hasInput || u.hasOutput {
			c.HasUsage = true
			c.PromptTokens = u.input + u.cacheRead + u.cacheWrite
			c.CompletionTokens = u.output
			c.NoPromptTokens = !u.hasInput
			c.CachedTokens, c.HasCached = u.cacheRead, u.hasCacheRead
		}
	case typ == "content_block_start", typ == "content_block_delta":
		c.Content = content
	case typ == "message_delta":
		c.FinishReason = stop
		if u.hasOutput {
			c.HasUsage = true
			c.CompletionTokens = u.output
			c.PromptTokens = u.input + u.cacheRead + u.cacheWrite
			c.NoPromptTokens = !u.hasInput
		}
		c.Timing = timing
	case typ == "message_stop":
		c.Done = true
	case typ == "ping":
		c.Empty = true
	}
	return nil
}

// msgUsage is a Messages usage object.
type msgUsage struct {
	input, output, cacheRead, cacheWrite int
	hasInput, hasOutput, hasCacheRead    bool
}

func (u *msgUsage) decode(s *scanner) bool {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "input_tokens":
			u.input, u.hasInput, ok = s.lenientCount()
		case "output_tokens":
			u.output, u.hasOutput, ok = s.lenientCount()
		case "cache_read_input_tokens":
			u.cacheRead, u.hasCacheRead, ok = s.lenientCount()
		case "cache_creation_input_tokens":
			u.cacheWrite, _, ok = s.lenientCount()
		default:
			ok = s.skip()
		}
		return ok
	})
}
