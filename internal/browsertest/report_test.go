package browsertest

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// lengths gives seeded prompt/output lengths (sim.Lengths).
type lengths struct{}

func (lengths) Lengths(i int64) (int, int) {
	r := rand.New(rand.NewPCG(3, uint64(i)))
	return 200 + r.IntN(800), 32 + r.IntN(96)
}

// l4Engine is the engine the fixtures simulate: Llama-3.1-8B on one L4.
func l4Engine(t *testing.T) simengine.Config {
	t.Helper()
	g, err := simengine.LookupGPU("L4")
	if err != nil {
		t.Fatal(err)
	}
	m, err := simengine.LookupModel("Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	return simengine.DefaultConfig(g, m, 1)
}

func simulate(t *testing.T, concurrency int, requests int64) []record.Request {
	t.Helper()
	recs, _, err := sim.Collect(context.Background(), sim.Config{Engine: l4Engine(t), Gen: lengths{},
		Concurrency: concurrency, Requests: requests, WarmupRequests: concurrency, KeepTokenTimes: true})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// fixture writes a sweep report: the records and time series of its
// busiest step, the sweep curves with the knee and SLO-safe point.
func fixture(t *testing.T, dir string) string {
	var steps []sweep.Step
	var last []record.Request
	for _, c := range []int{1, 2, 4, 8, 16, 32, 64} {
		recs := simulate(t, c, int64(20*c+40))
		sum := stats.Summarize(recs, stats.Options{Series: true})
		steps = append(steps, sweep.Step{Load: sweep.Load{Kind: sweep.Concurrency, Value: float64(c)}, Summary: sum, Full: true,
			SLOMet: sum.TTFT.P95 < 2000})
		last = recs
	}
	res, err := sweep.Analyze(steps, sweep.Options{SLOs: []string{"p95(ttft)<2s"}})
	if err != nil {
		t.Fatal(err)
	}
	run := &report.Run{ID: "7", Kind: "sweep", Version: "test", Target: "simulator", Model: "Llama-3.1-8B", Load: "concurrency 1…64",
		Start: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Summary: steps[len(steps)-1].Summary,
		Config: [][2]string{{"gpu", "L4"}}}
	var buf bytes.Buffer
	if err := report.HTML(&buf, run, report.HTMLData{Records: last, Sweep: res}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where the screenshot is kept: $KNEE_TEST_ARTIFACTS, else
// a fixed folder under the temporary directory (outside the repository).
func artifactDir() string {
	if d := os.Getenv("KNEE_TEST_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "knee-test-artifacts")
}

type chartInfo struct {
	Name  string  `json:"name"`
	Drawn int     `json:"drawn"` // elements with class "data" that have a visible box
	Width float64 `json:"width"`
}

const inspectJS = `Array.from(document.querySelectorAll('figure.chart')).map(f => {
	const svg = f.querySelector('svg');
	const drawn = Array.from(f.querySelectorAll('svg .data')).filter(e => {
		const b = e.getBBox(); return b.width > 0 || b.height > 0;
	}).length;
	return {name: f.dataset.chart, drawn: drawn, width: svg ? svg.getBoundingClientRect().width : 0};
})`

// needChromium is chromium's path; it skips the test when chromium is not
// installed, except in CI, where it must be.
func needChromium(t *testing.T) string {
	t.Helper()
	exe := chromiumPath()
	if exe == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but chromium is not installed (.ci/run installs it)")
		}
		t.Skip("chromium not installed (apt-get install chromium); this test runs in CI")
	}
	return exe
}

func TestHTMLReportInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	page := fixture(t, dir)
	checkReport(t, exe, dir, page, "html-report",
		[]string{"sweep-throughput", "sweep-ttft", "ttft-cdf", "itl-cdf", "e2e-cdf", "inflight-series", "tps-series", "ttft-series", "waterfall"})
}

// chromiumOptions start headless Debian chromium as this workplace needs
// it: no sandbox (root), no GPU, and none of its background connections
// (the closed network refuses them, many at a time), with a fresh profile
// under dir and a 1280-pixel-wide window of the given height.
func chromiumOptions(exe, dir string, height int) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, height),
	}
}

// checkReport opens page in chromium and checks that exactly the charts in
// want are there, each drawn and wide enough, that nothing was fetched and
// nothing went to the console; the screenshot is kept as NAME.jpg.
func checkReport(t *testing.T, exe, dir, page, name string, want []string) {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(exe, dir, 900)...)
	defer cancelAlloc()
	// A browser that hangs must fail the test, not stall go test: past two
	// minutes the browser is stopped and every pending action errors out.
	watchdog := time.AfterFunc(2*time.Minute, cancelAlloc)
	defer watchdog.Stop()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// Start the browser and its tab with no deadline (a deadline on the first
	// run would bound the browser's life), then bound the whole test.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	// Collect console messages, exceptions and browser log entries.
	var (
		mu       sync.Mutex
		messages []chromedp.ConsoleMessage
	)
	msgCtx, stopMsgs := context.WithCancel(tctx)
	done := make(chan struct{})
	console := chromedp.Console(msgCtx)
	go func() {
		defer close(done)
		for m, err := range console {
			if err != nil {
				return
			}
			mu.Lock()
			messages = append(messages, m)
			mu.Unlock()
		}
	}()

	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatalf("opening the report: %v", err)
	}
	charts, err := chromedp.Run(tctx, chromedp.Evaluate[[]chartInfo](inspectJS))
	if err != nil {
		t.Fatalf("inspecting charts: %v", err)
	}
	fetched, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`performance.getEntriesByType('resource').map(e => e.name)`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// Give late console messages a moment, then stop listening.
	time.Sleep(200 * time.Millisecond)
	stopMsgs()
	<-done

	if err := os.MkdirAll(artifactDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(artifactDir(), name+".jpg")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	htmlCopy := filepath.Join(artifactDir(), name+".html")
	if b, err := os.ReadFile(page); err == nil {
		os.WriteFile(htmlCopy, b, 0o644)
	}
	t.Logf("screenshot: %s (%d bytes); report: %s", shotPath, len(shot), htmlCopy)

	got := map[string]chartInfo{}
	for _, c := range charts {
		got[c.Name] = c
	}
	for _, name := range want {
		c, ok := got[name]
		switch {
		case !ok:
			t.Errorf("chart %s missing from the page", name)
		case c.Drawn == 0:
			t.Errorf("chart %s drew nothing", name)
		case c.Width < 100:
			t.Errorf("chart %s is %v px wide", name, c.Width)
		}
	}
	if len(charts) != len(want) {
		t.Errorf("%d charts on the page, want %d: %+v", len(charts), len(want), charts)
	}
	if len(fetched) > 0 {
		t.Errorf("the report fetched resources; it must be self-contained: %v", fetched)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range messages {
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
			t.Errorf("console %s: %s", m.Type, m.Text)
		}
	}
	if len(shot) < 10_000 {
		t.Errorf("screenshot of %d bytes: blank page?", len(shot))
	}
	if !strings.HasPrefix(string(shot[:3]), "\xff\xd8\xff") {
		t.Errorf("screenshot is not a JPEG")
	}
}

// TestServerChartsInBrowser: a bench report of a real run against knee
// serve, whose /metrics was scraped during it, draws the server charts
// (queue beside in-flight, KV usage and preemptions, server vs client TTFT).
func TestServerChartsInBrowser(t *testing.T) {
	exe := needChromium(t)
	ec := l4Engine(t)
	ec.MaxNumSeqs = 4 // 8 streams on 4 slots: the server's queue has something to show
	url, _ := simservertest.Start(t, func(c *simserver.Config) { c.Engine = ec })
	sc := scrape.Start(context.Background(), scrape.Config{URL: url + "/metrics", Interval: 200 * time.Millisecond})
	run, err := loadgen.Start(context.Background(), loadgen.Config{BaseURL: url, API: "chat", Concurrency: 8, Requests: 40, IgnoreEOS: true,
		RequestTimeout: time.Minute}, func(int64) loadgen.Request {
		return loadgen.Request{Prompt: strings.Repeat("hello ", 300), PromptTokens: 300, MaxTokens: 24}
	})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Wait()
	series := sc.Stop()
	series.Rebase(res.Start)
	sum := stats.Summarize(res.Records, stats.Options{Series: true})
	view := scrape.BuildView(series, res.Records, sum.Window.StartMS, sum.Window.EndMS)
	rep := &report.Run{ID: "3", Kind: "bench", Version: "test", Target: url, Model: "Llama-3.1-8B", Load: "concurrency 8",
		Start: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Summary: sum, Server: view}
	var buf bytes.Buffer
	if err := report.HTML(&buf, rep, report.HTMLData{Records: res.Records}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Server view (scraped from", "TTFT split"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkReport(t, exe, dir, page, "html-report-server",
		[]string{"ttft-cdf", "itl-cdf", "e2e-cdf", "inflight-series", "tps-series", "ttft-series", "server-queue-series", "server-kv-series", "server-ttft-series", "waterfall"})
}
