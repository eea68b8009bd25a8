package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The samples in testdata are written from the fields llama.cpp's server
// and Ollama document: llama.cpp puts "timings" (prompt_n, prompt_ms,
// cache_n, predicted_n, predicted_ms, ...) on the finish chunk, or on the
// usage chunk ("choices": []) when usage is asked for; Ollama's /api/chat
// stream ends with an object carrying done_reason and nanosecond durations.

func readSample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLlamaCppTimings(t *testing.T) {
	for _, name := range []string{"llamacpp_finish_chunk.json", "llamacpp_usage_chunk.json"} {
		var c Chunk
		if err := DecodeChunk(readSample(t, name), &c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := c.Server
		if s == nil {
			t.Fatalf("%s: no server timings", name)
		}
		if s.PrefillMS != 48.113 || s.DecodeMS != 31.804 || s.PromptEvaluated != 192 || s.Generated != 4 || !s.HasCached || s.CachedPrompt != 64 {
			t.Errorf("%s: timings %+v", name, *s)
		}
		if _, ok := s.QueueMS(); ok {
			t.Errorf("%s: llama.cpp reports no total, so no queue time follows", name)
		}
		if c.Content {
			t.Errorf("%s: a finish or usage chunk is not a token arrival", name)
		}
	}
	var c Chunk
	DecodeChunk(readSample(t, "llamacpp_usage_chunk.json"), &c)
	if !c.HasUsage || c.PromptTokens != 256 || c.CompletionTokens != 4 || !c.HasCached || c.CachedTokens != 64 {
		t.Errorf("usage chunk: usage %v %d/%d cached %v %d", c.HasUsage, c.PromptTokens, c.CompletionTokens, c.HasCached, c.CachedTokens)
	}
}

func TestOllamaStream(t *testing.T) {
	lines := bytes.Split(bytes.TrimSpace(readSample(t, "ollama_chat_stream.ndjson")), []byte("\n"))
	var c Chunk
	for i, l := range lines[:len(lines)-1] {
		if err := DecodeOllama(l, &c); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if !c.Content || c.FinishReason != "" || c.HasUsage || c.Server != nil {
			t.Errorf("line %d: %+v, want a token arrival and nothing else", i+1, c)
		}
	}
	if err := DecodeOllama(lines[len(lines)-1], &c); err != nil {
		t.Fatal(err)
	}
	if c.Content || c.FinishReason != "length" || !c.HasUsage || c.PromptTokens != 256 || c.CompletionTokens != 4 {
		t.Errorf("final object: %+v", c)
	}
	s := c.Server
	if s == nil || s.PrefillMS != 51.877 || s.DecodeMS != 30.455 || s.LoadMS != 2.1043 || s.TotalMS != 96.3124 {
		t.Fatalf("final object timings %+v", s)
	}
	if q, ok := s.QueueMS(); !ok || math.Abs(q-(96.3124-51.877-30.455)) > 1e-9 {
		t.Errorf("queue %v %v, want total - prompt eval - eval", q, ok)
	}
}

// TestMalformedTimingsNeverFail: timings of the wrong type or out of range
// are dropped, never a bad payload, while the rest of the chunk counts.
func TestMalformedTimingsNeverFail(t *testing.T) {
	for _, data := range []string{
		`{"choices":[{"delta":{"content":"x"}}],"timings":"soon"}`,
		`{"choices":[{"delta":{"content":"x"}}],"timings":{"prompt_ms":"12","predicted_ms":3}}`,
		`{"choices":[{"delta":{"content":"x"}}],"timings":{"prompt_ms":-1,"predicted_ms":3}}`,
		`{"choices":[{"delta":{"content":"x"}}],"timings":{"prompt_ms":1e999,"predicted_ms":3}}`,
		`{"choices":[{"delta":{"content":"x"}}],"timings":[1,2]}`,
		`{"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":1,"prompt_tokens_details":"n/a"}}`,
	} {
		var c Chunk
		if err := DecodeChunk([]byte(data), &c); err != nil {
			t.Errorf("%s: %v", data, err)
		}
		if !c.Content || c.Server != nil || c.HasCached {
			t.Errorf("%s: content %v server %v cached %v", data, c.Content, c.Server, c.HasCached)
		}
	}
	for _, data := range []string{
		`{"message":{"content":""},"done":true,"eval_count":"4","prompt_eval_count":3,"eval_duration":null,"prompt_eval_duration":5}`,
		`{"message":{"content":""},"done":true,"total_duration":{},"eval_duration":-3,"prompt_eval_duration":5}`,
	} {
		var c Chunk
		if err := DecodeOllama([]byte(data), &c); err != nil {
			t.Errorf("%s: %v", data, err)
		}
		if c.FinishReason != "stop" || c.Server != nil || c.HasUsage {
			t.Errorf("%s: finish %q server %v usage %v", data, c.FinishReason, c.Server, c.HasUsage)
		}
	}
}

// jsonNumber is the reference for the lenient readers: a finite JSON
// number, else not valid.
func jsonNumber(x any) (float64, bool) {
	n, isNum := x.(json.Number)
	if !isNum {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

func refMS(x any, perMS float64) (float64, bool) {
	v, ok := jsonNumber(x)
	if !ok || v < 0 {
		return 0, false
	}
	return v / perMS, true
}

func refCount(x any) (int, bool) {
	v, ok := jsonNumber(x)
	if !ok || v < 0 || v != math.Trunc(v) || v > 1<<53 {
		return 0, false
	}
	return int(v), true
}

func decodeGeneric(data []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	if dec.Decode(&top) != nil || top == nil {
		return nil, false
	}
	return top, true
}

// refChunkServer is the reference for what DecodeChunk reads of a valid
// chunk beyond refDecode: llama.cpp's timings and usage's cached tokens.
func refChunkServer(data []byte) (srv *ServerTimings, cached int, hasCached bool) {
	top, ok := decodeGeneric(bytes.TrimSpace(data))
	if !ok {
		return nil, 0, false
	}
	if e, present := top["error"]; (present && e != nil) || (top["object"] == "error") {
		return nil, 0, false
	}
	if u, isObj := top["usage"].(map[string]any); isObj {
		if d, isObj := u["prompt_tokens_details"].(map[string]any); isObj {
			if x, present := d["cached_tokens"]; present {
				cached, hasCached = refCount(x)
			}
		}
	}
	m, isObj := top["timings"].(map[string]any)
	if !isObj {
		return nil, cached, hasCached
	}
	s := &ServerTimings{}
	var prefill, decode bool
	s.PrefillMS, prefill = refMS(m["prompt_ms"], 1)
	s.DecodeMS, decode = refMS(m["predicted_ms"], 1)
	s.PromptEvaluated, _ = refCount(m["prompt_n"])
	s.Generated, _ = refCount(m["predicted_n"])
	s.CachedPrompt, s.HasCached = refCount(m["cache_n"])
	if !prefill || !decode {
		return nil, cached, hasCached
	}
	return s, cached, hasCached
}

// refOllama decodes one Ollama stream line the slow way; ok is false where
// DecodeOllama must fail.
func refOllama(data []byte) (w want, srv *ServerTimings, ok bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return want{empty: true}, nil, true
	}
	if !json.Valid(data) {
		return want{}, nil, false
	}
	top, isObj := decodeGeneric(data)
	if !isObj {
		return want{}, nil, false
	}
	strOrNull := func(x any) (string, bool) {
		if x == nil {
			return "", true
		}
		s, isStr := x.(string)
		return s, isStr
	}
	if m, present := top["message"]; present && m != nil {
		msg, isObj := m.(map[string]any)
		if !isObj {
			return want{}, nil, false
		}
		for _, k := range []string{"content", "thinking"} {
			if x, present := msg[k]; present {
				s, valid := strOrNull(x)
				if !valid {
					return want{}, nil, false
				}
				w.content = w.content || s != ""
			}
		}
		if x, present := msg["tool_calls"]; present && x != nil {
			a, isArr := x.([]any)
			if !isArr {
				return want{}, nil, false
			}
			w.content = w.content || len(a) > 0
		}
	}
	done := false
	if d, present := top["done"]; present && d != nil {
		b, isBool := d.(bool)
		if !isBool {
			return want{}, nil, false
		}
		done = b
	}
	if e, present := top["error"]; present && e != nil {
		switch e := e.(type) {
		case string:
			w.errMsg = e
		case map[string]any:
			w.errMsg, _ = e["message"].(string)
			var digits string
			switch c := e["code"].(type) {
			case json.Number:
				digits = string(c)
			case string:
				digits = c
			}
			n, _ := strconv.Atoi(digits)
			w.errCode = n
		default:
			return want{}, nil, false
		}
		return want{errMsg: w.errMsg, errCode: w.errCode}, nil, true
	}
	if !done {
		return w, nil, true
	}
	w.finish = "stop"
	if r, _ := top["done_reason"].(string); r != "" {
		w.finish = r
	}
	prompt, okP := refCount(top["prompt_eval_count"])
	eval, okE := refCount(top["eval_count"])
	if okP && okE {
		w.usage, w.prompt, w.completion = true, prompt, eval
	}
	s := &ServerTimings{PromptEvaluated: prompt, Generated: eval}
	var prefill, decode bool
	s.PrefillMS, prefill = refMS(top["prompt_eval_duration"], nsPerMS)
	s.DecodeMS, decode = refMS(top["eval_duration"], nsPerMS)
	s.LoadMS, _ = refMS(top["load_duration"], nsPerMS)
	s.TotalMS, s.HasTotal = refMS(top["total_duration"], nsPerMS)
	if prefill && decode {
		srv = s
	}
	return w, srv, true
}

func sameTimings(a, b *ServerTimings) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// FuzzDecodeOllama checks DecodeOllama against refOllama on every input.
func FuzzDecodeOllama(f *testing.F) {
	for _, l := range bytes.Split(readSample(f, "ollama_chat_stream.ndjson"), []byte("\n")) {
		f.Add(l)
	}
	for _, s := range []string{
		`{"error":"model 'x' not found"}`, `{"message":{"thinking":"hm"},"done":false}`,
		`{"message":{"tool_calls":[{"function":{"name":"f"}}]},"done":false}`,
		`{"done":true,"eval_count":1.5,"prompt_eval_count":2,"eval_duration":"3","prompt_eval_duration":4}`,
		`{"done":true,"done_reason":"stop","done":false}`, `{"message":null,"done":null}`, `[]`, `{"done":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Chunk
		err := DecodeOllama(data, &c)
		if err != nil && strings.Contains(err.Error(), "nested deeper") {
			return
		}
		w, srv, ok := refOllama(data)
		if ok != (err == nil) {
			t.Fatalf("DecodeOllama(%q) err = %v, reference ok = %v", data, err, ok)
		}
		if !ok {
			return
		}
		if got := summarize(&c, err); got != w {
			t.Fatalf("DecodeOllama(%q)\n got %+v\nwant %+v", data, got, w)
		}
		if !sameTimings(c.Server, srv) {
			t.Fatalf("DecodeOllama(%q) server %+v, want %+v", data, c.Server, srv)
		}
	})
}
