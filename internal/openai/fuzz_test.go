package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// refDecode classifies a payload the slow, obvious way: encoding/json into
// generic values, then the same rules as DecodeChunk. ok is false where
// DecodeChunk must fail.
func refDecode(data []byte) (w want, timing *Timing, ok bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return want{empty: true}, nil, true
	}
	if string(data) == "[DONE]" {
		return want{done: true}, nil, true
	}
	if !json.Valid(data) {
		return want{}, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return want{}, nil, false
	}
	top, isObj := v.(map[string]any)
	if !isObj {
		return want{}, nil, false
	}
	str := func(x any) (s string, isStr, isNull bool) {
		if x == nil {
			return "", false, true
		}
		s, isStr = x.(string)
		return s, isStr, false
	}
	num := func(x any) (float64, bool) {
		if x == nil {
			return 0, true
		}
		n, isNum := x.(json.Number)
		if !isNum {
			return 0, false
		}
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil
	}
	whole := func(x any) (int, bool) {
		f, ok := num(x)
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int(f), true
	}
	code := func(x any) int {
		var s string
		switch c := x.(type) {
		case json.Number:
			s = string(c)
		case string:
			s = c
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0
		}
		return n
	}
	if ch, present := top["choices"]; present && ch != nil {
		arr, isArr := ch.([]any)
		if !isArr {
			return want{}, nil, false
		}
		for _, e := range arr {
			if e == nil {
				continue
			}
			choice, isObj := e.(map[string]any)
			if !isObj {
				return want{}, nil, false
			}
			if d, present := choice["delta"]; present && d != nil {
				delta, isObj := d.(map[string]any)
				if !isObj {
					return want{}, nil, false
				}
				for _, k := range []string{"content", "reasoning_content", "reasoning"} {
					if x, present := delta[k]; present {
						s, isStr, isNull := str(x)
						if !isStr && !isNull {
							return want{}, nil, false
						}
						w.content = w.content || s != ""
					}
				}
				if x, present := delta["tool_calls"]; present && x != nil {
					a, isArr := x.([]any)
					if !isArr {
						return want{}, nil, false
					}
					w.content = w.content || len(a) > 0
				}
			}
			if x, present := choice["text"]; present {
				s, isStr, isNull := str(x)
				if !isStr && !isNull {
					return want{}, nil, false
				}
				w.content = w.content || s != ""
			}
			if x, present := choice["finish_reason"]; present {
				s, isStr, isNull := str(x)
				if !isStr && !isNull {
					return want{}, nil, false
				}
				if w.finish == "" {
					w.finish = s
				}
			}
		}
	}
	if u, present := top["usage"]; present && u != nil {
		usage, isObj := u.(map[string]any)
		if !isObj {
			return want{}, nil, false
		}
		w.usage = true
		var ok1, ok2 bool = true, true
		if x, present := usage["prompt_tokens"]; present {
			w.prompt, ok1 = whole(x)
		}
		if x, present := usage["completion_tokens"]; present {
			w.completion, ok2 = whole(x)
		}
		if !ok1 || !ok2 {
			return want{}, nil, false
		}
	}
	if o, present := top["object"]; present {
		if _, isStr, isNull := str(o); !isStr && !isNull {
			return want{}, nil, false
		}
	}
	hasErr := false
	if e, present := top["error"]; present && e != nil {
		hasErr = true
		switch e := e.(type) {
		case string:
			w.errMsg = e
		case map[string]any:
			w.errMsg, _, _ = str(e["message"])
			w.errCode = code(e["code"])
		default:
			return want{}, nil, false
		}
	}
	if !hasErr && top["object"] == "error" {
		hasErr = true
		w.errMsg, _, _ = str(top["message"])
		w.errCode = code(top["code"])
	}
	if kt, present := top["knee_timing"]; present && kt != nil {
		m, isObj := kt.(map[string]any)
		if !isObj {
			return want{}, nil, false
		}
		timing = &Timing{}
		var oks [3]bool
		timing.QueueMS, oks[0] = num(m["queue_ms"])
		timing.PrefillMS, oks[1] = num(m["prefill_ms"])
		timing.DecodeMS, oks[2] = num(m["decode_ms"])
		if !oks[0] || !oks[1] || !oks[2] {
			return want{}, nil, false
		}
		for _, f := range []struct {
			key string
			dst *[]float64
		}{{"token_times_ms", &timing.TokenTimesMS}, {"write_times_ms", &timing.WriteTimesMS}} {
			tt, present := m[f.key]
			if !present || tt == nil {
				continue
			}
			a, isArr := tt.([]any)
			if !isArr {
				return want{}, nil, false
			}
			for _, x := range a {
				v, ok := num(x)
				if !ok {
					return want{}, nil, false
				}
				*f.dst = append(*f.dst, v)
			}
		}
	}
	if hasErr {
		w.content, w.finish, w.usage, w.prompt, w.completion = false, "", false, 0, 0
	}
	return w, timing, true
}

// FuzzDecodeChunk checks DecodeChunk against refDecode on every input.
func FuzzDecodeChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"choices":[{"delta":{"reasoning_content":"t"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"text":" a","finish_reason":"length"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12},"knee_timing":{"queue_ms":0.5,"prefill_ms":3,"decode_ms":40,"token_times_ms":[3.5,13.5]}}`,
		`{"choices":[],"knee_timing":{"queue_ms":0,"prefill_ms":3,"decode_ms":4,"token_times_ms":[3],"write_times_ms":[3.25],"write_times_ms":null}}`,
		`{"choices":[],"knee_timing":{"write_times_ms":[1,2.5,1e3],"token_times_ms":null}}`,
		`{"error":{"message":"boom","type":"x","code":500}}`,
		`{"object":"error","message":"bad","code":"400"}`,
		`[DONE]`, ``, `<html>`, `{"a":[1,2,{"b":null}],"c":"\u00e9\n"}`, `{"usage":{"completion_tokens":1e400}}`,
		`{"choices":[],"timings":{"prompt_ms":"1","predicted_ms":2,"cache_n":-1},"usage":{"prompt_tokens_details":{"cached_tokens":3}}}`,
		`{"choices":[],"timings":{"prompt_ms":1,"predicted_ms":2},"timings":null}`,
	} {
		f.Add([]byte(s))
	}
	for _, name := range []string{"llamacpp_finish_chunk.json", "llamacpp_usage_chunk.json"} {
		f.Add(readSample(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Chunk
		err := DecodeChunk(data, &c)
		if err != nil && strings.Contains(err.Error(), "nested deeper") {
			return // our depth limit is below encoding/json's
		}
		w, timing, ok := refDecode(data)
		if ok != (err == nil) {
			t.Fatalf("DecodeChunk(%q) err = %v, reference ok = %v", data, err, ok)
		}
		if !ok {
			return
		}
		if got := summarize(&c, err); got != w {
			t.Fatalf("DecodeChunk(%q)\n got %+v\nwant %+v", data, got, w)
		}
		if (c.Timing == nil) != (timing == nil) {
			t.Fatalf("DecodeChunk(%q) timing %v, want %v", data, c.Timing, timing)
		}
		srv, cached, hasCached := refChunkServer(data)
		if !sameTimings(c.Server, srv) || c.HasCached != hasCached || c.CachedTokens != cached {
			t.Fatalf("DecodeChunk(%q) server %+v cached %v %d, want %+v %v %d", data, c.Server, c.HasCached, c.CachedTokens, srv, hasCached, cached)
		}
		if timing != nil {
			g := c.Timing
			if g.QueueMS != timing.QueueMS || g.PrefillMS != timing.PrefillMS || g.DecodeMS != timing.DecodeMS ||
				!slices.Equal(g.TokenTimesMS, timing.TokenTimesMS) || !slices.Equal(g.WriteTimesMS, timing.WriteTimesMS) {
				t.Fatalf("DecodeChunk(%q) timing %+v, want %+v", data, *g, *timing)
			}
		}
	})
}
