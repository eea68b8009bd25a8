package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEndpoint(t *testing.T) {
	tests := []struct{ base, api, want string }{
		{"http://h:8000", "chat", "http://h:8000/v1/chat/completions"},
		{"http://h:8000/", "chat", "http://h:8000/v1/chat/completions"},
		{"http://h:8000/v1", "completions", "http://h:8000/v1/completions"},
		{"https://gw.example/prefix/v1/", "", "https://gw.example/prefix/v1/chat/completions"},
		{"https://gw.example/prefix", "completions", "https://gw.example/prefix/v1/completions"},
	}
	for _, tc := range tests {
		got, err := Endpoint(tc.base, tc.api)
		if err != nil || got != tc.want {
			t.Errorf("Endpoint(%q, %q) = %q, %v; want %q", tc.base, tc.api, got, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{"h:8000", "chat"}, {"ftp://h", "chat"}, {"http://h", "images"}, {"http://", "chat"}} {
		if _, err := Endpoint(bad[0], bad[1]); err == nil {
			t.Errorf("Endpoint(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func TestAppendBody(t *testing.T) {
	prompt := "line1\n\"quoted\" \\ tab\t ctrl\x01 é \xff end"
	var chat struct {
		Model    string `json:"model"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
		MaxTokens     int  `json:"max_tokens"`
		MinTokens     int  `json:"min_tokens"`
		IgnoreEOS     bool `json:"ignore_eos"`
		Stream        bool `json:"stream"`
		StreamOptions struct {
			IncludeUsage    bool `json:"include_usage"`
			ContinuousUsage bool `json:"continuous_usage_stats"`
		} `json:"stream_options"`
	}
	b := AppendBody(nil, Params{Model: "m<&>", Prompt: prompt, MaxTokens: 128, MinTokens: 128, IgnoreEOS: true, ContinuousUsage: true})
	if err := json.Unmarshal(b, &chat); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if chat.Model != "m<&>" || len(chat.Messages) != 1 || chat.Messages[0].Role != "user" ||
		chat.Messages[0].Content != strings.ToValidUTF8(prompt, "\uFFFD") ||
		chat.MaxTokens != 128 || chat.MinTokens != 128 || !chat.IgnoreEOS || !chat.Stream ||
		!chat.StreamOptions.IncludeUsage || !chat.StreamOptions.ContinuousUsage {
		t.Errorf("decoded %+v from %s", chat, b)
	}

	var comp map[string]any
	b = AppendBody(nil, Params{API: APICompletions, Model: "m", Prompt: "p"})
	if err := json.Unmarshal(b, &comp); err != nil {
		t.Fatal(err)
	}
	if comp["prompt"] != "p" || comp["messages"] != nil || comp["max_tokens"] != nil || comp["ignore_eos"] != nil ||
		comp["min_tokens"] != nil || comp["stream"] != true {
		t.Errorf("completions body %s", b)
	}
	if so := comp["stream_options"].(map[string]any); so["include_usage"] != true || so["continuous_usage_stats"] != nil {
		t.Errorf("stream_options %v", so)
	}
}

// fakeServer refuses the named fields the way OpenAI does.
func fakeServer(t *testing.T, refuse ...string) (*httptest.Server, *[]string) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if got := r.Header.Get("Authorization"); got != "Bearer k" {
			t.Errorf("Authorization %q", got)
		}
		for _, f := range refuse {
			if strings.Contains(string(b), `"`+f+`"`) {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":{"message":"Unrecognized request argument supplied: `+f+`"}}`)
				return
			}
		}
		io.WriteString(w, `{"choices":[{"message":{"content":"x"}}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &bodies
}

func TestProbe(t *testing.T) {
	tests := []struct {
		refuse         []string
		eos, min       bool
		wantRequests   int
		wantStatusLast int
	}{
		{nil, true, true, 1, 200},
		{[]string{"ignore_eos"}, false, true, 2, 200},
		{[]string{"min_tokens"}, true, false, 2, 200},
		{[]string{"ignore_eos", "min_tokens"}, false, false, 3, 200},
	}
	for _, tc := range tests {
		srv, bodies := fakeServer(t, tc.refuse...)
		res, err := Probe(context.Background(), srv.Client(), srv.URL+"/v1/chat/completions", "k", "m", APIChat)
		if err != nil {
			t.Fatalf("refuse %v: %v", tc.refuse, err)
		}
		if res.IgnoreEOS != tc.eos || res.MinTokens != tc.min || len(*bodies) != tc.wantRequests || res.Status != tc.wantStatusLast {
			t.Errorf("refuse %v: got %+v after %d requests, want eos=%v min=%v after %d", tc.refuse, res, len(*bodies), tc.eos, tc.min, tc.wantRequests)
		}
		if !strings.Contains((*bodies)[0], `"stream":false`) || !strings.Contains((*bodies)[0], `"max_tokens":1`) {
			t.Errorf("probe body %s", (*bodies)[0])
		}
	}
}

func TestProbeErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if _, err := Probe(context.Background(), srv.Client(), srv.URL+"/v1/chat/completions", "", "m", APIChat); err == nil ||
		!strings.Contains(err.Error(), "404") {
		t.Errorf("404: err = %v", err)
	}
	srv.Close()
	if _, err := Probe(context.Background(), http.DefaultClient, srv.URL+"/v1/chat/completions", "", "m", APIChat); err == nil {
		t.Error("closed server: no error")
	}
}

// A conversation's history goes before the user's message, in order.
func TestAppendBodyHistory(t *testing.T) {
	h := []Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: " there"}}
	var chat struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.Unmarshal(AppendBody(nil, Params{Model: "m", Prompt: "next", History: h}), &chat); err != nil {
		t.Fatal(err)
	}
	if len(chat.Messages) != 3 || chat.Messages[1].Role != "assistant" || chat.Messages[1].Content != " there" || chat.Messages[2].Content != "next" {
		t.Errorf("messages %+v", chat.Messages)
	}
	var comp struct{ Prompt string }
	json.Unmarshal(AppendBody(nil, Params{API: APICompletions, Model: "m", Prompt: "next", History: h}), &comp)
	if comp.Prompt != "hi therenext" {
		t.Errorf("completions prompt %q", comp.Prompt)
	}
}

// AppendString agrees with encoding/json on every string: the same text
// once decoded, invalid UTF-8 included (each bad byte U+FFFD).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain words", `q"uote\back`, "\x00\x1f\n\r\t\x7f", "héllo ✓ 𝄞", "bad \xff\xfe utf8 \xe2\x82", strings.Repeat("long run ", 200) + "\"end"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString([]byte("x"), s)
		if out[0] != 'x' {
			t.Fatalf("dst's bytes changed: %q", out)
		}
		var got, want string
		if err := json.Unmarshal(out[1:], &got); err != nil {
			t.Fatalf("AppendString(%q) = %s: not a JSON string: %v", s, out[1:], err)
		}
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("AppendString(%q) decodes to %q, encoding/json's to %q", s, got, want)
		}
	})
}

func BenchmarkAppendBodyLongPrompt(b *testing.B) {
	p := Params{API: APIChat, Model: "m", Prompt: strings.Repeat("the quick brown fox jumps ", 1500), MaxTokens: 100}
	b.SetBytes(int64(len(p.Prompt)))
	for b.Loop() {
		_ = AppendBody(make([]byte, 0, len(p.Prompt)+256), p)
	}
}
