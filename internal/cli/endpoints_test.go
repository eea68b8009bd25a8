package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/stats"
)

// small is a short bench against the embedded server.
var small = []string{"--requests", "8", "--concurrency", "2", "--input-tokens", "32", "--output-tokens", "4", "--seed", "3", "--quiet", "--no-store"}

func benchArgs(extra ...string) []string {
	return append(append([]string{"bench"}, small...), extra...)
}

// readSummary reads --out's summary.json.
func readSummary(t *testing.T, dir string) stats.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s stats.Summary // the summary's fields sit at the top, beside "run"
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Embeddings: records carry items and E2E, no TTFT; the report shows E2E
// and items/s; an e2e SLO is judged.
func TestBenchEmbeddings(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), benchArgs("--api", "embeddings", "--batch-size", "4", "--slo", "p95(e2e)<60s", "--out", out, "--detail")...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	recs := readRecords(t, filepath.Join(out, "records.jsonl"))
	if len(recs) != 8 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		_, hasTTFT := r.TTFT()
		e2e, hasE2E := r.E2E()
		if !r.OK() || r.Items != 4 || hasTTFT || !hasE2E || e2e <= 0 || r.TokenSource != record.TokensFromUsage || r.InputTokens < 4*32 {
			t.Errorf("record %d: %s %s, items %d, ttft %v, e2e %v, input %d (%s)", r.ID, r.Error, r.ErrorMessage, r.Items, hasTTFT, e2e, r.InputTokens, r.TokenSource)
		}
	}
	s := readSummary(t, out)
	if s.Items != 32 || s.ItemThroughputPS <= 0 || s.E2E.Count != 8 || s.TTFT.Count != 0 || s.GoodRequests == nil || *s.GoodRequests != 8 {
		good := -1
		if s.GoodRequests != nil {
			good = *s.GoodRequests
		}
		t.Errorf("summary: items %d, %.1f/s, e2e count %d, ttft count %d, good %d of 8", s.Items, s.ItemThroughputPS, s.E2E.Count, s.TTFT.Count, good)
	}
	glance, detail, _ := strings.Cut(stdout, "\nDetail\n")
	// No TTFT row: the client-lag warning, which a busy machine raises,
	// names TTFT(sched) in its text and is no TTFT figure.
	ttftRow := false
	for _, line := range strings.Split(glance, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "TTFT") {
			ttftRow = true
		}
	}
	if !strings.Contains(glance, "items/s") || !strings.Contains(glance, "E2E") || ttftRow {
		t.Errorf("one-screen report lacks items/s or E2E, or shows TTFT:\n%s", glance)
	}
	if !strings.Contains(detail, "batch_size") {
		t.Errorf("--detail's configuration lacks batch_size:\n%s", detail)
	}
	if !strings.Contains(detail, "items/s (32 items") {
		t.Errorf("--detail lacks the items line:\n%s", detail)
	}
	if strings.Contains(stdout, "carried no content") {
		t.Errorf("embeddings reported as content-less:\n%s", stdout)
	}
}

// Rerank on both paths against the embedded server.
func TestBenchRerank(t *testing.T) {
	for _, path := range []string{"/v1/rerank", "/rerank"} {
		out := t.TempDir()
		code, stdout, stderr := kneeEnv(t, benchEnv(t), benchArgs("--api", "rerank", "--documents", "5", "--rerank-path", path, "--out", out)...)
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", path, code, stdout, stderr)
		}
		for _, r := range readRecords(t, filepath.Join(out, "records.jsonl")) {
			if !r.OK() || r.Items != 5 {
				t.Errorf("%s record %d: %s %s, items %d", path, r.ID, r.Error, r.ErrorMessage, r.Items)
			}
			// TEI reports no usage: the texts as built.
			if want := map[string]record.TokenSource{"/v1/rerank": record.TokensFromUsage, "/rerank": record.TokensFromTokenizer}[path]; r.TokenSource != want {
				t.Errorf("%s record %d: tokens from %s, want %s", path, r.ID, r.TokenSource, want)
			}
		}
		if s := readSummary(t, out); s.Items != 40 {
			t.Errorf("%s: %d items, want 40", path, s.Items)
		}
	}
}

// startHeaderServer runs knee serve behind a handler that keeps every
// request's headers.
func startHeaderServer(t *testing.T) (string, func() []http.Header) {
	t.Helper()
	srv, err := simserver.New(simserver.Config{Engine: enginetest.H100Llama8B(t, 1), ModelName: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var hs []http.Header
	hts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hs = append(hs, r.Header.Clone())
		mu.Unlock()
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hts.Close(); srv.Close() })
	return hts.URL, func() []http.Header { mu.Lock(); defer mu.Unlock(); return hs }
}

// Messages: Anthropic's headers (x-api-key from the key env, never
// printed; anthropic-version), every token counted, usage read.
func TestBenchMessages(t *testing.T) {
	url, headers := startHeaderServer(t)
	out := t.TempDir()
	env := benchEnv(t)
	code, stdout, stderr := kneeEnv(t, env, benchArgs("--url", url, "--model", "m", "--api", "messages", "--api-key-env", "KNEE_TEST_KEY", "--out", out, "--detail")...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	n := 0
	for _, h := range headers() {
		if h.Get("Anthropic-Version") == "" {
			continue // the reachability check
		}
		n++
		if h.Get("X-Api-Key") != env["KNEE_TEST_KEY"] || h.Get("Authorization") != "" {
			t.Errorf("headers %v: want x-api-key and no Authorization", h)
		}
	}
	if n != 8 {
		t.Errorf("%d requests with anthropic-version, want 8", n)
	}
	for _, r := range readRecords(t, filepath.Join(out, "records.jsonl")) {
		if !r.OK() || r.OutputTokens != 4 || len(r.TokenTimes) != 4 || r.InputTokens != 32 || r.FinishReason != "max_tokens" {
			t.Errorf("record %d: %s %s, out %d, chunks %d, in %d, finish %q", r.ID, r.Error, r.ErrorMessage, r.OutputTokens, len(r.TokenTimes), r.InputTokens, r.FinishReason)
		}
	}
	assertNoSecret(t, env["KNEE_TEST_KEY"], out, stdout, stderr)
}

// assertNoSecret fails when the key appears in the output or any file
// under dir.
func assertNoSecret(t *testing.T, key, dir string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		if strings.Contains(o, key) {
			t.Errorf("the API key was printed")
		}
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("the API key is in %s", p)
			}
		}
		return nil
	})
}

// Images: drawn in-process, sent as data URLs; each counts ⌈W/28⌉·⌈H/28⌉
// tokens in the requested prompt, as knee serve counts it, so the served
// length matches and no "longer than requested" warning is raised.
func TestBenchImages(t *testing.T) {
	for _, api := range []string{"chat", "messages"} {
		out := t.TempDir()
		code, stdout, stderr := kneeEnv(t, benchEnv(t), benchArgs("--api", api, "--images", "2", "--image-size", "56x84", "--image-format", "jpeg", "--out", out)...)
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", api, code, stdout, stderr)
		}
		for _, r := range readRecords(t, filepath.Join(out, "records.jsonl")) {
			// 2 images × ⌈56/28⌉·⌈84/28⌉ = 12 tokens of the requested prompt.
			if !r.OK() || r.TokenSource != record.TokensFromUsage || r.InputTokens != r.PromptTokensRequested || r.PromptTokensRequested <= 12 {
				t.Errorf("%s record %d: %s %s, input %d for a %d-token prompt with 12 image tokens", api, r.ID, r.Error, r.ErrorMessage, r.InputTokens, r.PromptTokensRequested)
			}
		}
		// The first screen says what each prompt carries.
		if strings.Contains(stdout+stderr, "than requested") || !strings.Contains(stdout, "2 56x84 images per prompt (6 tokens each") {
			t.Errorf("%s: a prompt-length warning, or the first screen does not show the images:\n%s\n%s", api, stdout, stderr)
		}
	}
}

// Flags an API cannot take exit 2, naming what was wrong and what is
// expected.
func TestBenchAPIFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--api", "embeddings", "--slo", "p95(ttft)<1s"}, "no first token"},
		{[]string{"--api", "rerank", "--slo", "p99(itl)<50ms"}, "judge it by e2e"},
		{[]string{"--api", "embeddings", "--slo", "p50(tpot)<10ms"}, "has no tpot"},
		{[]string{"--batch-size", "4"}, "--batch-size applies to --api embeddings, not chat"},
		{[]string{"--api", "embeddings", "--documents", "3"}, "--documents applies to --api rerank"},
		{[]string{"--api", "embeddings", "--batch-size", "-1"}, "want 1 or more"},
		{[]string{"--api", "rerank", "--rerank-path", "/v2/rerank"}, "want /v1/rerank"},
		{[]string{"--rerank-path", "/rerank"}, "--rerank-path applies to --api rerank"},
		{[]string{"--api", "embeddings", "--images", "1"}, "--images applies to --api chat or messages"},
		{[]string{"--image-size", "10x10"}, "need --images"},
		{[]string{"--images", "1", "--image-size", "0x5"}, "WIDTHxHEIGHT"},
		{[]string{"--images", "1", "--image-size", "big"}, "WIDTHxHEIGHT"},
		{[]string{"--images", "1", "--image-format", "gif"}, "want png or jpeg"},
		{[]string{"--api", "images"}, "want one of chat, completions, ollama, embeddings, rerank, messages"},
		{[]string{"--api", "messages", "--ignore-eos", "true"}, "--api messages has no ignore_eos"},
		{[]string{"--api", "embeddings", "--ignore-eos", "true"}, "--api embeddings has no ignore_eos"},
	} {
		code, _, stderr := kneeEnv(t, benchEnv(t), benchArgs(c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q", c.args, code, stderr, c.want)
		}
	}
	code, _, stderr := kneeCmd(t, "sweep", "--api", "embeddings", "--concurrency", "1,2", "--requests", "4", "--slo", "p95(ttft)<1s", "--quiet", "--no-store")
	if code != ExitUsage || !strings.Contains(stderr, "no first token") {
		t.Errorf("sweep: exit %d, %q", code, stderr)
	}
}

// A sweep of embeddings: the table shows items/s and E2E, and the knee is
// found on requests per second (nothing is generated).
func TestSweepEmbeddings(t *testing.T) {
	code, stdout, stderr := kneeCmd(t, "sweep", "--api", "embeddings", "--batch-size", "2", "--concurrency", "1,2", "--requests", "6",
		"--input-tokens", "32", "--seed", "3", "--quiet", "--no-store", "--slo", "p95(e2e)<60s")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "items/s") || !strings.Contains(stdout, "E2E p95") {
		t.Errorf("sweep table:\n%s", stdout)
	}
}

// knee serve --image-tokens sets every image's cost; a bench with images
// against it reads that cost from the usage, and bench --image-tokens says
// it, so the requested prompt is what the server counts.
func TestServeImageTokens(t *testing.T) {
	if code, _, errs := kneeCmd(t, "serve", "--image-tokens", "-1"); code != ExitUsage || !strings.Contains(errs, "--image-tokens -1") {
		t.Errorf("--image-tokens -1: exit %d, %q", code, errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, codeCh := startServe(t, ctx, "--model", "llama-3.1-8b", "--image-tokens", "100")
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), benchArgs("--url", url, "--model", "llama-3.1-8b", "--images", "3", "--image-size", "640x480",
		"--image-tokens", "100", "--out", out)...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, r := range readRecords(t, filepath.Join(out, "records.jsonl")) {
		if !r.OK() || r.InputTokens != r.PromptTokensRequested || r.PromptTokensRequested <= 300 {
			t.Errorf("record %d: %s, input %d for a %d-token prompt with 3 images of 100", r.ID, r.Error, r.InputTokens, r.PromptTokensRequested)
		}
	}
	if strings.Contains(stdout+stderr, "than requested") {
		t.Errorf("a prompt-length warning with --image-tokens as the server counts:\n%s\n%s", stdout, stderr)
	}
	cancel()
	<-codeCh
}

// A mix's classes may each speak their own API: every request goes to its
// class's endpoint and is read as that API; objectives an API cannot be
// judged by exit 2 naming the mix line.
func TestMixClassesOwnAPI(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mix := write("mix.yaml", `seed: 3
classes:
  - name: talk
    share: 0.4
    input_tokens: "32"
    output_tokens: "4"
  - name: embed
    share: 0.3
    input_tokens: "32"
    output_tokens: "1"
    api: embeddings
    slo: ["p95(e2e)<60s"]
  - name: claude
    share: 0.3
    input_tokens: "32"
    output_tokens: "4"
    api: messages
`)
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--mix", mix, "--requests", "12", "--concurrency", "3", "--batch-size", "2",
		"--quiet", "--no-store", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	seen := map[string]int{}
	for _, r := range readRecords(t, filepath.Join(out, "records.jsonl")) {
		seen[r.Class]++
		_, hasTTFT := r.TTFT()
		switch {
		case !r.OK():
			t.Errorf("record %d (%s): %s %s", r.ID, r.Class, r.Error, r.ErrorMessage)
		case r.Class == "embed" && (r.Items != 2 || hasTTFT):
			t.Errorf("record %d (embed): %d items, TTFT %v", r.ID, r.Items, hasTTFT)
		case r.Class != "embed" && (r.Items != 0 || !hasTTFT || r.OutputTokens != 4):
			t.Errorf("record %d (%s): %d items, TTFT %v, %d output tokens", r.ID, r.Class, r.Items, hasTTFT, r.OutputTokens)
		}
	}
	if len(seen) != 3 {
		t.Errorf("classes seen: %v", seen)
	}

	for _, c := range []struct {
		file, body string
		args       []string
		want       string
	}{
		{"bad-api.yaml", "classes:\n  - name: a\n    share: 1\n    input_tokens: \"8\"\n    output_tokens: \"2\"\n    api: images\n", nil, "bad-api.yaml:2: class a: api \"images\""},
		{"ttft-embed.yaml", "classes:\n  - name: a\n    share: 0.5\n    input_tokens: \"8\"\n    output_tokens: \"2\"\n  - name: e\n    share: 0.5\n    input_tokens: \"8\"\n    output_tokens: \"2\"\n    api: rerank\n    slo: [\"p95(ttft)<1s\"]\n", nil, "ttft-embed.yaml:6: class e speaks rerank"},
		{"run-ttft.yaml", "classes:\n  - name: e\n    share: 1\n    input_tokens: \"8\"\n    output_tokens: \"2\"\n    api: embeddings\n", []string{"--slo", "p95(ttft)<1s"}, "class e at"},
	} {
		p := write(c.file, c.body)
		code, _, stderr := kneeEnv(t, benchEnv(t), append([]string{"bench", "--mix", p, "--requests", "4", "--concurrency", "1", "--quiet", "--no-store"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want 2 saying %q", c.file, code, stderr, c.want)
		}
	}
}
