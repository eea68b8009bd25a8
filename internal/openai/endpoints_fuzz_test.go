package openai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// checkAnswer holds a decoded answer to what encoding/json reads of the
// same bytes: invalid JSON never decodes, and a decoded answer counts the
// list's elements, each index answered at most once below want.
func checkAnswer(t *testing.T, body []byte, want int, a Answer, err error, list string) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrPayload) {
			t.Fatalf("error %v does not wrap ErrPayload", err)
		}
		return
	}
	if !json.Valid(body) {
		t.Fatalf("%q is not JSON but decoded as %+v", body, a)
	}
	if a.Err != nil {
		return
	}
	if a.Items > want {
		t.Fatalf("%q: %d items for %d inputs", body, a.Items, want)
	}
	var n int
	if list == "" {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil {
			n = len(arr)
		} else {
			var obj map[string]json.RawMessage
			json.Unmarshal(body, &obj)
			json.Unmarshal(obj["results"], &arr)
			n = len(arr)
		}
	} else {
		var obj map[string]json.RawMessage
		var arr []json.RawMessage
		json.Unmarshal(body, &obj)
		json.Unmarshal(obj[list], &arr)
		n = len(arr)
	}
	if n != a.Items {
		t.Fatalf("%q: decoded %d items, encoding/json finds %d", body, a.Items, n)
	}
}

func FuzzDecodeEmbeddings(f *testing.F) {
	for _, s := range []string{
		`{"object":"list","data":[{"index":1,"object":"embedding","embedding":[0.1,-2e-3]},{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":12}}`,
		`{"data":[{"embedding":"AAAA"}]}`, `{"error":{"message":"m","type":"t","code":"400"}}`,
		`{"object":"error","message":"m"}`, `{"data":null}`, `[]`, ``, `{"data":[{"embedding":[1,2],"index":null}]}`,
	} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, body []byte, want uint8) {
		w := int(want%8) + 1
		a, err := DecodeEmbeddings(body, w)
		checkAnswer(t, body, w, a, err, "data")
	})
}

func FuzzDecodeRerank(f *testing.F) {
	for _, s := range []string{
		`{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":-1}],"usage":{"total_tokens":40}}`,
		`[{"index":1,"score":0.99},{"index":0,"score":0.01}]`, `{"error":"Input validation error","error_type":"Validation"}`,
		`{"object":"error","message":"m","code":400}`, `[{"index":null,"score":1}]`, `{}`,
	} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, body []byte, want uint8) {
		w := int(want%8) + 1
		a, err := DecodeRerank(body, w)
		checkAnswer(t, body, w, a, err, "")
	})
}

func FuzzDecodeMessages(f *testing.F) {
	for _, s := range messagesStream {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Add([]byte(`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":3},"knee_timing":{"queue_ms":1,"token_times_ms":[1,2]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Chunk
		err := DecodeMessages(data, &c)
		if err != nil {
			if !errors.Is(err, ErrPayload) {
				t.Fatalf("error %v does not wrap ErrPayload", err)
			}
			return
		}
		if c.Err != nil && (c.Content || c.Done || c.HasUsage) {
			t.Fatalf("%q: an error event also counts as content, end or usage: %+v", data, c)
		}
		if c.Content && (c.Done || c.Empty) {
			t.Fatalf("%q: content and end at once: %+v", data, c)
		}
		if c.Timing != nil && !strings.Contains(string(data), "knee_timing") {
			t.Fatalf("%q: a timing from nowhere", data)
		}
	})
}
