package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/scrape"
)

// TestBenchScrapesServer: bench against the embedded knee serve scrapes its
// /metrics, shows the server view in the text, JSON and HTML reports, keeps
// the series in --out and the database, and knee report rebuilds the view.
func TestBenchScrapesServer(t *testing.T) {
	out := t.TempDir()
	env := benchEnv(t)
	code, stdout, stderr := kneeEnv(t, env, "bench", "--requests", "40", "--concurrency", "8",
		"--input-tokens", "256", "--output-tokens", "16", "--seed", "7", "--quiet", "--out", out, "--metrics-interval", "200ms", "--detail")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"Server view (scraped from http://127.0.0.1:", "knee serve)", "Server time distributions", "TTFT split (mean of 40 requests; server side from per-request server timings)", "server queue"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "server_metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s scrape.Series
	if err := json.Unmarshal(b, &s); err != nil || s.Server != "knee" || len(s.Samples) < 2 {
		t.Fatalf("server_metrics.json: %v, server %q, %d samples", err, s.Server, len(s.Samples))
	}
	w := s.Window(-1e18, 1e18)
	if w.Hists[scrape.Queue].Count != 40 {
		t.Errorf("scraped queue count %v, want the run's 40 requests", w.Hists[scrape.Queue].Count)
	}
	html, _ := os.ReadFile(filepath.Join(out, "report.html"))
	for _, chart := range []string{"server-queue-series", "server-kv-series", "server-ttft-series"} {
		if !strings.Contains(string(html), `data-chart="`+chart+`"`) {
			t.Errorf("report.html lacks chart %s", chart)
		}
	}
	var sum map[string]any
	b, _ = os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil || sum["server"] == nil {
		t.Errorf("summary.json lacks server: %v", err)
	}
	code, stdout, stderr = kneeEnv(t, env, "diagnose", "--server-metrics", filepath.Join(out, "server_metrics.json"), filepath.Join(out, "records.jsonl"))
	if code != ExitOK || !strings.Contains(stdout, "server metrics (knee serve /metrics at http://127.0.0.1:") {
		t.Errorf("diagnose --server-metrics (exit %d):\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = kneeEnv(t, env, "diagnose", "--server-metrics", filepath.Join(out, "records.jsonl"), filepath.Join(out, "records.jsonl"))
	if code != ExitUsage || !strings.Contains(stderr, "not a server_metrics.json") {
		t.Errorf("diagnose with a records file as --server-metrics: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = kneeEnv(t, env, "report", "1")
	if code != ExitOK || !strings.Contains(stdout, "Server view (scraped from") || !strings.Contains(stdout, "TTFT split") {
		t.Errorf("stored run's report lacks the server view (exit %d):\n%s\n%s", code, stdout, stderr)
	}
	// A second run: knee compare sets the two servers' figures side by side.
	if code, _, stderr = kneeEnv(t, env, "bench", "--requests", "40", "--concurrency", "8", "--input-tokens", "256", "--output-tokens", "16",
		"--seed", "7", "--quiet", "--metrics-interval", "200ms"); code != ExitOK {
		t.Fatalf("second bench: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = kneeEnv(t, env, "compare", "1", "2")
	if code != ExitOK || !strings.Contains(stdout, "servers' own metrics") || !strings.Contains(stdout, "server queue mean (ms)") {
		t.Errorf("compare lacks the servers' metrics (exit %d):\n%s\n%s", code, stdout, stderr)
	}
}

func TestBenchMetricsFlags(t *testing.T) {
	env := benchEnv(t)
	code, stdout, stderr := kneeEnv(t, env, "bench", "--requests", "8", "--concurrency", "2", "--input-tokens", "32", "--output-tokens", "4",
		"--quiet", "--no-metrics", "--no-store")
	if code != ExitOK || strings.Contains(stdout, "Server view") {
		t.Errorf("--no-metrics: exit %d, report:\n%s\n%s", code, stdout, stderr)
	}
	for _, args := range [][]string{{"--metrics-interval", "0s"}, {"--metrics-url", "not a url"}, {"--metrics-url", "http://h:1/metrics", "--no-metrics"}} {
		code, _, stderr = kneeEnv(t, env, append([]string{"bench", "--requests", "1", "--quiet", "--no-store"}, args...)...)
		if code != ExitUsage || !strings.Contains(stderr, args[0]) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the flag", args, code, stderr)
		}
	}
	// A metrics endpoint that is not a server knee knows: reported, never fatal.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# TYPE go_goroutines gauge\ngo_goroutines 7\n"))
	}))
	defer other.Close()
	code, stdout, stderr = kneeEnv(t, env, "bench", "--requests", "8", "--concurrency", "2", "--input-tokens", "32", "--output-tokens", "4",
		"--quiet", "--no-store", "--metrics-url", other.URL+"/metrics", "--metrics-interval", "100ms", "--detail")
	if code != ExitOK || !strings.Contains(stdout, "unknown server at "+other.URL+"/metrics") {
		t.Errorf("unknown server: exit %d, report:\n%s\n%s", code, stdout, stderr)
	}
}

// TestSweepAutoStopsOnServerQueue: an automatic open-loop sweep against a
// server far too slow for the rate sees the server's waiting queue grow in
// its metrics, cuts the step short and stops growing the load, saying so.
func TestSweepAutoStopsOnServerQueue(t *testing.T) {
	_, stdout, stderr := kneeEnv(t, benchEnv(t), "sweep", "--rate", "auto", "--min", "40", "--max", "80", "--duration", "4s", "--requests", "100000",
		"--metrics-interval", "100ms", "--step-time-scale", "50", "--input-tokens", "512", "--output-tokens", "64",
		"--no-store", "--quiet", "--grace", "1s")
	for _, want := range []string{
		"automatic sweep stopped growing at 40 req/s: the server's waiting queue grew without bound",
		"step stopped early after",
		"srv queue p95",
	} {
		if !strings.Contains(strings.Join(strings.Fields(stdout), " "), want) { // notes wrap at 100 columns
			t.Errorf("sweep output lacks %q:\n%s\n%s", want, stdout, stderr)
		}
	}
}
