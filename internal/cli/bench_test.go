package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// benchEnv runs knee with a private database.
func benchEnv(t *testing.T) map[string]string {
	return map[string]string{"KNEE_DB": filepath.Join(t.TempDir(), "knee.db"), "KNEE_TEST_KEY": "sk-secret-123"}
}

func TestBenchEmbeddedDefaultJSON(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--requests", "24", "--concurrency", "4",
		"--input-tokens", "64", "--output-tokens", "16", "--seed", "7", "--json", "--quiet", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "embedded simulated server") {
		t.Errorf("bench without --url must say it uses the embedded server; stderr:\n%s", stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
	}
	for _, key := range []string{"requests", "completed", "errors", "rejected", "duration_s", "request_throughput_rps",
		"output_token_throughput_tps", "input_token_throughput_tps", "peak_in_flight",
		"ttft_ms", "ttft_sched_ms", "itl_ms", "tpot_ms", "e2e_ms", "lag_ms"} {
		if _, ok := sum[key]; !ok {
			t.Errorf("summary lacks %q", key)
		}
	}
	if got := sum["completed"]; got != float64(24) {
		t.Errorf("completed = %v, want 24", got)
	}
	ttft := sum["ttft_ms"].(map[string]any)
	for _, stat := range []string{"mean", "p50", "p90", "p95", "p99", "p999", "max"} {
		if v, ok := ttft[stat].(float64); !ok || v <= 0 {
			t.Errorf("ttft_ms.%s = %v, want a positive number", stat, ttft[stat])
		}
	}
	for _, f := range []string{"records.jsonl", "summary.json", "report.md", "report.html"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("--out lacks %s (%v)", f, err)
		}
	}
	recs := readRecords(t, filepath.Join(out, "records.jsonl"))
	if len(recs) != 24 {
		t.Fatalf("records.jsonl has %d records, want 24", len(recs))
	}
	for _, r := range recs {
		if r.ServerPhases == nil || r.OutputTokens != 16 || r.InputTokens != 64 {
			t.Fatalf("record %d: phases %v, tokens %d/%d; want server phases and 64/16 tokens", r.ID, r.ServerPhases, r.InputTokens, r.OutputTokens)
		}
	}
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
		t.Fatal(err)
	}
	return recs
}

func TestBenchSLOFailureExits3(t *testing.T) {
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--requests", "8", "--concurrency", "2",
		"--input-tokens", "32", "--output-tokens", "8", "--slo", "p95(ttft)<1us", "--slo", "error_rate<1%", "--quiet", "--no-store")
	if code != ExitSLO {
		t.Fatalf("exit %d, want %d (SLO failed); stderr:\n%s", code, ExitSLO, stderr)
	}
	if !strings.Contains(stdout, "p95(ttft)<1us") || !strings.Contains(stderr, "SLO failed") {
		t.Errorf("report and message must name the failed objective;\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "lots"}, "concurrency"},
		{[]string{"--input-tokens", "normal:512"}, "--input-tokens"},
		{[]string{"--rate", "5", "--arrival", "zigzag"}, "--arrival"},
		{[]string{"--warmup", "soon"}, "--warmup"},
		{[]string{"--requests", "0"}, "bounded"},
		{[]string{"--slo", "p95(ttfx)<2s"}, "ttfx"},
		{[]string{"--api", "graphql"}, "--api"},
		{[]string{"--api", "ollama", "--ignore-eos", "true"}, "ignore_eos"},
		{[]string{"--temperature", "hot"}, "temperature"},
		{[]string{"--url", "http://127.0.0.1:1"}, "--model"},
		{[]string{"--url", "http://127.0.0.1:1", "--model", "m", "--api-key-env", "KNEE_UNSET_KEY"}, "KNEE_UNSET_KEY"},
		{[]string{"stray"}, "stray"},
	} {
		code, _, stderr := kneeEnv(t, benchEnv(t), append([]string{"bench", "--no-store", "--quiet"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("knee bench %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestBenchUnreachableURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	out := t.TempDir()
	code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--url", url, "--model", "m", "--requests", "5",
		"--concurrency", "2", "--quiet", "--no-store", "--out", out)
	// The start-up check finds nothing listening: exit 1 before any
	// request is sent (issue 26 item 8), so there are no records.
	if code != ExitFailure || !strings.Contains(stderr, "cannot connect") || !strings.Contains(stderr, "nothing was run") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 saying it cannot connect and ran nothing", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "records.jsonl")); err == nil {
		t.Errorf("records.jsonl written for a run that never started")
	}
}

// misbehavingServer answers streaming requests in turn: fine, 404, 500,
// 429, an HTML page, a stream cut in the middle.
func misbehavingServer(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		if !body.Stream { // the ignore_eos probe
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
			return
		}
		flusher := w.(http.Flusher)
		switch n.Add(1) % 6 {
		case 1:
			http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
		case 2:
			http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
		case 3:
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"message":"queue full"}}`, http.StatusTooManyRequests)
		case 4:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Gateway login</body></html>")
		case 5:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}`+"\n\n")
			flusher.Flush()
			panic(http.ErrAbortHandler) // cut the connection mid-stream
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < 4; i++ {
				fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"tok "}}]}`+"\n\n")
				flusher.Flush()
			}
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBenchMisbehavingServerIsData(t *testing.T) {
	parallelUntimed(t)
	srv := misbehavingServer(t)
	out := t.TempDir()
	env := benchEnv(t)
	code, stdout, stderr := kneeEnv(t, env, "bench", "--url", srv.URL, "--model", "m", "--requests", "24",
		"--concurrency", "1", "--input-tokens", "16", "--output-tokens", "4", "--quiet", "--out", out,
		"--api-key-env", "KNEE_TEST_KEY")
	// 20 of 24 failed: a failed measurement (exit 1), with everything kept.
	if code != ExitFailure || !strings.Contains(stderr, "83% of the 24 measured requests failed") {
		t.Fatalf("exit %d, want 1 saying most requests failed; stderr:\n%s", code, stderr)
	}
	recs := readRecords(t, filepath.Join(out, "records.jsonl"))
	if len(recs) != 24 {
		t.Fatalf("%d records, want 24", len(recs))
	}
	kinds := map[record.ErrorKind]int{}
	for _, r := range recs {
		kinds[r.Error]++
	}
	want := map[record.ErrorKind]int{record.ErrNone: 4, record.ErrHTTP4xx: 4, record.ErrHTTP5xx: 4,
		record.ErrRejected: 4, record.ErrBadPayload: 4, record.ErrStreamBroken: 4}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d records of kind %q, want %d (all kinds: %v)", kinds[k], k, n, kinds)
		}
	}
	if !strings.Contains(stdout, "rejected") {
		t.Errorf("report does not mention rejections:\n%s", stdout)
	}
	// The API key never appears in output or stored files.
	secret := env["KNEE_TEST_KEY"]
	if strings.Contains(stdout+stderr, secret) {
		t.Error("the API key appears in the output")
	}
	for _, f := range []string{"records.jsonl", "summary.json", "report.md", "report.html"} {
		b, _ := os.ReadFile(filepath.Join(out, f))
		if strings.Contains(string(b), secret) {
			t.Errorf("the API key appears in %s", f)
		}
	}
	db, _ := os.ReadFile(env["KNEE_DB"])
	if len(db) == 0 || strings.Contains(string(db), secret) {
		t.Errorf("database missing (%d bytes) or holds the API key", len(db))
	}
}

// Ctrl-C (a canceled context) loses nothing already measured: the report,
// the files and the stored run cover what came before the stop, and the
// requests cut off are kept as canceled records but left out of statistics.
func TestBenchInterruptKeepsResults(t *testing.T) {
	out := t.TempDir()
	db := filepath.Join(t.TempDir(), "knee.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt (as Ctrl-C does) once some records are on disk, whatever
	// the machine's speed.
	go func() {
		defer cancel()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(out, "records.jsonl")); err == nil && bytes.Count(b, []byte("\n")) >= 8 {
				return
			}
		}
	}()
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"KNEE_DB": db}[k] }}
	code := MainEnv(ctx, env, []string{"bench", "--requests", "100000", "--concurrency", "8", "--input-tokens", "64",
		"--output-tokens", "64", "--quiet", "--json", "--out", out})
	if code != ExitFailure || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 saying interrupted", code, stderr.String())
	}
	var sum struct {
		Requests, Completed, Errors int
		Window                      struct {
			ExcludedCooldown int `json:"excluded_cooldown"`
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	recs := readRecords(t, filepath.Join(out, "records.jsonl"))
	canceled := 0
	for _, r := range recs {
		if r.Error == record.ErrCanceled {
			canceled++
		}
	}
	if sum.Completed == 0 || sum.Errors != 0 || len(recs) != sum.Requests+sum.Window.ExcludedCooldown || canceled == 0 {
		t.Errorf("summary %+v, %d records (%d canceled): want completed requests, no errors, canceled ones excluded as cool-down", sum, len(recs), canceled)
	}
	code, list, _ := kneeEnv(t, map[string]string{"KNEE_DB": db}, "runs")
	if code != ExitOK || !strings.Contains(list, "interrupted") {
		t.Errorf("stored run not marked interrupted:\n%s", list)
	}
}

// --runtime-trace writes a Go runtime trace of the run with knee's
// per-request logs in it (go tool trace reads it); a path that cannot be
// created is a usage error.
func TestBenchRuntimeTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trace")
	code, _, errs := kneeCmd(t, "bench", "--runtime-trace", path, "--rate", "50", "--requests", "5", "--input-tokens", "16", "--output-tokens", "4", "--quiet", "--no-store")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) || !bytes.Contains(b, []byte("knee.due")) || !bytes.Contains(b, []byte("knee.send")) {
		t.Errorf("%s: %d bytes, want a Go trace with knee.due and knee.send logs", path, len(b))
	}
	code, _, errs = kneeCmd(t, "bench", "--runtime-trace", filepath.Join(t.TempDir(), "no", "such", "dir", "x.trace"), "--requests", "1", "--quiet", "--no-store")
	if code != 2 || !strings.Contains(errs, "--runtime-trace") {
		t.Errorf("unwritable path: exit %d, %q; want 2 naming the flag", code, errs)
	}
}

// TestBenchDefaultReportAtAGlance: the default knee bench report opens with
// one screen whose first 25 lines hold the SLO verdicts, goodput,
// throughput and TTFT/TPOT/ITL/E2E p50/p95/p99, and leaves the detail to
// --detail (issue 27 item 4; the layout's golden is report's bench-glance.txt).
func TestBenchDefaultReportAtAGlance(t *testing.T) {
	args := []string{"bench", "--requests", "20", "--concurrency", "4", "--input-tokens", "64", "--output-tokens", "8",
		"--seed", "1", "--quiet", "--no-store", "--slo", "p95(ttft)<30s", "--slo", "goodput>0.1rps"}
	code, out, errs := kneeEnv(t, benchEnv(t), args...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	lines := strings.Split(out, "\n")
	first := strings.Join(lines[:min(25, len(lines))], "\n")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  ✓  p95\(ttft\)<30s +\S+ +met$`),
		regexp.MustCompile(`(?m)^  ✓  goodput>0\.1rps +\S+ +met$`),
		regexp.MustCompile(`(?m)^  - goodput [0-9.]+ req/s \(20 of 20 completed requests met every SLO\)$`),
		regexp.MustCompile(`(?m)^  requests +20 measured · 20 completed · 0 failed`),
		regexp.MustCompile(`(?m)^  rate +[0-9.]+ req/s · output [0-9.]+ tok/s`),
		regexp.MustCompile(`(?m)^Latency \(ms\)\n +p50 +p95 +p99$`),
		regexp.MustCompile(`(?m)^  TTFT +[0-9.]+ +[0-9.]+ +[0-9.]+$`),
		regexp.MustCompile(`(?m)^  TPOT +[0-9.]+ +[0-9.]+ +[0-9.]+$`),
		regexp.MustCompile(`(?m)^  ITL +[0-9.]+ +[0-9.]+ +[0-9.]+$`),
		regexp.MustCompile(`(?m)^  E2E +[0-9.]+ +[0-9.]+ +[0-9.]+$`),
	} {
		if !want.MatchString(first) {
			t.Errorf("the first 25 lines lack %v:\n%s", want, first)
		}
	}
	if strings.Contains(out, "Definitions") || !strings.Contains(out, "--detail") {
		t.Errorf("the default report shows the detail, or does not say where it is:\n%s", out)
	}
	code, out, errs = kneeEnv(t, benchEnv(t), append(args, "--detail")...)
	if code != ExitOK || !strings.Contains(out, "\nDetail\n") || !strings.Contains(out, "Definitions") || !strings.Contains(out, "p99.9") {
		t.Errorf("--detail: exit %d, no detail:\n%s%s", code, out, errs)
	}
}
