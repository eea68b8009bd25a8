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
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/cli"
	"github.com/knee-dev/knee/internal/cpuclock"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/tracetest"
)

// The integration tests run knee against the real server that .ci/run
// starts (scripts/ollama.sh) and find through these variables.
const (
	envURL       = "KNEE_REALSERVER_URL"
	envModel     = "KNEE_REALSERVER_MODEL"
	envParallel  = "KNEE_REALSERVER_PARALLEL"
	envTokenizer = "KNEE_REALSERVER_TOKENIZER" // the model's tokenizer.json
)

const howToStart = "start one with: bash scripts/ollama.sh start /tmp/knee-ollama && set -a && . /tmp/knee-ollama/env && set +a"

type server struct {
	url, model, tokenizer string
	parallel              int
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
	s := server{url: strings.TrimRight(url, "/"), model: model, tokenizer: os.Getenv(envTokenizer), parallel: 4}
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
	for _, api := range []string{"chat", "ollama"} {
		for _, c := range []int{1, 4, 16} {
			t.Run(fmt.Sprintf("api=%s/concurrency=%d", api, c), func(t *testing.T) {
				dir := t.TempDir()
				requests := max(8, 2*c)
				knee(t, benchArgs(s, dir, c, requests, "--api", api)...)
				checkComplete(t, readRecords(t, filepath.Join(dir, "records.jsonl")), requests)
			})
		}
	}
}

// With Ollama's native API every record carries the server's own prefill
// and decode times, and the client cannot see the first token before the
// server has finished the prompt.
func TestOllamaAPIServerTimings(t *testing.T) {
	s := realServer(t)
	dir := t.TempDir()
	const requests = 12
	knee(t, benchArgs(s, dir, s.parallel, requests, "--api", "ollama")...)
	recs := readRecords(t, filepath.Join(dir, "records.jsonl"))
	checkComplete(t, recs, requests)
	for _, r := range recs {
		p := r.ServerPhases
		if p == nil || p.Prefill <= 0 || p.Decode <= 0 {
			t.Errorf("request %d: server phases %+v, want prefill and decode times", r.ID, p)
			continue
		}
		ttft, ok := r.TTFT()
		if !ok || ttft < p.Prefill {
			t.Errorf("request %d: client TTFT %v is less than the server's prefill %v", r.ID, ttft, p.Prefill)
		}
	}
}

type sweepJSON struct {
	Knee struct {
		Load   *float64 `json:"load"`
		Reason string   `json:"reason"`
	} `json:"knee"`
	Steps []struct {
		Load       float64 `json:"load"`
		OutputTPS  float64 `json:"output_tps"`
		TTFTP50MS  float64 `json:"ttft_p50_ms"`
		TPOTP50MS  float64 `json:"tpot_p50_ms"`
		PeakFlight int     `json:"peak_in_flight"`
	} `json:"steps"`
	Warnings []string `json:"warnings"`
}

// With OLLAMA_NUM_PARALLEL=4 the server decodes at most 4 sequences at once;
// more wait in its queue. The sweep must place the knee there and say that
// queueing is what grows past it, and diagnose must call the 16-stream step
// queue pressure.
//
// A CPU server's steps slow when the host takes the VM's CPUs: one CI run
// measured 411 tok/s at 4 in flight (p50 TPOT 8.8 ms) and 516 at 8 (5.3
// ms), so the curve's peak moved to 8. A sweep whose knee misses is run
// once more; a knee that misses twice on a quiet machine fails.
func TestSweepFindsTheParallelLimit(t *testing.T) {
	s := realServer(t)
	if s.parallel != 4 {
		t.Skipf("the server runs %d in parallel; this test expects OLLAMA_NUM_PARALLEL=4", s.parallel)
	}
	loadBefore := loadAverage(t)
	m0, _ := cpuclock.Machine()
	var kneeLoad float64
	var reason string
	for attempt := 1; attempt <= 2; attempt++ {
		kneeLoad, reason = sweepParallelLimit(t, s, attempt == 1)
		if kneeLoad >= 3 && kneeLoad <= 5 && strings.Contains(reason, "queueing is what grows") {
			return
		}
		t.Logf("attempt %d: knee at %v: %s", attempt, kneeLoad, reason)
	}
	m1, _ := cpuclock.Machine()
	steal := m1.StealShare(m0)
	if busy(t, loadBefore) || steal > 0.02 {
		// Other processes' CPU use, or the host's, changes between steps
		// and bends the throughput curve; that is not data about the server.
		t.Skipf("knee at %v: this machine is too busy to measure one (load average %.1f before, %.1f after, on %d CPUs; host steal %.1f%% of CPU time)",
			kneeLoad, loadBefore, loadAverage(t), runtime.NumCPU(), 100*steal)
	}
	t.Errorf("knee at %v in two sweeps, want 4 ± 1 in flight (the server's parallel slots), with queueing named as what grows past it: %s", kneeLoad, reason)
}

// sweepParallelLimit runs the sweep of TestSweepFindsTheParallelLimit once
// and returns its knee (-1: none) and the knee's reason; with diagnose set
// it also checks knee diagnose on the 16-stream step.
func sweepParallelLimit(t *testing.T, s server, diagnose bool) (float64, string) {
	dir := t.TempDir()
	// 48-token outputs: a request spends most of its time decoding, so the
	// gap between one request's end and the next one's admission at the
	// server (a closed loop's only idle time) is small beside it.
	args := []string{"sweep", "--url", s.url, "--model", s.model, "--api", "ollama", "--no-metrics",
		"--concurrency", "1,2,4,8,16", "--requests", "32", "--warmup", "4",
		"--input-tokens", "8", "--output-tokens", "48", "--seed", "1", "--quiet", "--json", "--out", dir}
	if s.tokenizer != "" {
		// 8 prompt tokens as the server counts them, not the ~40 of cl100k's
		// words spelt out in the model's letters: prefill stays small.
		args = append(args, "--tokenizer", s.tokenizer)
	}
	out := knee(t, args...)
	var res sweepJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("sweep --json: %v\n%s", err, out)
	}
	var curve []string
	for _, st := range res.Steps {
		curve = append(curve, fmt.Sprintf("%g in flight: %.0f tok/s, p50 TTFT %.0f ms, p50 TPOT %.1f ms",
			st.Load, st.OutputTPS, st.TTFTP50MS, st.TPOTP50MS))
	}
	t.Logf("steps: %s\nknee: %s\nwarnings: %s", strings.Join(curve, "; "), res.Knee.Reason, strings.Join(res.Warnings, "; "))
	if diagnose {
		// The 16-stream step's records, as knee diagnose reads any records file.
		diag := knee(t, "diagnose", "--json", filepath.Join(dir, "records_concurrency_16.jsonl"))
		var d struct {
			Verdict  string `json:"verdict"`
			Evidence []struct {
				Text string `json:"text"`
			} `json:"evidence"`
		}
		if err := json.Unmarshal([]byte(diag), &d); err != nil {
			t.Fatalf("diagnose --json: %v\n%s", err, diag)
		}
		t.Logf("diagnose 16 in flight: %s %+v", d.Verdict, d.Evidence)
		if d.Verdict != "queue_pressure" {
			t.Errorf("diagnose on 16 in flight: %s, want queue_pressure; evidence %+v", d.Verdict, d.Evidence)
		}
	}
	if res.Knee.Load == nil {
		return -1, res.Knee.Reason
	}
	return *res.Knee.Load, res.Knee.Reason
}

// loadAverage is the 1-minute load average (0 where /proc/loadavg is absent).
func loadAverage(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		t.Logf("/proc/loadavg %q: %v", b, err)
	}
	return l
}

// busy: more runnable work than 1.5 CPUs' worth per CPU, before or after
// the sweep, besides the sweep itself (knee, Ollama and its runner keep
// about 2 CPUs busy).
func busy(t *testing.T, before float64) bool {
	limit := 1.5*float64(runtime.NumCPU()) + 2
	return before > limit || loadAverage(t) > limit
}

// Ollama has no /tokenize, so knee builds prompts with cl100k, whose words
// the test model's small vocabulary splits into letters: the server serves
// far longer prompts than asked. The records keep both lengths and the
// summary says by how much, as it must for any server whose tokenizer knee
// cannot use.
func TestPromptLengthWarning(t *testing.T) {
	s := realServer(t)
	dir := t.TempDir()
	const requests = 4
	knee(t, benchArgs(s, dir, 2, requests, "--no-metrics")...)
	for _, r := range readRecords(t, filepath.Join(dir, "records.jsonl")) {
		if r.PromptTokensRequested <= 0 || r.InputTokens <= r.PromptTokensRequested {
			t.Errorf("request %d: prompt_tokens_requested %d, served input_tokens %d: want both, served longer",
				r.ID, r.PromptTokensRequested, r.InputTokens)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Check *struct {
			Compared     int     `json:"compared"`
			MedianOffPct float64 `json:"median_off_pct"`
		} `json:"prompt_tokens_check"`
		ConnectionRetries *int     `json:"connection_retries"`
		Warnings          []string `json:"warnings"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Check == nil || sum.Check.Compared != requests || sum.Check.MedianOffPct <= 2 {
		t.Errorf("prompt_tokens_check %+v: want all %d requests compared, median off by more than 2%%", sum.Check, requests)
	}
	warned := false
	for _, w := range sum.Warnings {
		warned = warned || strings.Contains(w, "longer than requested")
	}
	if !warned {
		t.Errorf("no warning that prompts were served longer than requested: %q", sum.Warnings)
	}
	if sum.ConnectionRetries == nil {
		t.Error("summary.json has no connection_retries")
	} else {
		t.Logf("prompts off by a median %.0f%%; %d connection retries", sum.Check.MedianOffPct, *sum.ConnectionRetries)
	}
}

// With the model's own tokenizer.json (--tokenizer), as a user would give
// it for a server without /tokenize, every prompt reaches the server with
// exactly the requested number of tokens, on the OpenAI chat API and on
// Ollama's native one: knee measured what the server adds (BOS) and built
// the rest from words the tokenizer counts as one token.
func TestExactPromptsWithTokenizer(t *testing.T) {
	s := realServer(t)
	if s.tokenizer == "" {
		t.Skipf("%s unset: scripts/ollama.sh start writes the model's tokenizer.json and names it", envTokenizer)
	}
	for _, api := range []string{"chat", "ollama"} {
		t.Run(api, func(t *testing.T) {
			dir := t.TempDir()
			const requests = 8
			knee(t, benchArgs(s, dir, 4, requests, "--no-metrics", "--api", api, "--tokenizer", s.tokenizer, "--input-tokens", "5:40")...)
			for _, r := range readRecords(t, filepath.Join(dir, "records.jsonl")) {
				if !r.OK() || r.PromptTokensRequested < 5 || r.InputTokens != r.PromptTokensRequested {
					t.Errorf("request %d (%s): requested %d prompt tokens, the server counted %d", r.ID, r.Error, r.PromptTokensRequested, r.InputTokens)
				}
			}
			var sum struct {
				Check struct {
					Compared int `json:"compared"`
					Exact    int `json:"exact"`
				} `json:"prompt_tokens_check"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err == nil {
				err = json.Unmarshal(b, &sum)
			}
			if err != nil {
				t.Fatal(err)
			}
			if sum.Check.Compared != requests || sum.Check.Exact != requests {
				t.Errorf("prompt_tokens_check: %d of %d exact, want all %d", sum.Check.Exact, sum.Check.Compared, requests)
			}
		})
	}
}

// The Azure code trace's first 20 s replayed against Ollama, its requests
// cut to 256 tokens so that a CPU server keeps up: every request is
// served, with exactly the prompt the trace (cut) asks for and all its
// output, and the send lag is logged. Ollama takes a core for its runner,
// so the client's sends compete with it, as with any co-located server.
func TestTraceReplay(t *testing.T) {
	s := realServer(t)
	if s.tokenizer == "" {
		t.Skipf("%s unset: exact trace prompts need the model's tokenizer.json", envTokenizer)
	}
	path := tracetest.Path(t, "azure_llm_2023_code.csv")
	dir := t.TempDir()
	const maxContext = 256
	out := knee(t, "bench", "--url", s.url, "--model", s.model, "--tokenizer", s.tokenizer, "--no-metrics",
		"--trace", path, "--trace-end", "20s", "--trace-max-context", fmt.Sprint(maxContext),
		"--seed", "1", "--quiet", "--json", "--out", dir)
	var sum struct {
		Requests int                             `json:"requests"`
		Lag      struct{ P50, P99, Max float64 } `json:"lag_ms"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	recs := readRecords(t, filepath.Join(dir, "records.jsonl"))
	if len(recs) < 10 || len(recs) != sum.Requests {
		t.Fatalf("%d records, summary says %d requests: want the window's requests (at least 10), all recorded", len(recs), sum.Requests)
	}
	for _, r := range recs {
		switch {
		case !r.OK():
			t.Errorf("request %d: %s: %s", r.ID, r.Error, r.ErrorMessage)
		case r.InputTokens != r.PromptTokensRequested || r.OutputTokens != r.MaxTokens || r.InputTokens+r.MaxTokens > maxContext:
			t.Errorf("request %d: served %d prompt / %d output tokens for %d / %d requested, want them equal and at most %d in all",
				r.ID, r.InputTokens, r.OutputTokens, r.PromptTokensRequested, r.MaxTokens, maxContext)
		}
	}
	t.Logf("%d requests from the trace; send lag p50 %.2f ms, p99 %.2f ms, max %.2f ms", len(recs), sum.Lag.P50, sum.Lag.P99, sum.Lag.Max)
}
