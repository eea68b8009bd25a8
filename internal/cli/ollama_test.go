package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchOllamaAPI runs knee bench --api ollama against a server that
// answers /api/chat with the NDJSON stream Ollama documents (the sample in
// internal/openai/testdata): records carry the final object's counts and
// durations as server phases, and the report says that Ollama has no
// ignore_eos.
func TestBenchOllamaAPI(t *testing.T) {
	stream, err := os.ReadFile(filepath.Join("..", "openai", "testdata", "ollama_chat_stream.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		var req struct{ Stream bool }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &req)
		if !req.Stream {
			io.WriteString(w, `{"model":"knee-tiny","message":{"role":"assistant","content":"hi"},"done":true,"done_reason":"length","prompt_eval_count":12,"eval_count":1}`)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Write(stream)
	}))
	defer srv.Close()
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--url", srv.URL, "--model", "knee-tiny", "--api", "ollama",
		"--requests", "6", "--concurrency", "2", "--output-tokens", "4", "--temperature", "0", "--quiet", "--no-store", "--out", out, "--detail")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, r := range readRecords(t, filepath.Join(out, "records.jsonl")) {
		if !r.OK() || r.OutputTokens != 4 || r.InputTokens != 256 || r.ServerPhases == nil || r.ServerPhases.QueueUnknown {
			t.Errorf("request %d: %q %s, tokens %d/%d, phases %+v", r.ID, r.Error, r.ErrorMessage, r.InputTokens, r.OutputTokens, r.ServerPhases)
		}
	}
	for _, want := range []string{"Server phases", "no ignore_eos", "adds 11 tokens"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}
