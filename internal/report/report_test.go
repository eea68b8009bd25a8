package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func ms(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }

// ok is a completed request with chunks at the given ms offsets.
func ok(id int64, sched, sent float64, chunks ...float64) record.Request {
	r := record.Request{ID: id, Scheduled: ms(sched), Sent: ms(sent), InputTokens: 512, TokenSource: record.TokensFromUsage}
	for _, c := range chunks {
		r.TokenTimes = append(r.TokenTimes, ms(c))
	}
	r.OutputTokens = len(chunks)
	r.FirstToken, r.Done = r.TokenTimes[0], r.TokenTimes[len(chunks)-1]
	r.StreamEnd = r.Done + ms(2)
	return r
}

// fixture is a small hand-made run: one warm-up request, five completed
// (one with a three-token chunk, two with server phases), one rejected and
// one timed out, on an open loop at 4 req/s.
func fixture(t *testing.T) *Run {
	warm := ok(0, 0, 0, 120, 150, 180)
	warm.Warmup = true
	a := ok(1, 250, 250, 400, 430, 460, 490)
	a.ServerPhases = &record.Phases{Queue: ms(5), Prefill: ms(140), Decode: ms(90)}
	b := ok(2, 500, 510, 700, 730, 790, 820)
	b.ServerPhases = &record.Phases{Queue: ms(40), Prefill: ms(145), Decode: ms(120)}
	c := ok(3, 750, 750, 1000, 1040, 1070)
	c.TokenCounts = []int32{1, 3, 1}
	c.OutputTokens = 5
	c.InputTokens = 1024
	d := ok(4, 1000, 1002, 1300, 1330, 1360, 1390, 1420)
	e := ok(5, 1250, 1260, 1900, 1950)
	rej := record.Request{ID: 6, Scheduled: ms(1500), Sent: ms(1500), StreamEnd: ms(1503), Error: record.ErrRejected, HTTPStatus: 429, ErrorMessage: "queue full"}
	to := record.Request{ID: 7, Scheduled: ms(1750), Sent: ms(1751), StreamEnd: ms(2751), Error: record.ErrTimeout}
	recs := []record.Request{warm, a, b, c, d, e, rej, to}

	set, err := slo.ParseAll([]string{"p95(ttft)<500ms", "p99(itl)<100ms", "error_rate<1%"})
	if err != nil {
		t.Fatal(err)
	}
	sum := stats.Summarize(recs, stats.Options{Good: set.Good, OfferedRateRPS: 4, Series: true})
	return &Run{
		ID: "20261129-191500-ab12", Kind: "bench", Version: "0.1.0-test",
		Target: "http://127.0.0.1:8000", Model: "sim-llama-3.1-8b",
		Load: "rate 4 req/s (poisson), 7 requests", Workload: "input 512 tokens, output 4 tokens",
		Label: "golden", Status: "complete",
		Config:  [][2]string{{"rate", "4"}, {"arrival", "poisson"}, {"requests", "7"}, {"warmup", "1"}, {"seed", "42"}},
		Start:   time.Date(2026, 11, 29, 19, 15, 0, 0, time.UTC),
		Summary: sum, SLOs: set.Evaluate(sum),
		Notes: []string{"no --url given: using knee's embedded simulated server at http://127.0.0.1:8000"},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/report -update, then review the diff):\n%s", name, got)
	}
}

func TestGolden(t *testing.T) {
	for _, c := range []struct {
		file   string
		render func(*bytes.Buffer, *Run) error
	}{
		{"bench.txt", func(b *bytes.Buffer, r *Run) error { return Text(b, r) }},
		{"bench.md", func(b *bytes.Buffer, r *Run) error { return Markdown(b, r) }},
		{"bench.csv", func(b *bytes.Buffer, r *Run) error { return CSV(b, r) }},
		{"bench.json", func(b *bytes.Buffer, r *Run) error { return JSON(b, r) }},
	} {
		t.Run(c.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.render(&b, fixture(t)); err != nil {
				t.Fatal(err)
			}
			golden(t, c.file, b.Bytes())
		})
	}
}

// TestGlanceOpensWithVerdictsAndPercentiles holds issue 27's one-screen
// report: the first 25 lines carry the SLO verdicts, goodput, throughput and
// the TTFT/TPOT/ITL/E2E p50/p95/p99, and the screen says where the detail is.
func TestGlanceOpensWithVerdictsAndPercentiles(t *testing.T) {
	var b bytes.Buffer
	if err := Glance(&b, fixture(t), "detail: --detail"); err != nil {
		t.Fatal(err)
	}
	golden(t, "bench-glance.txt", b.Bytes())
	lines := strings.Split(b.String(), "\n")
	first := strings.Join(lines[:min(25, len(lines))], "\n")
	for _, want := range []string{
		"✗  p95(ttft)<500ms", "✓  p99(itl)<100ms", "✗  error_rate<1%", "goodput 1.60 req/s",
		"2.00 req/s · output 8.0 tok/s", "p50", "p95", "p99",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("the first 25 lines lack %q:\n%s", want, first)
		}
	}
	for _, row := range []string{"TTFT", "TPOT", "ITL", "E2E"} {
		if !regexp.MustCompile(`(?m)^  ` + row + ` +[0-9.]+ +[0-9.]+ +[0-9.]+$`).MatchString(first) {
			t.Errorf("the first 25 lines lack a %s row of three percentiles:\n%s", row, first)
		}
	}
	for _, detail := range []string{"Definitions", "Configuration", "p99.9", "Server phases"} {
		if strings.Contains(b.String(), detail) {
			t.Errorf("the glance shows detail %q", detail)
		}
	}
	if !strings.HasSuffix(b.String(), "detail: --detail\n") {
		t.Errorf("the glance does not end by saying where the detail is:\n%s", b.String())
	}
}

// TestOneDurationUnitPerTable: a run whose latencies reach minutes prints
// every latency cell in one unit (here minutes), never "42m04s" beside ms.
func TestOneDurationUnitPerTable(t *testing.T) {
	var recs []record.Request
	for i := range 4 {
		start := float64(i) * 1000
		// TTFT of ~100 ms, E2E of ~42 minutes
		recs = append(recs, ok(int64(i), start, start, start+100, start+2_524_000))
	}
	run := &Run{Kind: "bench", Summary: stats.Summarize(recs, stats.Options{})}
	var b bytes.Buffer
	if err := Text(&b, run); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "Latency (min)") {
		t.Errorf("a table reaching 42 minutes is not titled in minutes:\n%s", out)
	}
	if regexp.MustCompile(`\d+m\d\ds|\d+h\d\dm`).MatchString(out) {
		t.Errorf("a latency table mixes clock-style durations with plain numbers:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^  TTFT +0\.0 +0\.0 +0\.0$`).MatchString(out) || !regexp.MustCompile(`(?m)^  E2E +42\.1 +42\.1 +42\.1$`).MatchString(out) {
		t.Errorf("TTFT and E2E are not both in minutes at a glance:\n%s", out)
	}
}

// closedFixture is a plain closed-loop run: no warm-up, errors, SLOs or
// server phases, so the optional sections stay out.
func closedFixture() *Run {
	var recs []record.Request
	for i := range 8 {
		slot := float64(i/2) * 900
		r := ok(int64(i), slot, slot+0.25, slot+210+float64(i*7), slot+260+float64(i*7), slot+300+float64(i*9))
		r.TokenSource = record.TokensFromTokenizer
		recs = append(recs, r)
	}
	sum := stats.Summarize(recs, stats.Options{})
	return &Run{Kind: "bench", Version: "0.1.0-test", Target: "https://api.example.com/v1", Model: "llama",
		Load: "concurrency 2, 8 requests", Start: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), Summary: sum}
}

func TestGoldenClosedLoop(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, closedFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "closed.txt", b.Bytes())
	body, _, _ := strings.Cut(b.String(), "Definitions\n")
	for _, absent := range []string{"SLOs", "Errors", "Server phases", "TTFT adjusted", "goodput", "offered rate"} {
		if strings.Contains(body, absent) {
			t.Errorf("closed-loop report without such data shows %q", absent)
		}
	}
}

func TestTextStatesDefinitionsAndVerdicts(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, fixture(t)); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ") // definitions wrap
	for _, want := range []string{
		"excludes the first token (vLLM's convention)",
		"1 warm-up and 0 cool-down requests excluded",
		"a chunk carrying k tokens counts once",
		"✗ p95(ttft)<500ms 571.6ms not met", "✓ p99(itl)<100ms 58.8ms met", "✗ error_rate<1% 28.57% not met",
		"Server phases", "rejected", "timeout", "TTFT adjusted", "∞",
		"offered rate", "goodput",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if n := len([]rune(line)); n > textWidth+20 {
			t.Errorf("line of %d characters: %q", n, line)
		}
	}
}

func TestJSONShapeAndRoundTrip(t *testing.T) {
	run := fixture(t)
	var b bytes.Buffer
	if err := JSON(&b, run); err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	// SPEC §4's keys sit at the top level, as in summary.json.
	for _, k := range []string{"requests", "completed", "errors", "rejected", "duration_s", "request_throughput_rps",
		"output_token_throughput_tps", "input_token_throughput_tps", "goodput_rps", "offered_rate_rps",
		"achieved_rate_rps", "peak_in_flight", "ttft_ms", "ttft_sched_ms", "itl_ms", "tpot_ms", "e2e_ms", "lag_ms",
		"run", "slos", "definitions"} {
		if _, ok := top[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if p := top["ttft_ms"].(map[string]any)["p95"]; p == nil {
		t.Error("ttft_ms.p95 is null")
	}
	if top["adjusted_ttft_ms"].(map[string]any)["max"] != nil {
		t.Error("adjusted max should be null (infinite)")
	}
	back, err := ReadJSON(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := JSON(&again, back); err != nil {
		t.Fatal(err)
	}
	if again.String() != b.String() {
		t.Errorf("JSON → ReadJSON → JSON changed the document:\n%s", again.String())
	}
	var t1, t2 bytes.Buffer
	Text(&t1, run)
	Text(&t2, back)
	if t1.String() != t2.String() {
		t.Errorf("a run read back from JSON renders differently:\n%s", t2.String())
	}
	if _, err := ReadJSON(strings.NewReader("{not json")); err == nil {
		t.Error("ReadJSON accepted garbage")
	}
}

func TestCSVIsRectangular(t *testing.T) {
	var b bytes.Buffer
	if err := CSV(&b, fixture(t)); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, r := range rows {
		seen[r[0]+"/"+r[1]] = r[2]
	}
	for k, want := range map[string]string{
		"requests/value": "7", "rejected/value": "1", "adjusted_ttft_ms/max": "inf",
		"slo:error_rate<1%/met": "false", "error_kind/timeout": "1", "ttft_ms/count": "5",
	} {
		if seen[k] != want {
			t.Errorf("%s = %q, want %q", k, seen[k], want)
		}
	}
}

func TestEmptyRunRenders(t *testing.T) {
	run := &Run{Kind: "bench", Summary: stats.Summarize(nil, stats.Options{})}
	for name, f := range map[string]func(*bytes.Buffer, *Run) error{
		"text": func(b *bytes.Buffer, r *Run) error { return Text(b, r) },
		"md":   func(b *bytes.Buffer, r *Run) error { return Markdown(b, r) },
		"csv":  func(b *bytes.Buffer, r *Run) error { return CSV(b, r) },
		"json": func(b *bytes.Buffer, r *Run) error { return JSON(b, r) },
	} {
		var b bytes.Buffer
		if err := f(&b, run); err != nil || b.Len() == 0 {
			t.Errorf("%s: %v (%d bytes)", name, err, b.Len())
		}
	}
}

func TestMarkdownEscape(t *testing.T) {
	for in, want := range map[string]string{
		"p95(ttft)<500ms": "p95(ttft)<500ms",
		"error_rate<1%":   "error_rate<1%",
		"a|b *c* `d`":     `a\|b \*c\* \` + "`d\\`",
		"<script>x</b>":   "&lt;script>x&lt;/b>",
		"_emph_ and x_":   `\_emph\_ and x\_`,
		"back\\slash\nnl": `back\\slash nl`,
	} {
		if got := mdEscape(in); got != want {
			t.Errorf("mdEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConnectionRetriesAndPhasesWithoutQueue: resends are reported, and
// server phases without a queue (llama.cpp) show prefill and decode only.
func TestConnectionRetriesAndPhasesWithoutQueue(t *testing.T) {
	a := ok(1, 0, 0, 100, 130)
	a.ConnectionRetries = 2
	a.ServerPhases = &record.Phases{Prefill: ms(80), Decode: ms(25), QueueUnknown: true}
	sum := stats.Summarize([]record.Request{a}, stats.Options{})
	var b bytes.Buffer
	if err := Text(&b, &Run{Kind: "bench", Summary: sum}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "connection retries  2 (resent at once on a fresh connection") {
		t.Errorf("report lacks the connection retries:\n%s", out)
	}
	body, _, _ := strings.Cut(out, "Definitions\n")
	if !strings.Contains(body, "prefill") || !strings.Contains(body, "decode") || strings.Contains(body, "queue ") {
		t.Errorf("server phases without a queue must show prefill and decode only:\n%s", body)
	}
}

// TestTextStatesWarningsOnce: the full report (--detail) opens with the
// glance, whose Warnings section already lists the summary's warnings and
// the warning notes; the detail's Notes must not repeat them, and keeps the
// notes that are not warnings.
func TestTextStatesWarningsOnce(t *testing.T) {
	r := fixture(t)
	r.Notes = append(r.Notes, "warning: the server's clock drifted")
	r.Summary.Warnings = append(r.Summary.Warnings, "only 7 requests: percentiles above p90 rest on one request")
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range append([]string{"warning: the server's clock drifted"}, r.Summary.Warnings...) {
		if n := strings.Count(out, w); n != 1 {
			t.Errorf("%q stated %d times in the full report, want once", w, n)
		}
	}
	if n := strings.Count(out, "using knee's embedded simulated server"); n != 1 {
		t.Errorf("the note that is not a warning is stated %d times, want once (in Notes)", n)
	}
}

// Write picks the form a command's flags ask for, and its last line says
// where the detail is.
func TestWriteChoosesTheForm(t *testing.T) {
	render := func(f func(*bytes.Buffer) error) string {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	run := fixture(t)
	for _, tc := range []struct {
		asJSON, detail bool
		out            string
		want           func(*bytes.Buffer) error
	}{
		{true, true, "", func(b *bytes.Buffer) error { return JSON(b, run) }},
		{false, true, "", func(b *bytes.Buffer) error { return Text(b, run) }},
		{false, false, "", func(b *bytes.Buffer) error {
			return Glance(b, run, "detail (every statistic, server view, notes, configuration, definitions): --detail, or --out DIR for Markdown and HTML reports")
		}},
		{false, false, "res", func(b *bytes.Buffer) error {
			return Glance(b, run, "detail (every statistic, server view, notes, configuration, definitions): --detail, or report.md in res")
		}},
	} {
		got := render(func(b *bytes.Buffer) error { return Write(b, run, tc.asJSON, tc.detail, tc.out) })
		if want := render(tc.want); got != want {
			t.Errorf("json %v detail %v out %q: got\n%s\nwant\n%s", tc.asJSON, tc.detail, tc.out, got, want)
		}
	}
}
