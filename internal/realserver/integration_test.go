package realserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/cli"
	"github.com/knee-dev/knee/internal/record"
)

// The integration tests run knee against the real server that .ci/run
// starts (scripts/ollama.sh) and find through these variables.
const (
	envURL      = "KNEE_REALSERVER_URL"
	envModel    = "KNEE_REALSERVER_MODEL"
	envParallel = "KNEE_REALSERVER_PARALLEL"
)

const howToStart = "start one with: bash scripts/ollama.sh start /tmp/knee-ollama && set -a && . /tmp/knee-ollama/env && set +a"

type server struct {
	url, model string
	parallel   int
}

// realServer returns the server to test against, or skips (fails in CI,
// where .ci/run must have started one).
func realServer(t *testing.T) server {
	t.Helper()
	url, model := os.Getenv(envURL), os.Getenv(envModel)
	if url == "" || model == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s/%s are not: .ci/run starts the server; %s", envURL, envModel, howToStart)
		}
		t.Skipf("no real inference server (%s unset); %s", envURL, howToStart)
	}
	s := server{url: strings.TrimRight(url, "/"), model: model, parallel: 4}
	if p := os.Getenv(envParallel); p != "" {
		if _, err := fmt.Sscan(p, &s.parallel); err != nil {
			t.Fatalf("%s=%q: want a number", envParallel, p)
		}
	}
	logServer(t, s)
	return s
}

// logServer names the server version and the model's size in the test log.
func logServer(t *testing.T, s server) {
	t.Helper()
	var version struct {
		Version string `json:"version"`
	}
	if err := getJSON(s.url+"/api/version", nil, &version); err != nil {
		t.Fatalf("server at %s: %v", s.url, err)
	}
	var show struct {
		Details struct {
			Family        string `json:"family"`
			ParameterSize string `json:"parameter_size"`
			Quantization  string `json:"quantization_level"`
		} `json:"details"`
	}
	if err := getJSON(s.url+"/api/show", map[string]string{"model": s.model}, &show); err != nil {
		t.Fatalf("server at %s: model %s: %v", s.url, s.model, err)
	}
	t.Logf("server: ollama %s at %s, %d parallel; model %s: %s, %s parameters, %s",
		version.Version, s.url, s.parallel, s.model, show.Details.Family, show.Details.ParameterSize, show.Details.Quantization)
}

func getJSON(url string, body any, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		method, rd = http.MethodPost, bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", url, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// knee runs the CLI in-process with a temporary database and fails the test
// on a non-zero exit.
func knee(t *testing.T, args ...string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "knee.db")
	var stdout, stderr bytes.Buffer
	env := &cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string {
			if k == "KNEE_DB" {
				return db
			}
			return ""
		}}
	start := time.Now()
	code := cli.MainEnv(context.Background(), env, args)
	t.Logf("knee %s: exit %d in %.1fs", strings.Join(args, " "), code, time.Since(start).Seconds())
	if code != 0 {
		t.Fatalf("knee %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func readRecords(t *testing.T, path string) []record.Request {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := record.ReadAll(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}

// Short prompts and outputs: the whole file runs in a minute or two on a
// 2-core machine.
const (
	inputTokens  = 16
	outputTokens = 24
)

func benchArgs(s server, dir string, concurrency, requests int, extra ...string) []string {
	args := []string{"bench", "--url", s.url, "--model", s.model,
		"--concurrency", fmt.Sprint(concurrency), "--requests", fmt.Sprint(requests),
		"--input-tokens", fmt.Sprint(inputTokens), "--output-tokens", fmt.Sprint(outputTokens),
		"--seed", "1", "--quiet", "--out", dir}
	return append(args, extra...)
}

// checkComplete asserts that no request was lost and that every record's
// output tokens are the server's own count: the usage the server sent, the
// tokens its chunks carried, and (the model never emits EOS) max_tokens.
func checkComplete(t *testing.T, recs []record.Request, want int) {
	t.Helper()
	if len(recs) != want {
		t.Errorf("%d records, want %d: requests lost", len(recs), want)
	}
	for _, r := range recs {
		if !r.OK() {
			t.Errorf("request %d: %s: %s", r.ID, r.Error, r.ErrorMessage)
			continue
		}
		if r.TokenSource != record.TokensFromUsage {
			t.Errorf("request %d: output tokens from %q, want the server's usage", r.ID, r.TokenSource)
		}
		chunkTokens := 0
		for i := range r.TokenTimes {
			n := int32(1)
			if i < len(r.TokenCounts) {
				n = r.TokenCounts[i]
			}
			chunkTokens += int(n)
		}
		if r.OutputTokens != r.MaxTokens || r.OutputTokens != outputTokens || chunkTokens != r.OutputTokens {
			t.Errorf("request %d: usage says %d output tokens, its chunks carried %d, max_tokens %d, want all %d",
				r.ID, r.OutputTokens, chunkTokens, r.MaxTokens, outputTokens)
		}
		if r.FinishReason != "length" {
			t.Errorf("request %d: finish_reason %q, want length (the model never ends by itself)", r.ID, r.FinishReason)
		}
	}
}

func TestBenchLosesNoRequest(t *testing.T) {
	s := realServer(t)
	for _, c := range []int{1, 4, 16} {
		t.Run(fmt.Sprintf("concurrency=%d", c), func(t *testing.T) {
			dir := t.TempDir()
			requests := max(8, 2*c)
			knee(t, benchArgs(s, dir, c, requests)...)
			checkComplete(t, readRecords(t, filepath.Join(dir, "records.jsonl")), requests)
		})
	}
}
