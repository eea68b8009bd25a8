package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/cmdhelp/cmdhelptest"
	"github.com/knee-dev/knee/internal/record"
)

// --front-end-serial 0 switches off the default's 8 ms serial admission:
// knee sim predicts exactly as with a server profile whose
// front_end_serial_ms is 0, and a burst of 40 no longer spreads over the
// ~320 ms of 40 admissions. Before, an explicit 0 read as "the default".
// An efficiency flag's explicit 0 exits 2 naming it.
func TestExplicitZeroCostFlagIsHonoured(t *testing.T) {
	type summary struct {
		TTFT struct{ P50, Max, Mean float64 } `json:"ttft_ms"`
		RPS  float64                          `json:"request_throughput_rps"`
		Run  struct {
			Config map[string]string `json:"config"`
		} `json:"run"`
	}
	burst := []string{"--concurrency", "40", "--requests", "40", "--input-tokens", "64", "--output-tokens", "4"}
	var def, zero, viaProfile summary
	simJSON(t, &def, burst...)
	simJSON(t, &zero, append(burst, "--front-end-serial", "0")...)
	profile := filepath.Join(t.TempDir(), "no-serial.yaml")
	if err := os.WriteFile(profile, []byte("name: no-serial\nengine: vllm\nversion: test\nfront_end_serial_ms: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	simJSON(t, &viaProfile, append(burst, "--server-profile", profile)...)
	t.Logf("burst of 40: TTFT max %.1f ms by default, %.1f with --front-end-serial 0, %.1f with a profile of no serial admission", def.TTFT.Max, zero.TTFT.Max, viaProfile.TTFT.Max)
	if zero.TTFT != viaProfile.TTFT || zero.RPS != viaProfile.RPS {
		t.Errorf("--front-end-serial 0: TTFT %+v, %.2f req/s; a profile without serial admission: %+v, %.2f req/s; want the same prediction",
			zero.TTFT, zero.RPS, viaProfile.TTFT, viaProfile.RPS)
	}
	// 39 admissions of 8 ms come to 312 ms; without them the burst's last
	// first token is the engine's prefill of the burst, well under that.
	if def.TTFT.Max-zero.TTFT.Max < 39*8*0.8 {
		t.Errorf("TTFT max %.1f ms by default, %.1f with --front-end-serial 0: want the default's ~312 ms of admission gone", def.TTFT.Max, zero.TTFT.Max)
	}
	if got := zero.Run.Config["front_end_serial"]; got != "0s" {
		t.Errorf("run config front_end_serial = %q, want 0s", got)
	}
	for _, cmd := range [][]string{{"sim"}, {"sim", "sweep"}} { // serve resolves through the same Choice
		for _, flag := range []string{"--compute-efficiency", "--all-reduce-efficiency"} {
			code, _, errs := kneeCmd(t, append(cmd, flag, "0")...)
			if code != ExitUsage || !strings.Contains(errs, flag+" 0: want a share above 0") {
				t.Errorf("%v %s 0: exit %d: %s", cmd, flag, code, errs)
			}
		}
	}
}

// knee bench -h lists the server-metrics flags in their own group and the
// runtime trace under Output, not under "Other flags"; sweep and calibrate,
// which scrape too, show the same group.
func TestBenchHelpGroupsMetricsAndTraceFlags(t *testing.T) {
	for _, cmd := range [][]string{{"bench"}, {"sweep"}, {"calibrate"}} {
		code, out, _ := kneeCmd(t, append(cmd, "-h")...)
		if code != ExitOK {
			t.Fatalf("knee %v -h: exit %d", cmd, code)
		}
		metrics := cmdhelptest.Section(out, "Server metrics (Prometheus)")
		for _, f := range []string{"--metrics-url", "--metrics-interval", "--no-metrics"} {
			if !strings.Contains(metrics, "      "+f+" ") {
				t.Errorf("knee %v -h: %s is not in the Server metrics group:\n%s", cmd, f, out)
			}
			if strings.Contains(cmdhelptest.Section(out, "Other flags"), f+" ") {
				t.Errorf("knee %v -h: %s under Other flags", cmd, f)
			}
		}
	}
	_, out, _ := kneeCmd(t, "bench", "-h")
	if o := cmdhelptest.Section(out, "Other flags"); o != "" {
		t.Errorf("knee bench -h has flags in no group:\n%s", o)
	}
	if !strings.Contains(cmdhelptest.Section(out, "Output"), "      --runtime-trace ") {
		t.Errorf("knee bench -h: --runtime-trace not under Output:\n%s", out)
	}
}

// knee sim sweep -h fits about one screen, as knee sim -h does
// (TestSimHelpListsFewFlags): the automatic sweep's tuning is on knee help
// autosweep, named in the footer, and still changes the run.
func TestSimSweepHelpListsFewFlags(t *testing.T) {
	_, out, _ := kneeCmd(t, "sim", "sweep", "-h")
	described := strings.Count(out, "\n      --")
	if described > 35 || described < 20 {
		t.Errorf("knee sim sweep -h describes %d flags, want 20 to 35:\n%s", described, out)
	}
	if strings.Contains(out, "\nOther flags:") {
		t.Errorf("knee sim sweep -h has flags in no group:\n%s", out)
	}
	for _, f := range []string{"--min", "--max", "--factor", "--refine"} {
		if strings.Contains(out, "\n      "+f+" ") {
			t.Errorf("knee sim sweep -h describes %s; want it on knee help autosweep", f)
		}
		if !strings.Contains(out, f+" ") && !strings.Contains(out, f+"\n") {
			t.Errorf("knee sim sweep -h does not name %s at all", f)
		}
	}
	code, page, _ := kneeCmd(t, "help", "autosweep")
	for _, want := range []string{"--min float64 (default 1)   [sim sweep, sweep]", "--refine int (default 3)", "--factor float64 (default 2)", "--max float64"} {
		if code != ExitOK || !strings.Contains(page, want) {
			t.Errorf("knee help autosweep: exit %d, lacks %q:\n%s", code, want, page)
		}
	}
	// Hidden is not refused: --min 2 --max 8 --factor 2 --refine 0 sweeps
	// 2, 4 and 8 in flight and no more.
	code, js, errs := kneeCmd(t, "sim", "sweep", "--auto", "--min", "2", "--max", "8", "--factor", "2", "--refine", "0",
		"--requests", "16", "--input-tokens", "32", "--output-tokens", "4", "--seed", "1", "--json", "--quiet", "--no-store")
	if code != ExitOK {
		t.Fatalf("knee sim sweep --auto --min 2 --max 8: exit %d: %s", code, errs)
	}
	var sw struct {
		Steps []struct {
			Load float64 `json:"load"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(js), &sw); err != nil {
		t.Fatal(err)
	}
	var loads []float64
	for _, s := range sw.Steps {
		loads = append(loads, s.Load)
	}
	if !slices.Equal(loads, []float64{2, 4, 8}) {
		t.Errorf("--min 2 --max 8 --factor 2 --refine 0: loads %v, want [2 4 8]", loads)
	}
}

// knee diagnose of a stored sweep diagnoses the step knee report
// summarises, its records read as knee report and knee records read them
// (runs.Load: numbered within their step), and says so on stderr; before,
// it overlaid every step's records, each step's send times counted from
// its own start, as one run of 24 requests.
func TestDiagnoseStoredSweepReadsOneStep(t *testing.T) {
	env := map[string]string{"KNEE_DB": filepath.Join(t.TempDir(), "knee.db")}
	if code, _, errs := kneeEnv(t, env, "sweep", "--concurrency", "1,4", "--requests", "12", "--input-tokens", "32", "--output-tokens", "4", "--seed", "1", "--quiet"); code != ExitOK {
		t.Fatalf("knee sweep: exit %d: %s", code, errs)
	}
	code, out, errs := kneeEnv(t, env, "diagnose", "last", "--json")
	if code != ExitOK {
		t.Fatalf("knee diagnose last: exit %d: %s", code, errs)
	}
	var d struct {
		Window struct{ Requests int } `json:"window_facts"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Window.Requests != 12 {
		t.Errorf("knee diagnose of a sweep of two 12-request steps judged %d requests, want one step's 12", d.Window.Requests)
	}
	if !strings.Contains(errs, "is a sweep: diagnosing its step 1, 4 in flight") || !strings.Contains(errs, "--step N | knee diagnose -") {
		t.Errorf("knee diagnose of a sweep does not say which step it judged: %q", errs)
	}
}

// knee diagnose's text header and --format json count a run with
// embeddings answers alike: 40 requests, 39 completed, 10 of them item
// answers, in both.
func TestDiagnoseCountsItemAnswersAlikeInTextAndJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := record.NewWriter(f)
	for i := range 40 {
		at := time.Duration(i) * 100 * time.Millisecond
		r := record.Request{ID: int64(i), Scheduled: at, Sent: at, FirstToken: at + 10*time.Millisecond, Done: at + 50*time.Millisecond,
			StreamEnd: at + 50*time.Millisecond, InputTokens: 16, OutputTokens: 8, HTTPStatus: 200}
		switch {
		case i%4 == 0:
			r.FirstToken, r.OutputTokens, r.Items = 0, 0, 4
		case i == 1:
			r.Error, r.FirstToken, r.Done, r.HTTPStatus = record.ErrHTTP5xx, 0, 0, 500
		}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, text, errs := kneeCmd(t, "diagnose", path)
	if code != ExitOK {
		t.Fatalf("knee diagnose: exit %d: %s", code, errs)
	}
	m := regexp.MustCompile(`(\d+) requests, (\d+) completed \((\d+) embeddings or rerank answers\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("knee diagnose header lacks the counts:\n%s", text)
	}
	code, js, errs := kneeCmd(t, "diagnose", "--format", "json", path)
	if code != ExitOK {
		t.Fatalf("knee diagnose --format json: exit %d: %s", code, errs)
	}
	var d struct {
		Window struct {
			Requests    int `json:"requests"`
			Completed   int `json:"completed"`
			ItemAnswers int `json:"item_answers"`
		} `json:"window_facts"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%d %d %d", d.Window.Requests, d.Window.Completed, d.Window.ItemAnswers)
	if want := m[1] + " " + m[2] + " " + m[3]; got != want || want != "40 39 10" {
		t.Errorf("requests, completed, item answers: text %s, JSON %s; want 40 39 10 in both", want, got)
	}
}
