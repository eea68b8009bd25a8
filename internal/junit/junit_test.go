package junit

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gojunit "github.com/joshdk/go-junit"
	"github.com/knee-dev/knee/internal/badinput"

	"github.com/knee-dev/knee/internal/compare"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// requests makes n measured records: ok ones with a 100 ms TTFT and four
// tokens 20 ms apart, the rest failed with kind.
func requests(ok, failed int, kind record.ErrorKind) []record.Request {
	var recs []record.Request
	for i := range ok + failed {
		r := record.Request{ID: int64(i), Sent: time.Duration(i) * time.Millisecond}
		if i < ok {
			r.FirstToken = r.Sent + 100*time.Millisecond
			for k := range 4 {
				r.TokenTimes = append(r.TokenTimes, r.FirstToken+time.Duration(k)*20*time.Millisecond)
			}
			r.Done, r.StreamEnd = r.TokenTimes[3], r.TokenTimes[3]
			r.OutputTokens, r.InputTokens = 4, 16
		} else {
			r.Error, r.ErrorMessage = kind, "refused"
			r.Done, r.StreamEnd = r.Sent+time.Millisecond, r.Sent+time.Millisecond
		}
		recs = append(recs, r)
	}
	return recs
}

func runOf(t *testing.T, recs []record.Request, failure string, objectives ...string) Run {
	t.Helper()
	set, err := slo.ParseAll(objectives)
	if err != nil {
		t.Fatal(err)
	}
	sum := stats.Summarize(recs, stats.Options{Good: set.Good})
	return Run{Kind: "bench", ID: "42", Version: "test", Target: "embedded", Model: "m", Load: "concurrency 2",
		Config: [][2]string{{"seed", "1"}}, Start: time.Unix(1700000000, 0), Summary: sum, SLOs: set.Evaluate(sum), Failure: failure}
}

// parsed writes suites and reads them back with go-junit, a JUnit parser
// knee did not write, and checks the counts written in the attributes (what
// Jenkins and GitLab show) agree with the cases.
func parsed(t *testing.T, suites []Suite) (gojunit.Totals, []gojunit.Suite, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, "knee", suites); err != nil {
		t.Fatal(err)
	}
	got, err := gojunit.Ingest(buf.Bytes())
	if err != nil {
		t.Fatalf("go-junit cannot read the report: %v\n%s", err, buf.String())
	}
	var tot gojunit.Totals
	for _, s := range got {
		tot.Tests += s.Totals.Tests
		tot.Passed += s.Totals.Passed
		tot.Failed += s.Totals.Failed
		tot.Error += s.Totals.Error
		tot.Skipped += s.Totals.Skipped
	}
	var attrs struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &attrs); err != nil {
		t.Fatal(err)
	}
	if attrs.Tests != tot.Tests || attrs.Failures != tot.Failed || attrs.Errors != tot.Error || attrs.Skipped != tot.Skipped {
		t.Errorf("<testsuites> attributes %+v disagree with the cases %+v", attrs, tot)
	}
	return tot, got, buf.String()
}

func TestRunVerdictsParse(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		run                    Run
		tests, failed, errored int
		want                   string // in the report
	}{
		{"passing", runOf(t, requests(10, 0, ""), "", "p95(ttft)<2s", "error_rate<1%"), 3, 0, 0, "measured 100ms"},
		{"slo-failing", runOf(t, requests(10, 0, ""), "", "p95(ttft)<50ms", "error_rate<1%"), 3, 1, 0,
			"p95(ttft)&lt;50ms: measured 100ms, objective &lt; 50ms"},
		{"error-rate", runOf(t, requests(8, 2, record.ErrHTTP5xx), "", "p95(ttft)<2s", "error_rate<1%"), 3, 1, 0,
			"error_rate&lt;1%: measured 20%"},
		// Every request failed: the run case fails and the latency SLO
		// cannot be judged, so it is an error, never a pass.
		{"all-failed", runOf(t, requests(0, 5, record.ErrConnect), "all 5 requests failed (connect: 5)", "p95(ttft)<2s"), 2, 1, 1,
			"all 5 requests failed"},
		// Four-token answers have TPOT, one-token answers have none: nothing to judge.
		{"cannot-judge", runOf(t, oneToken(requests(6, 0, "")), "", "p95(tpot)<40ms", "p95(ttft)<2s"), 3, 0, 1, "cannot judge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tot, suites, text := parsed(t, []Suite{RunSuite(tc.run)})
			if tot.Tests != tc.tests || tot.Failed != tc.failed || tot.Error != tc.errored {
				t.Errorf("tests %d failures %d errors %d, want %d %d %d\n%s", tot.Tests, tot.Failed, tot.Error, tc.tests, tc.failed, tc.errored, text)
			}
			if !strings.Contains(text, tc.want) {
				t.Errorf("report lacks %q:\n%s", tc.want, text)
			}
			if p := suites[0].Properties; p["knee.run_id"] != "42" || p["config.seed"] != "1" {
				t.Errorf("properties %v: want knee.run_id 42 and config.seed 1", p)
			}
		})
	}
}

func oneToken(recs []record.Request) []record.Request {
	for i := range recs {
		recs[i].TokenTimes = recs[i].TokenTimes[:1]
		recs[i].Done, recs[i].OutputTokens = recs[i].FirstToken, 1
	}
	return recs
}

func TestInterruptedRunIsAnError(t *testing.T) {
	r := runOf(t, requests(3, 0, ""), "", "p95(ttft)<2s")
	r.Interrupted = true
	tot, _, _ := parsed(t, []Suite{RunSuite(r)})
	if tot.Error != 1 || tot.Passed != 1 {
		t.Errorf("interrupted run: %+v, want the run case an error and the SLO passed", tot)
	}
}

// slowed makes records whose TTFT is ttft, with jitter so a bootstrap has
// spread to work on.
func slowed(n int, ttft time.Duration) []record.Request {
	recs := requests(n, 0, "")
	for i := range recs {
		shift := ttft - 100*time.Millisecond + time.Duration(i%7)*time.Millisecond
		recs[i].FirstToken += shift
		for k := range recs[i].TokenTimes {
			recs[i].TokenTimes[k] += shift
		}
		recs[i].Done += shift
		recs[i].StreamEnd += shift
	}
	return recs
}

func step(t *testing.T, load float64, ttft time.Duration, set slo.Set) sweep.Step {
	t.Helper()
	recs := slowed(40, ttft)
	st := sweep.Step{Load: sweep.Load{Kind: sweep.Concurrency, Value: load}, Full: true,
		Summary: stats.Summarize(recs, stats.Options{Good: set.Good})}
	sweep.Judge(&st, set)
	return st
}

func TestSweepVerdictsParse(t *testing.T) {
	set, err := slo.ParseAll([]string{"p95(ttft)<300ms", "error_rate<1%"})
	if err != nil {
		t.Fatal(err)
	}
	analyse := func(ttfts ...time.Duration) *sweep.Result {
		var steps []sweep.Step
		for i, d := range ttfts {
			steps = append(steps, step(t, float64(int(1)<<(2*i)), d, set))
		}
		res, err := sweep.Analyze(steps, sweep.Options{SLOs: sweep.Objectives(set)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	props := [][2]string{{"knee.run_id", "7"}}
	// Steps 1 and 4 meet p95(ttft)<300ms, 16 misses it: the safe point is 4,
	// the miss at 16 is where the sweep found the limit (skipped), exit 0.
	tot, _, text := parsed(t, SweepSuites(analyse(100*time.Millisecond, 200*time.Millisecond, 900*time.Millisecond), props, nil))
	if tot.Tests != 8 || tot.Failed != 0 || tot.Error != 0 || tot.Skipped != 1 {
		t.Errorf("safe point found: %+v, want 8 tests (3 steps × 2 SLOs, sweep, slo_safe_point), 1 skipped, no failure\n%s", tot, text)
	}
	if !strings.Contains(text, "above the SLO-safe point") {
		t.Errorf("the skipped step must say why:\n%s", text)
	}
	// The lowest step already misses: no safe point (exit 3), every miss a failure.
	tot, _, text = parsed(t, SweepSuites(analyse(400*time.Millisecond, 900*time.Millisecond), props, nil))
	if tot.Tests != 6 || tot.Failed != 3 || tot.Skipped != 0 {
		t.Errorf("no safe point: %+v, want 6 tests, 3 failures (two steps' TTFT and slo_safe_point)\n%s", tot, text)
	}
}

func TestCompareVerdictsParse(t *testing.T) {
	side := func(id string, ttft time.Duration) compare.Side {
		recs := slowed(60, ttft)
		return compare.Side{ID: id, Records: recs, Summary: stats.Summarize(recs, stats.Options{}), Model: "m", Target: "t"}
	}
	res := compare.Compare(side("1", 100*time.Millisecond), side("2", 200*time.Millisecond), compare.Options{Resamples: 200, Seed: 1})
	if len(res.Worse) == 0 {
		t.Fatalf("a doubled TTFT must be worse beyond noise: %+v", res)
	}
	for _, tc := range []struct {
		failOn string
		failed int
	}{{"worse", len(res.Worse)}, {"change", len(res.Worse) + len(res.Better)}, {"none", 0}} {
		tot, _, text := parsed(t, []Suite{CompareSuite(&res, tc.failOn)})
		if tot.Tests != len(res.Metrics) || tot.Failed != tc.failed || tot.Error != 0 {
			t.Errorf("--fail-on %s: %+v, want %d tests and %d failures\n%s", tc.failOn, tot, len(res.Metrics), tc.failed, text)
		}
	}
}

// TestSweepClassVerdictsParse: a mix's classes are judged per step, so a
// class failing at the lowest load fails the JUnit report and names itself,
// even with no run-wide objective.
func TestSweepClassVerdictsParse(t *testing.T) {
	var steps []sweep.Step
	for i, ttft := range []float64{200, 400} {
		var s sweep.Step
		s.Load = sweep.Load{Kind: sweep.Rate, Value: float64(i + 1)}
		s.Summary.Requests, s.Summary.Completed = 10, 10
		s.Classes = []sweep.ClassStep{{Name: "chat", Own: []string{"p95(ttft)<150ms"},
			Summary: stats.Summary{Requests: 10, Completed: 10, TTFT: stats.Dist{Count: 10, P95: ttft}}}}
		sweep.Judge(&s, nil)
		steps = append(steps, s)
	}
	res, err := sweep.Analyze(steps, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tot, _, text := parsed(t, SweepSuites(res, nil, nil))
	if tot.Tests != 4 || tot.Failed != 3 {
		t.Errorf("%+v, want 4 tests (2 steps' chat objective, sweep, slo_safe_point), 3 failures\n%s", tot, text)
	}
	if !strings.Contains(text, "chat: p95(ttft)&lt;150ms: measured 200") && !strings.Contains(text, "chat: p95(ttft)<150ms: measured 200") {
		t.Errorf("the failure must name the class and its value:\n%s", text)
	}
}

// A folder, or a file under one that cannot be made, is refused before any
// work as bad input; a written file holds the suites.
func TestCheckAndWriteFile(t *testing.T) {
	dir := t.TempDir()
	if err := CheckFile(dir); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("a folder: %v", err)
	}
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	if err := CheckFile(filepath.Join(blocker, "x.xml")); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "cannot make its folder") {
		t.Errorf("under a file: %v", err)
	}
	path := filepath.Join(dir, "new", "junit.xml")
	if err := CheckFile(path); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, "knee sim", []Suite{{Name: "run"}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `name="knee sim"`) {
		t.Errorf("written: %s", b)
	}
	if CheckFile("") != nil || WriteFile("", "x", nil) != nil {
		t.Error("no --junit: want nothing done")
	}
}
