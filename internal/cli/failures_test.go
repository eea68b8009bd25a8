package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
)

// failingServer answers every streaming request with status (the probe,
// not streaming, gets a 400 so knee sends neither ignore_eos nor min_tokens).
func failingServer(t *testing.T, status int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"status %d"}}`, status), status)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A sweep whose steps all fail says so: no "measured 0 ms", no TTFT 0 ms
// in the progress lines, but the error kinds and what to fix.
func TestSweepAllFailedStepsSayNoData(t *testing.T) {
	srv := failingServer(t, http.StatusInternalServerError)
	code, out, errs := kneeCmd(t, "sweep", "--url", srv.URL, "--model", "m", "--concurrency", "1,2", "--requests", "3",
		"--slo", "p95(ttft)<2s", "--no-store")
	if code != ExitSLO {
		t.Fatalf("exit %d, want 3 (no load meets the SLO): %s", code, errs)
	}
	for _, bad := range []string{"measured 0 ms", "TTFT 0 ms", "measured 0.0"} {
		if strings.Contains(out+errs, bad) {
			t.Errorf("output reads as measured (%q):\n%s\n%s", bad, out, errs)
		}
	}
	if !strings.Contains(errs, "step 1 in flight: 0 req/s, 0 output tok/s, p95 TTFT –, errors 100.0% (http_5xx: 3; no completed requests)") {
		t.Errorf("progress line:\n%s", errs)
	}
	if !strings.Contains(out+errs, "no completed requests — 100% http_5xx: the server fails the requests: its log says why") || strings.Contains(out+errs, "start the sweep lower") {
		t.Errorf("no reason and fix given:\n%s\n%s", out, errs)
	}
	// The same in JSON: the checks say there was no data.
	code, out, _ = kneeCmd(t, "sweep", "--url", srv.URL, "--model", "m", "--concurrency", "1", "--requests", "2",
		"--slo", "p95(ttft)<2s", "--no-store", "--quiet", "--json")
	var res struct {
		Steps []struct {
			SLOs []struct {
				NoData bool `json:"no_data"`
			} `json:"slos"`
		} `json:"steps"`
		SLOSafe struct{ Reason string } `json:"slo_safe"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if code != ExitSLO || len(res.Steps) != 1 || !res.Steps[0].SLOs[0].NoData || !strings.Contains(res.SLOSafe.Reason, "no completed requests — 100% http_5xx") {
		t.Errorf("json: exit %d, %s", code, out)
	}
	// Other kinds get their own fix.
	rej := failingServer(t, http.StatusTooManyRequests)
	_, out, errs = kneeCmd(t, "sweep", "--url", rej.URL, "--model", "m", "--concurrency", "1", "--requests", "2",
		"--slo", "p95(ttft)<2s", "--no-store", "--quiet")
	if !strings.Contains(out+errs, "100% rejected: the server sheds load") {
		t.Errorf("429s:\n%s\n%s", out, errs)
	}
}

// A bench whose measurement failed (mostly errors, none completed, or
// nothing in the window) exits 1 with a loud warning, and keeps its report.
func TestBenchFailedMeasurementExits1(t *testing.T) {
	parallelUntimed(t)
	srv := failingServer(t, http.StatusInternalServerError)
	code, out, errs := kneeCmd(t, "bench", "--url", srv.URL, "--model", "m", "--requests", "4", "--concurrency", "2", "--quiet", "--no-store")
	if code != ExitFailure || !strings.Contains(errs, "all 4 requests failed (http_5xx: 4): the server fails the requests") || !strings.Contains(out, "knee bench report") {
		t.Errorf("all failed: exit %d, %s", code, errs)
	}
	// Most failed (20 of 24 against the misbehaving server).
	dir := t.TempDir()
	code, out, errs = kneeCmd(t, "bench", "--url", misbehavingServer(t).URL, "--model", "m", "--requests", "24", "--concurrency", "1",
		"--input-tokens", "16", "--output-tokens", "4", "--quiet", "--out", dir)
	if code != ExitFailure || !strings.Contains(errs, "83% of the 24 measured requests failed") || !strings.Contains(out, "warning: 83% of the 24 measured requests failed") {
		t.Errorf("mostly failed: exit %d, %s", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "records.jsonl")); strings.Count(string(b), "\n") != 24 {
		t.Errorf("records not kept")
	}
	// The warm-up takes the whole run: nothing measured.
	code, out, errs = kneeCmd(t, "bench", "--requests", "4", "--concurrency", "2", "--warmup", "30s", "--input-tokens", "16", "--output-tokens", "2",
		"--quiet", "--no-store")
	if code != ExitFailure || !strings.Contains(errs, "nothing was measured: all 4 requests fell in the warm-up (--warmup 30s") {
		t.Errorf("warm-up longer than the run: exit %d, %s\n%s", code, errs, out)
	}
	// A healthy run still exits 0.
	if code, _, errs := kneeCmd(t, "bench", "--requests", "4", "--concurrency", "2", "--input-tokens", "16", "--output-tokens", "2", "--quiet", "--no-store"); code != 0 {
		t.Errorf("healthy bench: exit %d, %s", code, errs)
	}
}

// SLO help and errors list every kind of objective, not only latency.
func TestSLOFormsDocumented(t *testing.T) {
	for _, cmd := range [][]string{{"bench", "-h"}, {"sim", "-h"}, {"sweep", "-h"}, {"sim", "sweep", "-h"}} {
		_, help, _ := kneeCmd(t, cmd...)
		for _, want := range []string{"error_rate<1%", "rejection_rate<1%", "goodput>5rps", "output_throughput>500tok/s", "p95(ttft)<2s"} {
			if !strings.Contains(help, want) {
				t.Errorf("%v lacks %q", cmd, want)
			}
		}
	}
	code, _, errs := kneeCmd(t, "sim", "--slo", "latency<1s")
	if code != ExitUsage || !strings.Contains(errs, "error_rate<1%") || !strings.Contains(errs, "goodput>5rps") {
		t.Errorf("parse error: %d %s", code, errs)
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`error_rate<1%`", "`rejection_rate", "`goodput>5rps`", "`output_throughput"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README lacks %s", want)
		}
	}
	// Values print in human units, not in the objective's: 0.06958s is 69.58ms.
	_, out, _ := kneeCmd(t, "sim", "--requests", "50", "--seed", "1", "--slo", "p95(ttft)<2s", "--quiet", "--no-store")
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "p95(ttft)<2s") {
			line = l
		}
	}
	if !strings.HasSuffix(strings.Fields(line + " x x")[2], "ms") {
		t.Errorf("SLO line %q: want the value in ms", line)
	}
}

// An open loop beyond capacity says so, and long latencies print in human
// units (the README's example, shortened).
func TestOverloadWarned(t *testing.T) {
	code, out, errs := kneeCmd(t, "sim", "--gpu", "a100-80gb", "--model", "llama-3.1-8b", "--rate", "12", "--requests", "20000",
		"--input-tokens", "2048", "--seed", "1", "--no-store", "--detail")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "warning: overloaded: the offered 12 req/s is more than the server completes") || !strings.Contains(out, "queue grows without bound") {
		t.Errorf("no overload warning:\n%s", errs)
	}
	// Both latency tables (the glance and the detail) print their TTFT row in
	// one human unit named in the title, not 2800000.00 ms nor 47m12s.
	tables := regexp.MustCompile(`(?m)^Latency \((min|h)\)\n.*\n  TTFT +([0-9.]+ +)*[0-9.]+$`).FindAllString(out, -1)
	if len(tables) != 2 || strings.Contains(out, "00000") || regexp.MustCompile(`\d+m\d\ds`).MatchString(out) {
		t.Errorf("want both latency tables in minutes or hours, one unit each; got %d:\n%s", len(tables), out)
	}
	// Within capacity: no warning.
	_, out, errs = kneeCmd(t, "sim", "--gpu", "a100-80gb", "--model", "llama-3.1-8b", "--rate", "3", "--requests", "1500",
		"--input-tokens", "2048", "--seed", "1", "--no-store")
	if strings.Contains(out+errs, "overloaded") {
		t.Errorf("warning at 3 req/s:\n%s", errs)
	}
	// A closed loop cannot overload.
	_, out, errs = kneeCmd(t, "sim", "--concurrency", "256", "--requests", "3000", "--seed", "1", "--no-store")
	if strings.Contains(out+errs, "overloaded") {
		t.Errorf("warning in a closed loop:\n%s", errs)
	}
}

// A saved scenario states the resolved workload and replays as given.
func TestSaveScenarioResolvedWorkload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.yaml")
	code, out1, errs := kneeCmd(t, "sim", "--rate", "5", "--save-scenario", path, "--quiet", "--json", "--no-store")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{"input-tokens: \"512\"", "output-tokens: \"128\"", "requests: \"1000\"", "rate: \"5\"", "arrival: poisson", "seed: "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("scenario lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "concurrency") {
		t.Errorf("an open-loop scenario saves --concurrency (refused on replay):\n%s", b)
	}
	code, out2, errs := kneeCmd(t, "sim", "--scenario-file", path, "--quiet", "--json", "--no-store")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errs)
	}
	var s1, s2 struct {
		TTFT struct{ P95 float64 } `json:"ttft_ms"`
	}
	json.Unmarshal([]byte(out1), &s1)
	json.Unmarshal([]byte(out2), &s2)
	if s1.TTFT.P95 == 0 || s1.TTFT.P95 != s2.TTFT.P95 {
		t.Errorf("replay differs: %v vs %v", s1.TTFT.P95, s2.TTFT.P95)
	}
	// A sweep's scenario keeps what it was given.
	spath := filepath.Join(t.TempDir(), "sweep.yaml")
	if code, _, errs := kneeCmd(t, "sim", "sweep", "--rate", "1,2", "--requests", "20", "--save-scenario", spath, "--quiet", "--no-store"); code != 0 {
		t.Fatalf("sim sweep: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(spath); !strings.Contains(string(b), "rate: 1,2") || !strings.Contains(string(b), "requests: \"20\"") {
		t.Errorf("sweep scenario:\n%s", b)
	}
}

// knee runs shows the figures of a run that never finished (killed, or
// still running), computed from its stored records as knee report does.
func TestRunsListsPartialFigures(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.BeginRun(store.RunMeta{Kind: store.KindBench, Target: "embedded", Model: "m", Version: Version})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		at := time.Duration(i) * 100 * time.Millisecond
		w.Add(&record.Request{ID: int64(i), Scheduled: at, Sent: at, FirstToken: at + 40*time.Millisecond,
			TokenTimes: []time.Duration{at + 40*time.Millisecond, at + 50*time.Millisecond}, Done: at + 50*time.Millisecond,
			StreamEnd: at + 50*time.Millisecond, InputTokens: 8, OutputTokens: 2})
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := kneeEnv(t, map[string]string{"KNEE_DB": db}, "runs")
	if code != 0 {
		t.Fatalf("runs: %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("runs:\n%s", out)
	}
	f := strings.Fields(lines[1])
	if ttft := f[len(f)-1]; ttft != "40.0" || f[len(f)-3] != "10" {
		t.Errorf("runs row %q: want 10 requests and TTFT p95 40.0 ms from the stored records", lines[1])
	}
	st.Close()
}
