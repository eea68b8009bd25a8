package loadgen

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
)

// sampleServer answers every request with one of the stream samples in
// internal/openai/testdata (written from llama.cpp's and Ollama's
// documented fields), flushed line by line, and keeps the request bodies.
func sampleServer(t *testing.T, sample, contentType string) (*httptest.Server, func() []string) {
	body, err := os.ReadFile(filepath.Join("..", "openai", "testdata", sample))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.URL.Path+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		fl := w.(http.Flusher)
		body := body
		for len(body) > 0 {
			i := 0
			for i < len(body) && body[i] != '\n' {
				i++
			}
			w.Write(body[:min(i+1, len(body))])
			fl.Flush()
			body = body[min(i+1, len(body)):]
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), bodies...) }
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// TestLlamaCppTimingsInRecords: llama.cpp's timings, on the finish chunk or
// on the usage chunk, become the record's server prefill and decode (no
// queue: llama.cpp reports nothing it follows from) and cached tokens.
func TestLlamaCppTimingsInRecords(t *testing.T) {
	for _, sample := range []string{"llamacpp_stream.sse", "llamacpp_stream_usage.sse"} {
		srv, _ := sampleServer(t, sample, "text/event-stream")
		res := run(t, Config{BaseURL: srv.URL, Model: "knee-tiny", Concurrency: 1, Requests: 1}, promptSource(4))
		r := res.Records[0]
		if !r.OK() || len(r.TokenTimes) != 4 || r.FinishReason != "length" {
			t.Fatalf("%s: error %q %s, %d chunks, finish %q", sample, r.Error, r.ErrorMessage, len(r.TokenTimes), r.FinishReason)
		}
		p := r.ServerPhases
		if p == nil || p.Prefill != ms(48.113) || p.Decode != ms(31.804) || !p.QueueUnknown {
			t.Errorf("%s: phases %+v, want prefill 48.113 ms, decode 31.804 ms, queue unknown", sample, p)
		}
		if r.CachedPromptTokens != 64 {
			t.Errorf("%s: cached prompt tokens %d, want 64", sample, r.CachedPromptTokens)
		}
	}
}

// TestOllamaAPI drives --api ollama against Ollama's documented NDJSON
// stream: the request goes to /api/chat with options.num_predict, token
// times come from the lines with content, counts and phases from the
// final object.
func TestOllamaAPI(t *testing.T) {
	srv, bodies := sampleServer(t, "ollama_chat_stream.ndjson", "application/x-ndjson")
	cfg := Config{BaseURL: srv.URL + "/v1", Model: "knee-tiny", API: openai.APIOllama, Concurrency: 1, Requests: 2,
		Temperature: 0.5, HasTemperature: true}
	res := run(t, cfg, promptSource(4))
	for _, r := range res.Records {
		if !r.OK() || len(r.TokenTimes) != 4 || r.FinishReason != "length" {
			t.Fatalf("error %q %s, %d chunks, finish %q", r.Error, r.ErrorMessage, len(r.TokenTimes), r.FinishReason)
		}
		if r.TokenSource != record.TokensFromUsage || r.OutputTokens != 4 || r.InputTokens != 256 {
			t.Errorf("tokens %d in / %d out from %q, want 256 / 4 from usage (eval_count)", r.InputTokens, r.OutputTokens, r.TokenSource)
		}
		if r.FirstToken != r.TokenTimes[0] || r.Done != r.TokenTimes[3] {
			t.Errorf("first token %v done %v, token times %v", r.FirstToken, r.Done, r.TokenTimes)
		}
		p := r.ServerPhases
		if p == nil || p.QueueUnknown || p.Prefill != ms(51.877) || p.Decode != ms(30.455) || (p.Queue-ms(13.9804)).Abs() > time.Microsecond {
			t.Errorf("phases %+v", p)
		}
	}
	for _, b := range bodies() {
		var req struct {
			Model    string
			Messages []struct{ Role, Content string }
			Stream   bool
			Options  map[string]float64
		}
		path, js, _ := cut(b)
		if err := json.Unmarshal([]byte(js), &req); err != nil || path != "/api/chat" {
			t.Fatalf("request %s: %v", b, err)
		}
		if req.Model != "knee-tiny" || !req.Stream || len(req.Messages) != 1 || req.Messages[0].Role != "user" ||
			req.Options["num_predict"] != 4 || req.Options["temperature"] != 0.5 {
			t.Errorf("request body %s", js)
		}
	}
}

func cut(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TestOllamaErrorsAndMissingTimings: an error line mid-stream fails the
// request; a final object without durations completes it without phases.
func TestOllamaErrorsAndMissingTimings(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         record.ErrorKind
	}{
		{"error line", `{"message":{"role":"assistant","content":"a"},"done":false}` + "\n" + `{"error":"an error was encountered while running the model"}` + "\n", record.ErrStreamBroken},
		{"no durations", `{"message":{"role":"assistant","content":"a"},"done":false}` + "\n" + `{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_duration":"n/a"}` + "\n", record.ErrNone},
		{"no final object", `{"message":{"role":"assistant","content":"a"},"done":false}` + "\n", record.ErrStreamBroken},
		{"not json", "<html>oops</html>\n", record.ErrBadPayload},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, tc.stream)
		}))
		res := run(t, Config{BaseURL: srv.URL, Model: "m", API: openai.APIOllama, Concurrency: 1, Requests: 1}, promptSource(4))
		srv.Close()
		r := res.Records[0]
		if r.Error != tc.want {
			t.Errorf("%s: error %q (%s), want %q", tc.name, r.Error, r.ErrorMessage, tc.want)
		}
		if r.ServerPhases != nil {
			t.Errorf("%s: phases %+v from a stream without usable durations", tc.name, r.ServerPhases)
		}
		if tc.want == record.ErrNone && (r.TokenSource != record.TokensFromChunks || r.OutputTokens != 1) {
			t.Errorf("%s: %d tokens from %q, want 1 counted from chunks", tc.name, r.OutputTokens, r.TokenSource)
		}
	}
}
