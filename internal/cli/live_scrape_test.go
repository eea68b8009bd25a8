package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/knee-dev/knee/internal/scrape"
)

// liveSummary is the part of a summary the live endpoint counts too.
type liveSummary struct {
	Completed    int   `json:"completed"`
	Errors       int   `json:"errors"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TTFT         struct {
		Count int `json:"count"`
	} `json:"ttft_ms"`
	E2E struct {
		Count int `json:"count"`
	} `json:"e2e_ms"`
}

// scrapeLive reads --metrics-addr's endpoint with knee's own scraper.
func scrapeLive(addr string) (*scrape.Parsed, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return scrape.Parse(resp.Body, scrape.Limits{})
}

// runScraped runs knee with --metrics-addr 127.0.0.1:0, scraping its
// endpoint while the load runs and once more when the load has ended, just
// before the endpoint closes. It returns the exit code, stdout, stderr, the
// final scrape and the completions each scrape during the run saw.
func runScraped(t *testing.T, args ...string) (int, string, string, *scrape.Parsed, []float64) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "knee.db")
	var stdout bytes.Buffer
	stderr := &addrWriter{found: make(chan string, 1)}
	var final *scrape.Parsed
	var finalErr error
	env := &Env{Stdin: bytes.NewReader(nil), Stdout: &stdout, Stderr: stderr,
		Getenv: func(k string) string {
			if k == "KNEE_DB" {
				return db
			}
			return ""
		},
		beforeLiveClose: func(addr string) { final, finalErr = scrapeLive(addr) },
	}
	// Scrapes during the run: as many as fit, at most 200, each after the
	// last answered; the first waits for the endpoint's address.
	stop := make(chan struct{})
	var seen []float64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var addr string
		select {
		case addr = <-stderr.found:
		case <-stop:
			return
		}
		for range 200 {
			select {
			case <-stop:
				return
			default:
			}
			p, err := scrapeLive(addr)
			if err != nil {
				return // the endpoint closed with the run
			}
			seen = append(seen, p.Sample.Values[scrape.RequestsDone])
		}
	}()
	code := MainEnv(context.Background(), env, append(args, "--metrics-addr", "127.0.0.1:0", "--metrics-linger", "0"))
	close(stop)
	wg.Wait()
	if finalErr != nil || final == nil {
		t.Fatalf("scraping the endpoint as the load ended: %v (exit %d)\n%s", finalErr, code, stderr.String())
	}
	if final.Server != "knee-client" {
		t.Errorf("knee's scraper read the endpoint as %q, want knee-client", final.Server)
	}
	return code, stdout.String(), stderr.String(), final, seen
}

// addrWriter is stderr that hands over the endpoint's address once it is
// printed.
type addrWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	found chan string
	sent  bool
}

var liveAddrRE = regexp.MustCompile(`live metrics at http://([0-9.:]+)/metrics`)

func (w *addrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := liveAddrRE.FindSubmatch(w.buf.Bytes()); m != nil && !w.sent {
		w.sent = true
		w.found <- string(m[1])
	}
	return len(p), nil
}

func (w *addrWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// checkLive compares the endpoint's final counts with a summary's, and
// checks that the counts seen during the run only grew up to the final one.
func checkLive(t *testing.T, final *scrape.Parsed, seen []float64, want liveSummary) {
	t.Helper()
	v, h := final.Sample.Values, final.Sample.Hists
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"completed", v[scrape.RequestsDone], float64(want.Completed)},
		{"errors", v[scrape.Failed], float64(want.Errors)},
		{"input tokens", v[scrape.PromptTokens], float64(want.InputTokens)},
		{"output tokens", v[scrape.GenerationTokens], float64(want.OutputTokens)},
		{"in flight after the load", v[scrape.InFlight], 0},
		{"TTFT count", h[scrape.TTFT].Count, float64(want.TTFT.Count)},
		{"E2E count", h[scrape.E2E].Count, float64(want.E2E.Count)},
	} {
		if c.got != c.want {
			t.Errorf("%s: endpoint %v, final summary %v", c.what, c.got, c.want)
		}
	}
	if want.Completed == 0 {
		t.Errorf("the run completed nothing: nothing was compared")
	}
	prev := 0.0
	for i, n := range seen {
		if n < prev || n > float64(want.Completed) {
			t.Errorf("scrape %d during the run: %v completed, after %v, final %d", i, n, prev, want.Completed)
		}
		prev = n
	}
}

// TestBenchLiveEndpointAgreesWithSummary: knee bench against the embedded
// server with --metrics-addr; the endpoint, scraped with knee's scraper as
// the load ends, counts exactly what the final summary says (issue 31).
func TestBenchLiveEndpointAgreesWithSummary(t *testing.T) {
	code, stdout, stderr, final, seen := runScraped(t, "bench", "--requests", "60", "--concurrency", "4",
		"--input-tokens", "32", "--output-tokens", "8", "--seed", "3", "--quiet", "--no-store", "--json")
	if code != ExitOK {
		t.Fatalf("bench: exit %d:\n%s", code, stderr)
	}
	var sum liveSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, stdout)
	}
	checkLive(t, final, seen, sum)
	t.Logf("%d scrapes during the run", len(seen))
}

// TestSweepLiveEndpointAgreesWithSummary: knee sweep with --metrics-addr
// serves one endpoint across its steps; as the sweep ends it counts
// exactly what the steps' summaries add up to.
func TestSweepLiveEndpointAgreesWithSummary(t *testing.T) {
	code, stdout, stderr, final, seen := runScraped(t, "sweep", "--concurrency", "1,3", "--requests", "20",
		"--input-tokens", "32", "--output-tokens", "8", "--seed", "3", "--quiet", "--no-store", "--json")
	if code != ExitOK {
		t.Fatalf("sweep: exit %d:\n%s", code, stderr)
	}
	var sw struct {
		Steps []struct {
			Summary liveSummary `json:"summary"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(stdout), &sw); err != nil || len(sw.Steps) != 2 {
		t.Fatalf("sweep --json: %v, %d steps, want 2\n%s", err, len(sw.Steps), stdout)
	}
	var total liveSummary
	for _, s := range sw.Steps {
		total.Completed += s.Summary.Completed
		total.Errors += s.Summary.Errors
		total.InputTokens += s.Summary.InputTokens
		total.OutputTokens += s.Summary.OutputTokens
		total.TTFT.Count += s.Summary.TTFT.Count
		total.E2E.Count += s.Summary.E2E.Count
	}
	checkLive(t, final, seen, total)
	if got := final.Sample.Values[scrape.RequestsDone]; got != 40 {
		t.Errorf("the endpoint counted %v completions over both steps, want 40", got)
	}
}

// TestSweepOTLPDownCollector: knee sweep with a collector that is down
// reports it once and runs every step as without it.
func TestSweepOTLPDownCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), "sweep", "--concurrency", "1,2", "--requests", "6", "--input-tokens", "16",
		"--output-tokens", "4", "--quiet", "--no-store", "--json", "--otlp-endpoint", down)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "OpenTelemetry export"); n != 1 {
		t.Errorf("the down collector was reported %d times, want once:\n%s", n, stderr)
	}
	var sw struct {
		Steps []struct {
			Summary liveSummary `json:"summary"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(stdout), &sw); err != nil || len(sw.Steps) != 2 {
		t.Fatalf("sweep --json: %v\n%s", err, stdout)
	}
	for i, s := range sw.Steps {
		if s.Summary.Completed != 6 {
			t.Errorf("step %d completed %d of 6 with the collector down", i+1, s.Summary.Completed)
		}
	}
	code, _, stderr = kneeEnv(t, benchEnv(t), "sweep", "--concurrency", "1", "--requests", "2", "--quiet", "--no-store",
		"--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-protocol", "thrift")
	if code != ExitUsage || !strings.Contains(stderr, "--otlp-protocol") {
		t.Errorf("sweep --otlp-protocol thrift: exit %d, want 2 naming the flag:\n%s", code, stderr)
	}
	code, _, stderr = kneeEnv(t, benchEnv(t), "sweep", "--concurrency", "1", "--requests", "2", "--quiet", "--no-store",
		"--metrics-addr", "not an address")
	if code != ExitUsage || !strings.Contains(stderr, "--metrics-addr") {
		t.Errorf("sweep --metrics-addr 'not an address': exit %d, want 2 naming the flag:\n%s", code, stderr)
	}
}
