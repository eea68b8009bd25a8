package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// chunkTokenizer is a tokenizer unlike any of knee's: every word is split
// into pieces of at most four letters ("harbor" is "harb" "or"), and the
// chat template adds a BOS, "<|user|>", "<|end|>" and "<|assistant|>"
// (four tokens) around the user message. A prompt that cl100k counts as n
// tokens is more than n here.
func chunkTokens(text string) int {
	n := 0
	for _, w := range strings.Fields(text) {
		n += (len(w) + 3) / 4
	}
	return n
}

const chunkTemplateTokens = 4

// tokenServer answers chat completions with usage counted by chunkTokens
// plus the template; with tokenize set it also offers vLLM's /tokenize.
func tokenServer(t *testing.T, tokenize bool) (*httptest.Server, *atomic.Int64) {
	var tokenizeCalls atomic.Int64
	mux := http.NewServeMux()
	if tokenize {
		mux.HandleFunc("/tokenize", func(w http.ResponseWriter, r *http.Request) {
			tokenizeCalls.Add(1)
			var req struct {
				Model    string
				Messages []struct{ Role, Content string }
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 1 {
				http.Error(w, `{"error":"want model and messages"}`, http.StatusBadRequest)
				return
			}
			n := chunkTokens(req.Messages[0].Content) + chunkTemplateTokens
			fmt.Fprintf(w, `{"count":%d,"max_model_len":4096,"tokens":[%s]}`, n, strings.TrimSuffix(strings.Repeat("7,", n), ","))
		})
	}
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string }
			Stream   bool
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil || len(req.Messages) != 1 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		prompt := chunkTokens(req.Messages[0].Content) + chunkTemplateTokens
		if !req.Stream {
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1}}`, prompt)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for range 2 {
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n")
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n", prompt)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &tokenizeCalls
}

// TestPromptsExactInServerTokens: against a server whose /tokenize counts
// with its own tokenizer and chat template, every request is served
// exactly the requested number of prompt tokens.
func TestPromptsExactInServerTokens(t *testing.T) {
	srv, calls := tokenServer(t, true)
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--url", srv.URL, "--model", "m", "--requests", "40",
		"--concurrency", "4", "--input-tokens", "5:600", "--output-tokens", "2", "--seed", "3", "--quiet", "--no-store", "--out", out, "--detail")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs := readRecords(t, filepath.Join(out, "records.jsonl"))
	lengths := map[int]bool{}
	for _, r := range recs {
		if !r.OK() || r.TokenSource != record.TokensFromUsage {
			t.Fatalf("request %d: %q %s (tokens from %q)", r.ID, r.Error, r.ErrorMessage, r.TokenSource)
		}
		if r.InputTokens != r.PromptTokensRequested {
			t.Errorf("request %d: served %d prompt tokens, requested %d", r.ID, r.InputTokens, r.PromptTokensRequested)
		}
		if r.PromptTokensRequested < 5 || r.PromptTokensRequested > 600 {
			t.Errorf("request %d: requested %d prompt tokens, outside the 5:600 asked for", r.ID, r.PromptTokensRequested)
		}
		lengths[r.PromptTokensRequested] = true
	}
	if len(lengths) < 20 {
		t.Errorf("only %d distinct prompt lengths in 40 requests drawn from 5:600", len(lengths))
	}
	if !strings.Contains(stdout, "/tokenize") || !strings.Contains(stdout, "adds 4 tokens") {
		t.Errorf("the report must name the server's /tokenize and the template's 4 tokens:\n%s", stdout)
	}
	if lengthWarned(stdout + stderr) {
		t.Errorf("no prompt-length warning expected:\n%s\n%s", stdout, stderr)
	}
	// Word pools and a check of three prompts, not one request per prompt.
	t.Logf("%d /tokenize calls; report notes:\n%s", calls.Load(), stdout[strings.Index(stdout, "Notes"):])
}

// TestPromptLengthWarning: a server without /tokenize that counts unlike
// knee's default tokenizer serves longer prompts than asked for; the live
// output, the report and summary.json say by how much and why.
func TestPromptLengthWarning(t *testing.T) {
	srv, _ := tokenServer(t, false)
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--url", srv.URL, "--model", "m", "--requests", "24",
		"--concurrency", "2", "--input-tokens", "400", "--output-tokens", "2", "--seed", "3", "--quiet", "--no-store", "--out", out, "--detail")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "warning: the server is serving prompts a median +") {
		t.Errorf("live output must warn about served prompt lengths; stderr:\n%s", stderr)
	}
	report := strings.Join(strings.Fields(stdout), " ")
	if !strings.Contains(report, "why served prompt lengths are +") || !strings.Contains(report, "served prompts a median") ||
		!strings.Contains(report, "built with cl100k_base") || !strings.Contains(report, "no usable /tokenize") {
		t.Errorf("the report must say how far off and why:\n%s", stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		PromptCheck struct {
			Compared     int     `json:"compared"`
			MedianOffPct float64 `json:"median_off_pct"`
		} `json:"prompt_tokens_check"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.PromptCheck.Compared != 24 || sum.PromptCheck.MedianOffPct < 2 {
		t.Errorf("prompt_tokens_check %+v, want 24 compared and a median more than 2%% over", sum.PromptCheck)
	}
	t.Logf("median off %.1f%%", sum.PromptCheck.MedianOffPct)
}

// TestSweepPromptsExact: knee sweep builds its prompts the same way.
func TestSweepPromptsExact(t *testing.T) {
	srv, _ := tokenServer(t, true)
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "sweep", "--url", srv.URL, "--model", "m", "--concurrency", "1,2",
		"--requests", "10", "--input-tokens", "50:300", "--output-tokens", "2", "--seed", "4", "--no-store", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "/tokenize") || lengthWarned(stdout) {
		t.Errorf("the sweep report must name the server's /tokenize and give no length warning:\n%s", stdout)
	}
	files, _ := filepath.Glob(filepath.Join(out, "records_*.jsonl"))
	n := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := record.ReadAll(fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			n++
			if r.InputTokens != r.PromptTokensRequested {
				t.Errorf("%s request %d: served %d, requested %d", f, r.ID, r.InputTokens, r.PromptTokensRequested)
			}
		}
	}
	if n != 20 {
		t.Errorf("%d records in %v, want 20", n, files)
	}
}

// lengthWarned reports any of the served-length warnings: live, report, stats.
func lengthWarned(out string) bool {
	out = strings.Join(strings.Fields(out), " ")
	return strings.Contains(out, "off the requested length") || strings.Contains(out, "why served prompt lengths") ||
		strings.Contains(out, "served prompts a median")
}
