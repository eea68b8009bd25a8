package prompttok

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/stats"
)

// A server without /tokenize that adds a 9-token template to every prompt:
// prompts are built with the local tokenizer, the overhead is measured,
// and both notes say so.
func TestResolveWithoutTokenize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`))
	}))
	defer srv.Close()
	c := Choice{Tokenizer: "cl100k_base"}
	notes := c.Resolve(context.Background(), srv.URL, "", "m", openai.APIChat)
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "the server offers no usable /tokenize") || c.Server != nil {
		t.Errorf("notes %q, server tokenizer %v", notes, c.Server)
	}
	if c.Overhead != 9 {
		t.Errorf("overhead %d, want 9 (10 served for a 1-token prompt)", c.Overhead)
	}
	if got := c.Note(); got != "prompts built with cl100k_base; the server adds 9 tokens to every prompt (chat template, measured with one request), included in prompt_tokens_requested" {
		t.Errorf("note %q", got)
	}
}

// With --tokenizer the server is not asked to tokenize; a server that
// cannot answer leaves a note and no overhead.
func TestResolveGivenTokenizerAndBrokenServer(t *testing.T) {
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		if strings.HasSuffix(r.URL.Path, "/tokenize") {
			t.Errorf("asked %s with --tokenizer given", r.URL.Path)
		}
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer srv.Close()
	c := Choice{Tokenizer: "cl100k_base", Given: true}
	notes := c.Resolve(context.Background(), srv.URL, "", "m", openai.APIChat)
	if asked != 1 || len(notes) != 1 || !strings.HasPrefix(notes[0], "could not measure what the server adds to every prompt (HTTP 500") || c.Overhead != 0 {
		t.Errorf("asked %d, notes %q, overhead %d", asked, notes, c.Overhead)
	}
	if got := c.Note(); got != "prompts built with cl100k_base" {
		t.Errorf("note %q", got)
	}
}

func TestOffNote(t *testing.T) {
	off := &stats.PromptCheck{Compared: 10, Exact: 0, WithinOne: 0, MedianOffPct: 12.5}
	for _, tc := range []struct {
		c    Choice
		pc   *stats.PromptCheck
		want string
	}{
		{Choice{Tokenizer: "cl100k_base"}, nil, ""},
		{Choice{Tokenizer: "cl100k_base"}, off, "why served prompt lengths are +12.5% off: the prompts were built with cl100k_base, which counts differently"},
		{Choice{Tokenizer: "tok.json", Given: true}, off, "built with --tokenizer tok.json, which does not count like the server"},
		{Choice{Tokenizer: "cl100k_base"}, &stats.PromptCheck{Compared: 10, Exact: 7, WithinOne: 10}, "3 of 10 requests were served one token off"},
		{Choice{Tokenizer: "cl100k_base"}, &stats.PromptCheck{Compared: 10, Exact: 10, WithinOne: 10}, ""},
	} {
		got := tc.c.OffNote(tc.pc)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v %+v: %q, want %q", tc.c, tc.pc, got, tc.want)
		}
	}
}
