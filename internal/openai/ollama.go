package openai

import (
	"bytes"
	"fmt"
)

// Ollama's native chat API (POST /api/chat, "stream": true) streams one JSON
// object per line (NDJSON, not SSE): each carries a piece of the answer in
// message.content; the last has "done": true, a done_reason and the
// request's counts and durations in nanoseconds (prompt_eval_count,
// prompt_eval_duration, eval_count, eval_duration, load_duration,
// total_duration). An error mid-stream is a line {"error": "..."}.

// nsPerMS converts Ollama's nanosecond durations to milliseconds.
const nsPerMS = 1e6

// DecodeOllama decodes one line of an Ollama /api/chat stream into c, with
// the rules of DecodeChunk: a line whose message has non-empty content,
// thinking or tool_calls is a token arrival; the final line sets
// FinishReason (done_reason, or "stop" when it has none), usage from
// prompt_eval_count and eval_count, and Server from the durations. Missing
// or malformed counts and durations leave those fields unset; only a line
// that is not a JSON object of this shape is an error (wrapping ErrPayload).
func DecodeOllama(line []byte, c *Chunk) error {
	c.reset()
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		c.Empty = true
		return nil
	}
	s := scanner{b: line}
	t := &c.server
	*t = ServerTimings{}
	var done, prefill, decode, prompt, eval bool
	var reason string
	ok := s.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "message":
			c.Content = false
			if s.null() {
				return true
			}
			var has [3]bool
			ok = s.object(func(k []byte) bool {
				var ok bool
				switch string(k) {
				case "content":
					has[0], ok = nonEmptyString(&s)
				case "thinking":
					has[1], ok = nonEmptyString(&s)
				case "tool_calls":
					has[2], ok = nonEmptyArray(&s)
				default:
					ok = s.skip()
				}
				return ok
			})
			c.Content = has[0] || has[1] || has[2]
		case "done":
			done = false
			switch s.peek() {
			case 't':
				done, ok = true, s.literal("true")
			case 'f':
				ok = s.literal("false")
			default:
				ok = s.literal("null")
			}
		case "done_reason":
			reason = ""
			ok = s.optString(&reason)
		case "prompt_eval_count":
			t.PromptEvaluated, prompt, ok = s.lenientCount()
		case "eval_count":
			t.Generated, eval, ok = s.lenientCount()
		case "prompt_eval_duration":
			t.PrefillMS, prefill, ok = s.lenientMS(nsPerMS)
		case "eval_duration":
			t.DecodeMS, decode, ok = s.lenientMS(nsPerMS)
		case "load_duration":
			t.LoadMS, _, ok = s.lenientMS(nsPerMS)
		case "total_duration":
			t.TotalMS, t.HasTotal, ok = s.lenientMS(nsPerMS)
		case "error":
			return decodeErrorField(&s, c)
		default:
			ok = s.skip()
		}
		return ok
	})
	if s.ws(); ok && s.i < len(s.b) {
		ok = s.fail("unexpected %s after the object", s.describe())
	}
	if !ok {
		c.reset()
		return fmt.Errorf("%w: %v", ErrPayload, s.err)
	}
	if c.Err != nil {
		c.notAChunk()
		return nil
	}
	if !done {
		return nil
	}
	c.FinishReason = "stop"
	if reason != "" {
		c.FinishReason = internFinish([]byte(reason), false)
	}
	if prompt && eval {
		c.HasUsage, c.PromptTokens, c.CompletionTokens = true, t.PromptEvaluated, t.Generated
	}
	if prefill && decode {
		c.Server = t
	}
	return nil
}
