package simserver

import (
	"strconv"

	"github.com/knee-dev/knee/internal/workload"
)

// words are the generated output: common English words that are one token
// each (with their leading space) in cl100k_base and o200k_base, so a client
// that counts tokens with a tokenizer agrees with the server's usage. None
// needs JSON escaping.
var words = [...]string{
	" the", " of", " and", " to", " in", " is", " that", " for",
	" it", " as", " was", " with", " be", " by", " on", " not",
	" he", " this", " are", " or", " his", " from", " at", " which",
	" but", " have", " an", " had", " they", " you", " were", " their",
	" one", " all", " we", " can", " her", " has", " there", " been",
	" if", " more", " when", " will", " would", " who", " so", " no",
	" time", " people", " some", " what", " about", " out", " up", " into",
	" year", " new", " other", " like", " then", " than", " only", " also",
}

// word is the text of output token i of request id: deterministic and cheap.
func word(id int64, i int) string { return words[wordIndex(id, i)] }

func wordIndex(id int64, i int) int {
	return int((uint64(id)*7 + uint64(i)) % uint64(len(words)))
}

// encodeWords tokenizes each of the words once, for naming answers' tokens.
func encodeWords(tok workload.Tokenizer) *[len(words)][]int {
	var ids [len(words)][]int
	for k, w := range words {
		ids[k] = tok.Encode(w)
	}
	return &ids
}

// appendMS appends ns as milliseconds with up to six decimals (exact to the
// nanosecond, trailing zeros trimmed), without going through float formatting.
func appendMS(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1e6, 10)
	frac := ns % 1e6
	if frac == 0 {
		return b
	}
	var d [7]byte
	d[0] = '.'
	for i := 6; i >= 1; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 7
	for d[n-1] == '0' {
		n--
	}
	return append(b, d[:n]...)
}

// chunkTemplate holds the pre-built bytes of one stream's chunks: only the
// token text varies between content chunks.
type chunkTemplate struct {
	head    []byte // `{"id":"chatcmpl-7","object":...,"model":"m",`
	prefix  []byte // "data: " + head + up to the opening quote of the text
	suffix  []byte // from the closing quote of the text to "\n\n"
	chat    bool
	created int64
	// messages: Anthropic's events (endpoints.go); input is the prompt's
	// tokens, which its message_start reports.
	messages bool
	input    int
}

func newChunkTemplate(chat bool, id int64, created int64, modelJSON []byte) chunkTemplate {
	t := chunkTemplate{chat: chat, created: created}
	h := make([]byte, 0, 96+len(modelJSON))
	if chat {
		h = append(h, `{"id":"chatcmpl-`...)
	} else {
		h = append(h, `{"id":"cmpl-`...)
	}
	h = strconv.AppendInt(h, id, 10)
	if chat {
		h = append(h, `","object":"chat.completion.chunk","created":`...)
	} else {
		h = append(h, `","object":"text_completion","created":`...)
	}
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":`...)
	h = append(h, modelJSON...)
	h = append(h, ',')
	t.head = h
	p := make([]byte, 0, len(h)+64)
	p = append(p, "data: "...)
	p = append(p, h...)
	if chat {
		p = append(p, `"choices":[{"index":0,"delta":{"content":"`...)
		t.suffix = []byte(`"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	} else {
		p = append(p, `"choices":[{"index":0,"text":"`...)
		t.suffix = []byte(`","logprobs":null,"finish_reason":null}]}` + "\n\n")
	}
	t.prefix = p
	return t
}

// appendRole appends the chat role chunk that precedes the first token, as
// OpenAI and vLLM send it (a role-only delta never counts as a token).
func (t *chunkTemplate) appendRole(b []byte) []byte {
	if t.messages {
		return t.appendMessagesStart(b)
	}
	b = append(b, "data: "...)
	b = append(b, t.head...)
	return append(b, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

func (t *chunkTemplate) appendToken(b []byte, text string) []byte {
	b = append(b, t.prefix...)
	b = append(b, text...)
	return append(b, t.suffix...)
}

// appendMalformed appends a chunk whose JSON is cut short (fault injection).
func (t *chunkTemplate) appendMalformed(b []byte, text string) []byte {
	b = append(b, t.prefix...)
	b = append(b, text...)
	return append(b, "\n\n"...)
}

// timing is the per-request truth carried on the final chunk.
type timing struct {
	queue, prefill, decode int64   // ns
	frontEnd               int64   // ns before the engine saw the request (modelled front end)
	tokenTimes             []int64 // intended (simulated) emission, ns since receipt
	// writeTimes are when each token's bytes were actually written (the
	// wall time just before the write(2) that carried them), ns since
	// receipt; nil leaves write_times_ms out. Set by the writer.
	writeTimes []int64
}

func appendTiming(b []byte, tm *timing) []byte {
	b = append(b, `"knee_timing":{"queue_ms":`...)
	b = appendMS(b, tm.queue)
	b = append(b, `,"prefill_ms":`...)
	b = appendMS(b, tm.prefill)
	b = append(b, `,"decode_ms":`...)
	b = appendMS(b, tm.decode)
	b = append(b, `,"front_end_ms":`...)
	b = appendMS(b, tm.frontEnd)
	b = append(b, `,"token_times_ms":[`...)
	b = appendMSList(b, tm.tokenTimes)
	if tm.writeTimes != nil {
		b = append(b, `],"write_times_ms":[`...)
		b = appendMSList(b, tm.writeTimes)
	}
	return append(b, "]}"...)
}

func appendMSList(b []byte, ns []int64) []byte {
	for i, v := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMS(b, v)
	}
	return b
}

func appendUsage(b []byte, prompt, completion int) []byte {
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	return append(b, '}')
}

// appendFinal appends the finish chunk, the usage chunk when asked for, and
// [DONE]. knee_timing rides on the last JSON chunk.
func (t *chunkTemplate) appendFinal(b []byte, reason string, includeUsage bool, prompt, completion int, tm *timing) []byte {
	if t.messages {
		return t.appendMessagesFinal(b, reason, completion, tm)
	}
	b = append(b, "data: "...)
	b = append(b, t.head...)
	if t.chat {
		b = append(b, `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"`...)
	}
	b = append(b, reason...)
	b = append(b, `"}]`...)
	if !includeUsage {
		b = append(b, ',')
		b = appendTiming(b, tm)
	}
	b = append(b, "}\n\n"...)
	if includeUsage {
		b = append(b, "data: "...)
		b = append(b, t.head...)
		b = append(b, `"choices":[],`...)
		b = appendUsage(b, prompt, completion)
		b = append(b, ',')
		b = appendTiming(b, tm)
		b = append(b, "}\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// appendWhole appends the body of a non-streaming response.
func (t *chunkTemplate) appendWhole(b []byte, id int64, n int, reason string, prompt int, tm *timing) []byte {
	if t.messages {
		return t.appendMessagesWhole(b, id, n, reason, prompt, tm)
	}
	if t.chat {
		b = append(b, `{"id":"chatcmpl-`...)
	} else {
		b = append(b, `{"id":"cmpl-`...)
	}
	b = strconv.AppendInt(b, id, 10)
	if t.chat {
		b = append(b, `","object":"chat.completion","created":`...)
	} else {
		b = append(b, `","object":"text_completion","created":`...)
	}
	b = strconv.AppendInt(b, t.created, 10)
	// The model name sits in head after `"model":`; reuse it.
	b = append(b, t.head[modelAt(t.head):]...)
	if t.chat {
		b = append(b, `"choices":[{"index":0,"message":{"role":"assistant","content":"`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":"`...)
	}
	for i := 0; i < n; i++ {
		b = append(b, word(id, i)...)
	}
	if t.chat {
		b = append(b, `"},"logprobs":null,"finish_reason":"`...)
	} else {
		b = append(b, `","logprobs":null,"finish_reason":"`...)
	}
	b = append(b, reason...)
	b = append(b, `"}],`...)
	b = appendUsage(b, prompt, n)
	b = append(b, ',')
	b = appendTiming(b, tm)
	return append(b, "}\n"...)
}

// modelAt finds `,"model":` in a head built by newChunkTemplate.
func modelAt(head []byte) int {
	const key = `,"model":`
	for i := 0; i+len(key) <= len(head); i++ {
		if string(head[i:i+len(key)]) == key {
			return i
		}
	}
	return len(head)
}
