package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The request and answer shapes of /tokenize as vLLM, SGLang and llama.cpp
// document them; each test server counts words, plus a template where the
// server would apply one.
func TestProbeTokenize(t *testing.T) {
	words := func(s string) int { return len(strings.Fields(s)) }
	for _, tc := range []struct {
		name      string
		handler   func(w http.ResponseWriter, body map[string]any)
		wantShape string
		want      int // count of "a b c"
	}{
		{"vLLM messages with template", func(w http.ResponseWriter, b map[string]any) {
			msgs, ok := b["messages"].([]any)
			if !ok {
				http.Error(w, `{"detail":"field required"}`, http.StatusUnprocessableEntity)
				return
			}
			n := words(msgs[0].(map[string]any)["content"].(string)) + 5
			fmt.Fprintf(w, `{"count":%d,"max_model_len":8192,"tokens":[%s]}`, n, strings.TrimSuffix(strings.Repeat("1,", n), ","))
		}, "messages", 8},
		{"SGLang prompt", func(w http.ResponseWriter, b map[string]any) {
			p, ok := b["prompt"].(string)
			if !ok {
				http.Error(w, `{"error":"prompt required"}`, http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, `{"tokens":[%s],"count":%d,"max_model_len":4096}`, strings.TrimSuffix(strings.Repeat("2,", words(p)), ","), words(p))
		}, "prompt", 3},
		{"llama.cpp content", func(w http.ResponseWriter, b map[string]any) {
			c, ok := b["content"].(string)
			if !ok {
				// llama.cpp answers a body without "content" with an error
				http.Error(w, `{"error":{"code":400,"message":"\"content\" must be provided"}}`, http.StatusBadRequest)
				return
			}
			n := words(c) + 1 // add_special: BOS
			fmt.Fprintf(w, `{"tokens":[%s]}`, strings.TrimSuffix(strings.Repeat("3,", n), ","))
		}, "content", 4},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/tokenize" {
				http.NotFound(w, r)
				return
			}
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			tc.handler(w, body)
		}))
		st, err := ProbeTokenize(context.Background(), srv.Client(), srv.URL+"/v1", "", "m", APIChat)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		n, err := st.Count(context.Background(), "a b c")
		if st.Shape != tc.wantShape || err != nil || n != tc.want {
			t.Errorf("%s: shape %q count %d (%v), want %q %d", tc.name, st.Shape, n, err, tc.wantShape, tc.want)
		}
		srv.Close()
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if _, err := ProbeTokenize(context.Background(), srv.Client(), srv.URL, "", "m", APIChat); !errors.Is(err, ErrNoTokenize) {
		t.Errorf("a server without /tokenize: %v, want ErrNoTokenize", err)
	}
}
