package openai

import (
	"bytes"
	"fmt"
)

// Answer is what a whole embeddings or rerank answer says.
type Answer struct {
	// Items is the number of embeddings or rerank results.
	Items int
	// HasUsage reports a usage object with a prompt count: PromptTokens is
	// its prompt_tokens (embeddings) or total_tokens (vLLM's rerank).
	HasUsage     bool
	PromptTokens int
	// Err is set when the answer is an error object instead.
	Err *APIError
}

// DecodeEmbeddings decodes an /v1/embeddings answer:
// {"data": [{"embedding": [numbers] or "base64", "index": i}, ...],
// "usage": {"prompt_tokens": n}}, or an error object. want is the number
// of inputs sent: every index must be below it and appear once. An error
// (wrapping ErrPayload) means the body is not such an answer.
func DecodeEmbeddings(body []byte, want int) (Answer, error) {
	var a Answer
	s := scanner{b: bytes.TrimSpace(body)}
	seen := make([]bool, want)
	var hasData bool
	var e errorEnvelope
	ok := s.object(func(key []byte) bool {
		if handled, ok := e.field(&s, key); handled {
			return ok
		}
		switch string(key) {
		case "data":
			hasData = true
			a.Items = 0
			return s.array(func() bool {
				i := a.Items
				a.Items++
				index, hasVector := -1, false
				ok := s.object(func(k []byte) bool {
					switch string(k) {
					case "embedding":
						switch s.peek() {
						case '"': // encoding_format base64
							raw, _, ok := s.str()
							hasVector = len(raw) > 0
							return ok
						case '[':
							n := 0
							ok := s.array(func() bool {
								n++
								if c := s.peek(); c != '-' && !isDigit(c) {
									return s.fail("data[%d].embedding holds a non-number %s", i, s.describe())
								}
								_, ok := s.number()
								return ok
							})
							hasVector = n > 0
							return ok
						}
						return s.fail("data[%d].embedding: want an array of numbers or a base64 string, found %s", i, s.describe())
					case "index":
						return decodeIndex(&s, &index)
					default:
						return s.skip()
					}
				})
				switch {
				case !ok:
					return false
				case !hasVector:
					return s.fail("data[%d] has no embedding", i)
				case index < 0:
					index = i // an index is optional (Ollama sends it, others may not)
				}
				if index >= want {
					return s.fail("data[%d] has index %d, but %d inputs were sent", i, index, want)
				}
				if seen[index] {
					return s.fail("index %d answered twice", index)
				}
				seen[index] = true
				return true
			})
		case "usage":
			return decodeItemsUsage(&s, &a, "prompt_tokens")
		default:
			return s.skip()
		}
	})
	return a.finish(&s, ok, hasData, "data", &e)
}

// DecodeRerank decodes a rerank answer, recognised by its shape: vLLM's
// (and Cohere's, Jina's) {"results": [{"index", "relevance_score"}],
// "usage": {"total_tokens"}} or TEI's [{"index", "score"}]; or an error
// object (TEI's {"error": "...", "error_type": "..."} too). want is the
// number of documents sent.
func DecodeRerank(body []byte, want int) (Answer, error) {
	var a Answer
	s := scanner{b: bytes.TrimSpace(body)}
	seen := make([]bool, want)
	results := func() bool {
		a.Items = 0
		return s.array(func() bool {
			i := a.Items
			a.Items++
			index, score := -1, false
			ok := s.object(func(k []byte) bool {
				switch string(k) {
				case "index":
					return decodeIndex(&s, &index)
				case "relevance_score", "score":
					if c := s.peek(); c != '-' && !isDigit(c) {
						return s.fail("result %d: score is %s, not a number", i, s.describe())
					}
					_, ok := s.number()
					score = ok
					return ok
				default:
					return s.skip()
				}
			})
			switch {
			case !ok:
				return false
			case index < 0:
				return s.fail("result %d has no index", i)
			case !score:
				return s.fail("result %d has no score", i)
			case index >= want:
				return s.fail("result %d has index %d, but %d documents were sent", i, index, want)
			case seen[index]:
				return s.fail("index %d answered twice", index)
			}
			seen[index] = true
			return true
		})
	}
	if s.peek() == '[' { // TEI
		ok := results()
		return a.finish(&s, ok, true, "", &errorEnvelope{})
	}
	var hasResults bool
	var e errorEnvelope
	ok := s.object(func(key []byte) bool {
		if handled, ok := e.field(&s, key); handled {
			return ok
		}
		switch string(key) {
		case "results":
			hasResults = true
			return results()
		case "usage":
			return decodeItemsUsage(&s, &a, "total_tokens")
		case "error_type": // TEI
			return s.optString(&e.top.Type)
		default:
			return s.skip()
		}
	})
	if ok && e.c.Err != nil && e.c.Err.Type == "" {
		e.c.Err.Type = e.top.Type // TEI puts the type beside the message
	}
	return a.finish(&s, ok, hasResults, "results", &e)
}

// errorEnvelope holds what an item answer's top level says of an error:
// an "error" field (OpenAI's shape) or an error object's own fields
// ("object": "error", "message", "type", "code": vLLM's).
type errorEnvelope struct {
	c             Chunk // for the error field
	top           APIError
	isErrorObject bool
}

// field reads key when it is one of the error's fields; handled is false
// for any other key.
func (e *errorEnvelope) field(s *scanner, key []byte) (handled, ok bool) {
	switch string(key) {
	case "error":
		return true, decodeErrorField(s, &e.c)
	case "object":
		return true, decodeObjectField(s, &e.isErrorObject)
	case "message":
		return true, s.optString(&e.top.Message)
	case "type":
		return true, s.optString(&e.top.Type)
	case "code":
		return true, decodeCode(s, &e.top.Code)
	}
	return false, false
}

// finish ends both decoders: trailing data, a missing list (shaped: the
// list was there), the error.
func (a *Answer) finish(s *scanner, ok, shaped bool, list string, e *errorEnvelope) (Answer, error) {
	if s.ws(); ok && s.i < len(s.b) {
		ok = s.fail("unexpected %s after the answer", s.describe())
	}
	if ok && !shaped && e.c.Err == nil && !e.isErrorObject {
		ok = s.fail("no %q list and no error", list)
	}
	if !ok {
		return Answer{}, fmt.Errorf("%w: %v", ErrPayload, s.err)
	}
	switch {
	case e.c.Err != nil:
		return Answer{Err: e.c.Err}, nil
	case e.isErrorObject:
		top := e.top
		return Answer{Err: &top}, nil
	}
	return *a, nil
}

// decodeItemsUsage reads the usage object's prompt count from key.
func decodeItemsUsage(s *scanner, a *Answer, key string) bool {
	a.HasUsage, a.PromptTokens = false, 0
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(k []byte) bool {
		if string(k) != key {
			return s.skip()
		}
		var ok bool
		a.PromptTokens, a.HasUsage, ok = s.lenientCount()
		return ok
	})
}

// decodeObjectField reads "object" and reports whether it says "error".
func decodeObjectField(s *scanner, isError *bool) bool {
	*isError = false
	if s.null() {
		return true
	}
	raw, _, ok := s.str()
	*isError = string(raw) == "error"
	return ok
}

// decodeIndex reads a result's index: -1 for null, an error when negative.
func decodeIndex(s *scanner, index *int) bool {
	*index = -1
	if s.null() {
		return true
	}
	n, ok := s.int()
	if ok && n < 0 {
		return s.fail("index %d is negative", n)
	}
	*index = n
	return ok
}
