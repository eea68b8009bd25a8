package openai

import (
	"errors"
	"fmt"
	"testing"
)

type want struct {
	content, done, empty bool
	finish               string
	usage                bool
	prompt, completion   int
	errMsg               string
	errCode              int
	badPayload           bool
}

func summarize(c *Chunk, err error) want {
	w := want{content: c.Content, done: c.Done, empty: c.Empty, finish: c.FinishReason,
		usage: c.HasUsage, prompt: c.PromptTokens, completion: c.CompletionTokens}
	if c.Err != nil {
		w.errMsg, w.errCode = c.Err.Message, c.Err.Code
	}
	if err != nil {
		w.badPayload = errors.Is(err, ErrPayload)
	}
	return w
}

// TestChunkRules pins SPEC §2: which chunks start TTFT and count as token
// arrivals (content, reasoning_content/reasoning, tool_calls; completions
// text) and which never do (role-only, empty, keep-alive).
func TestChunkRules(t *testing.T) {
	tests := []struct {
		name string
		data string
		want want
	}{
		{"chat content", `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`, want{content: true}},
		{"role-only first chunk", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, want{}},
		{"role-only without content key", `{"choices":[{"delta":{"role":"assistant"}}]}`, want{}},
		{"empty delta", `{"choices":[{"delta":{}}]}`, want{}},
		{"null content", `{"choices":[{"delta":{"content":null}}]}`, want{}},
		{"whitespace content counts", `{"choices":[{"delta":{"content":" "}}]}`, want{content: true}},
		{"escaped newline counts", `{"choices":[{"delta":{"content":"\n"}}]}`, want{content: true}},
		{"reasoning_content", `{"choices":[{"delta":{"reasoning_content":"think"}}]}`, want{content: true}},
		{"reasoning", `{"choices":[{"delta":{"reasoning":"think","content":null}}]}`, want{content: true}},
		{"empty reasoning", `{"choices":[{"delta":{"reasoning_content":""}}]}`, want{}},
		{"tool_calls", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, want{content: true}},
		{"empty tool_calls", `{"choices":[{"delta":{"tool_calls":[]}}]}`, want{}},
		{"completions text", `{"object":"text_completion","choices":[{"index":0,"text":" world","finish_reason":null}]}`, want{content: true}},
		{"completions empty text", `{"choices":[{"text":""}]}`, want{}},
		{"finish chunk without content", `{"choices":[{"delta":{},"finish_reason":"stop"}]}`, want{finish: "stop"}},
		{"finish with last token", `{"choices":[{"delta":{"content":"."},"finish_reason":"length"}]}`, want{content: true, finish: "length"}},
		{"unusual finish reason", `{"choices":[{"delta":{},"finish_reason":"my_reason"}]}`, want{finish: "my_reason"}},
		{"usage chunk", `{"choices":[],"usage":{"prompt_tokens":512,"completion_tokens":128,"total_tokens":640}}`, want{usage: true, prompt: 512, completion: 128}},
		{"null usage", `{"choices":[{"delta":{"content":"a"}}],"usage":null}`, want{content: true}},
		{"continuous usage on content", `{"choices":[{"delta":{"content":"ab"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`, want{content: true, usage: true, prompt: 5, completion: 3}},
		{"DONE", `[DONE]`, want{done: true}},
		{"DONE with spaces", ` [DONE] `, want{done: true}},
		{"empty data keep-alive", ``, want{empty: true}},
		{"blank keep-alive", " \t", want{empty: true}},
		{"empty object", `{}`, want{}},
		{"null choices", `{"choices":null}`, want{}},
		{"error object mid-stream", `{"error":{"message":"engine died","type":"InternalServerError","code":500}}`, want{errMsg: "engine died", errCode: 500}},
		{"error string", `{"error":"overloaded"}`, want{errMsg: "overloaded"}},
		{"error quoted code", `{"error":{"message":"slow down","code":"429"}}`, want{errMsg: "slow down", errCode: 429}},
		{"vllm object error", `{"object":"error","message":"prompt too long","type":"BadRequestError","code":400}`, want{errMsg: "prompt too long", errCode: 400}},
		{"null error", `{"error":null,"choices":[{"delta":{"content":"a"}}]}`, want{content: true}},
		{"error beats content", `{"choices":[{"delta":{"content":"a"}}],"error":{"message":"x"}}`, want{errMsg: "x"}},
		{"HTML", `<html><body>502</body></html>`, want{badPayload: true}},
		{"truncated JSON", `{"choices":[{"delta":{"content":"a"`, want{badPayload: true}},
		{"trailing garbage", `{"choices":[]} x`, want{badPayload: true}},
		{"not an object", `"hello"`, want{badPayload: true}},
		{"choices wrong type", `{"choices":{"delta":{}}}`, want{badPayload: true}},
		{"content wrong type", `{"choices":[{"delta":{"content":5}}]}`, want{badPayload: true}},
		{"usage fractional", `{"usage":{"completion_tokens":1.5}}`, want{badPayload: true}},
		{"usage exponent whole", `{"usage":{"completion_tokens":1e2}}`, want{usage: true, completion: 100}},
		{"bad escape", `{"choices":[{"delta":{"content":"\x"}}]}`, want{badPayload: true}},
		{"control char in string", "{\"a\":\"\x01\"}", want{badPayload: true}},
		{"escaped key", `{"choices":[{"delta":{"cont\u0065nt":"a"}}]}`, want{content: true}},
		{"last delta wins", `{"choices":[{"delta":{"content":"a"},"delta":{"content":""}}]}`, want{}},
		{"second choice content", `{"choices":[{"delta":{}},{"delta":{"content":"b"}}]}`, want{content: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			err := DecodeChunk([]byte(tc.data), &c)
			if got := summarize(&c, err); got != tc.want {
				t.Errorf("DecodeChunk(%s)\n got %+v\nwant %+v (err %v)", tc.data, got, tc.want, err)
			}
			if err != nil && !tc.want.badPayload {
				t.Errorf("unexpected error %v", err)
			}
		})
	}
}

func TestKneeTiming(t *testing.T) {
	data := `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2},` +
		`"knee_timing":{"queue_ms":1.5,"prefill_ms":20,"decode_ms":30.25,"token_times_ms":[21.5,51.75],"write_times_ms":[21.625,52]}}`
	var c Chunk
	if err := DecodeChunk([]byte(data), &c); err != nil {
		t.Fatal(err)
	}
	if c.Timing == nil {
		t.Fatal("Timing nil")
	}
	got := fmt.Sprint(*c.Timing)
	if want := fmt.Sprint(Timing{1.5, 20, 30.25, []float64{21.5, 51.75}, []float64{21.625, 52}}); got != want {
		t.Errorf("timing %s, want %s", got, want)
	}
	// The next chunk without knee_timing has none, and storage is reused.
	if err := DecodeChunk([]byte(`{"choices":[]}`), &c); err != nil || c.Timing != nil {
		t.Errorf("timing %v err %v, want nil", c.Timing, err)
	}
	// A later timing without write times does not keep the earlier ones.
	if err := DecodeChunk([]byte(`{"knee_timing":{"token_times_ms":[1]}}`), &c); err != nil || c.Timing == nil ||
		len(c.Timing.WriteTimesMS) != 0 || len(c.Timing.TokenTimesMS) != 1 {
		t.Errorf("timing %+v err %v, want token times [1] and no write times", c.Timing, err)
	}
	if err := DecodeChunk([]byte(`{"knee_timing":{"write_times_ms":[1,"x"]}}`), &c); err == nil {
		t.Error("write_times_ms with a string: want an error")
	}
}

func TestErrorMessageMentionsOffset(t *testing.T) {
	var c Chunk
	err := DecodeChunk([]byte(`{"choices":[}`), &c)
	if err == nil || !errors.Is(err, ErrPayload) {
		t.Fatalf("err = %v", err)
	}
	if got := err.Error(); got != "undecodable chunk: offset 12: want an object, found '}'" {
		t.Errorf("message %q", got)
	}
}

func TestDecodeChunkAllocs(t *testing.T) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	fin := []byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":20}}`)
	var c Chunk
	allocs := testing.AllocsPerRun(100, func() {
		if DecodeChunk(data, &c) != nil || DecodeChunk(fin, &c) != nil {
			t.Fatal("decode failed")
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per chunk pair, want 0", allocs)
	}
}

func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	var c Chunk
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeChunk(data, &c); err != nil || !c.Content {
			b.Fatal(err)
		}
	}
}
