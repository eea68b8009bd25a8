package web

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
)

// uiFmt writes a figure as the page's fmt does (assets/api.js), so a
// figure in docs/ui.md reads as the page shows it.
func uiFmt(v float64, unit string) string {
	a := math.Abs(v)
	if unit == "ms" && a >= 1000 {
		if a >= 10000 {
			return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
		}
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + " s"
	}
	var s string
	switch {
	case a >= 100:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	}
	if unit != "" {
		return s + " " + unit
	}
	return s
}

// TestDocsUIFigures: the figures docs/ui.md quotes from the worked pair
// and from the closed loop past saturation are the ones the code computes
// now, written as the page writes them (issue 44, contradiction 9: the
// page said 5.09 s where the doc said 2.46 s). Change the engine and this
// test names each sentence to update.
func TestDocsUIFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worked pair and three closed-loop runs")
	}
	t.Parallel()
	b, err := os.ReadFile("../../docs/ui.md")
	if err != nil {
		t.Fatal(err)
	}
	// The doc wraps its lines: compare with single spaces.
	doc := strings.Join(strings.Fields(string(b)), " ")
	want := func(what, text string) {
		t.Helper()
		if !strings.Contains(doc, text) {
			t.Errorf("docs/ui.md does not say %s as the code computes it: want %q", what, text)
		}
	}
	pair, err := buildPair(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	q, d := pair.Queue, pair.Decode
	want("the pair's mean E2E", fmt.Sprintf("take the same time end to end on average (%s)", uiFmt(q.MeanMS.E2E, "ms")))
	want("the healthy run's mean E2E", fmt.Sprintf("(%d req/s, mean E2E %s)", pairBaselineRPS, uiFmt(pair.Baseline.E2E, "ms")))
	want("the queue-dominated split", fmt.Sprintf("queue-dominated: %d req/s, above what %d sequences serve — queue %s, prefill %s, decode %s: `%s`",
		pairQueueRPS, pairMaxSeqs, uiFmt(q.MeanMS.Queue, "ms"), uiFmt(q.MeanMS.Prefill, "ms"), uiFmt(q.MeanMS.Decode, "ms"), q.Diagnosis.Verdict))
	want("the decode-dominated split", fmt.Sprintf("decode-dominated: %d req/s with every engine step %.2f× slower (the factor is bisected until the mean E2E matches) — queue %s, prefill %s, decode %s: `%s`",
		pairBaselineRPS, d.StepScale, uiFmt(d.MeanMS.Queue, "ms"), uiFmt(d.MeanMS.Prefill, "ms"), uiFmt(d.MeanMS.Decode, "ms"), d.Diagnosis.Verdict))

	// The closed loop sized to its steady state, past the batch of 256.
	var curve learnSection
	for _, s := range learnSections {
		if s.ID == "curve" {
			curve = s
		}
	}
	p := curve.Base
	su, err := p.setup()
	if err != nil {
		t.Fatal(err)
	}
	runner := &sweepRunner{su: su}
	var rps []string
	for _, users := range []float64{256, 512, 1024} {
		st, err := runner.Run(context.Background(), sweep.Load{Kind: sweep.Concurrency, Value: users})
		if err != nil {
			t.Fatal(err)
		}
		rps = append(rps, strconv.FormatFloat(st.Summary.RequestThroughputRPS, 'f', 1, 64))
	}
	// The Simulator at the page's defaults (assets/sim.js), and the
	// badge's examples.
	def := func(users float64) *simOutcome {
		t.Helper()
		p := SimParams{LoadKind: "concurrency", Load: users, InputTokens: "512", OutputTokens: "128", TP: 1, MaxNumSeqs: 256, Replicas: 1}
		su, err := p.setup()
		if err != nil {
			t.Fatal(err)
		}
		out, err := su.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	at16 := def(16)
	f := at16.Summary
	want("the default TTFT percentiles", fmt.Sprintf("at 16 users TTFT p50 %s, p95 %s", uiFmt(f.TTFTMS.P50, "ms"), uiFmt(f.TTFTMS.P95, "ms")))
	for _, r := range at16.Ranges.Figures {
		if r.Metric == "ttft_ms.p95" {
			lo, hi := uiFmt(r.Low, "ms"), uiFmt(r.High, "ms")
			// fmtRange (assets/sim.js): the unit once when both ends share it.
			if strings.HasSuffix(lo, " ms") && strings.HasSuffix(hi, " ms") {
				lo = strings.TrimSuffix(lo, " ms")
			}
			want("the default p95 TTFT's range", fmt.Sprintf("\"TTFT p95 %s; %s–%s on hosts knee has not seen\" at the page's defaults of 16 users", uiFmt(f.TTFTMS.P95, "ms"), lo, hi))
		}
	}
	// The front end on a quiet server, as the pages round it (docs/ui.md,
	// Learn §2, the Lifecycle's queue phase).
	fe := fmt.Sprintf("%.0f ms", def(1).Summary.FrontEndMS.P50)
	for _, c := range []struct{ file, text string }{
		{"../../docs/ui.md", "the ~" + fe + " front end of every request"},
		{"assets/learn.js", "TTFT includes about " + fe + " of front end"},
		{"assets/lifecycle.js", "tokenization: about " + fe + " on a quiet server"},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), c.text) {
			t.Errorf("%s does not say the front end's time on a quiet server as the code computes it: want %q", c.file, c.text)
		}
	}

	// Learn §4 with the Mooncake sample (knee ui --trace): the fixed run at
	// the trace's means beside its replay, at 30 req/s.
	tr, err := workload.OpenTrace("../workload/testdata/trace_mooncake.jsonl", workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ti := tr.Info()
	var rb SimParams
	for _, s := range learnSections {
		if s.ID == "realism" {
			rb = s.Base
		}
	}
	rb.Load = 30
	fixed, replay := rb, rb
	fixed.InputTokens, fixed.OutputTokens = strconv.FormatInt(ti.InputTokens/int64(ti.Kept), 10), strconv.FormatInt(ti.OutputTokens/int64(ti.Kept), 10)
	fixed.Requests = min(ti.Kept, 2000)
	replay.Trace = true
	runOf := func(p SimParams, trace bool) *simOutcome {
		t.Helper()
		su, err := p.setup()
		if err == nil && trace {
			err = (&Server{cfg: Config{Trace: tr}}).withTrace(su)
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := su.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	fo, ro := runOf(fixed, false), runOf(replay, true)
	want("the Mooncake sample's fixed run and replay", fmt.Sprintf("the fixed run at its means (%s prompt / %s output tokens) has p99 TTFT %s, the replay %s",
		fixed.InputTokens, fixed.OutputTokens, uiFmt(fo.Summary.TTFTMS.P99, "ms"), uiFmt(ro.Summary.TTFTMS.P99, "ms")))

	level := map[string]string{Healthy: "Healthy", Strained: "Strained", Saturated: "Saturated"}
	b8, b32, b280, b600 := def(8), def(32), def(280), def(600)
	if b8.Pressure.Level != b32.Pressure.Level {
		t.Errorf("8 users %s, 32 users %s: docs/ui.md names them together", b8.Pressure.Level, b32.Pressure.Level)
	}
	want("the badge's examples", fmt.Sprintf("8 and 32 users are %s (p95 TTFT %s and %s), 280 users %s (p95 TTFT %s), 600 users %s (p95 TTFT %s)",
		level[b8.Pressure.Level], uiFmt(b8.Summary.TTFTMS.P95, "ms"), uiFmt(b32.Summary.TTFTMS.P95, "ms"),
		level[b280.Pressure.Level], uiFmt(b280.Summary.TTFTMS.P95, "ms"), level[b600.Pressure.Level], uiFmt(b600.Summary.TTFTMS.P95, "ms")))

	// Learn's claims as the page prints them beside each (assets/learn.js,
	// checkClaims), for the few docs/ui.md quotes.
	names := map[string][2]string{"ttft_p50_ms": {"TTFT p50", "ms"}, "ttft_p95_ms": {"p95 TTFT", "ms"}, "ttft_p99_ms": {"p99 TTFT", "ms"},
		"tpot_p50_ms": {"TPOT p50", "ms"}, "e2e_p50_ms": {"E2E p50", "ms"}, "e2e_p99_ms": {"p99 E2E", "ms"}, "queue_p50_ms": {"queue p50", "ms"},
		"throughput_rps": {"throughput", "req/s"}, "output_tps": {"output", "tok/s"}, "decode_rate_tps": {"decode rate", "tok/s"}}
	for _, s := range learnSections {
		for _, c := range s.Claims {
			if !slices.Contains([]string{"prompt-ttft", "output-e2e", "queue-forms", "flat-past-saturation", "varied-tail"}, c.ID) {
				continue
			}
			r, err := c.check(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			n := names[c.Metric]
			text := fmt.Sprintf("%s %s → %s", n[0], uiFmt(r.From, n[1]), uiFmt(r.To, n[1]))
			if c.Over != "" {
				o := names[c.Over]
				text += fmt.Sprintf(", %s %s → %s", o[0], uiFmt(r.OverFrom, o[1]), uiFmt(r.OverTo, o[1]))
			}
			bound := "at most ×" + strconv.FormatFloat(c.AtMost, 'f', -1, 64)
			if c.AtLeast != 0 {
				bound = "at least ×" + strconv.FormatFloat(c.AtLeast, 'f', -1, 64)
			}
			digits := 1
			if r.Value < 1 {
				digits = 2
			}
			rel := ""
			if c.Over != "" {
				rel = " relative"
			}
			holds := "✓ holds"
			if !r.Holds {
				holds = "✗ does not hold"
			}
			text += fmt.Sprintf(": ×%s%s (claimed %s) %s", strconv.FormatFloat(r.Value, 'f', digits, 64), rel, bound, holds)
			want("Learn's claim "+c.ID, fmt.Sprintf("- `%s`: %s", c.ID, text))
		}
	}

	// The seed lesson's own pair and load table, from the constants
	// lesson.go types once (lessonPair, lessonTable) and what knee's
	// diagnosis and sweep analysis make of them.
	lesson, err := buildLesson()
	if err != nil {
		t.Fatal(err)
	}
	side := func(r lessonSide) string {
		return fmt.Sprintf("%s: queue %.1f s, prefill %.1f s, decode %.1f s", r.Name, r.QueueS, r.PrefillS, r.DecodeS)
	}
	a, bb := lesson.Pair[0], lesson.Pair[1]
	if a.TotalS != bb.TotalS {
		t.Fatalf("the lesson's pair totals %.1f s and %.1f s: docs/ui.md says both the same", a.TotalS, bb.TotalS)
	}
	want("the lesson's pair", fmt.Sprintf("%s; %s; both %.1f s", side(a), side(bb), a.TotalS))
	want("the lesson's pair's verdicts", fmt.Sprintf("A is `%s`, B `%s` (decode is %.1f%% of a multi-second request",
		a.Diagnosis.Verdict, bb.Diagnosis.Verdict, 100*bb.DecodeS/bb.TotalS))
	var loads, served, ttfts []string
	for _, r := range lessonTable {
		loads = append(loads, strconv.FormatFloat(r.Load, 'f', -1, 64))
		served = append(served, strconv.FormatFloat(r.RPS, 'f', 1, 64))
		ttfts = append(ttfts, strconv.FormatFloat(r.TTFTP95S, 'f', 1, 64))
	}
	want("the lesson's load table", fmt.Sprintf("(load %s, read as offered req/s → %s req/s, p95 TTFT %s s)",
		strings.Join(loads, "/"), strings.Join(served, "/"), strings.Join(ttfts, "/")))
	tab := lesson.Table
	if !tab.Knee.Found() || !tab.SLOSafe.Found() || tab.Knee.Load != tab.SLOSafe.Load {
		t.Fatalf("the lesson's knee %v and SLO-safe point %v: docs/ui.md puts both at one load", tab.Knee.Load, tab.SLOSafe.Load)
	}
	at := strconv.FormatFloat(tab.Knee.Load, 'f', -1, 64)
	highest := strconv.FormatFloat(tab.Highest, 'f', -1, 64)
	want("the lesson table's knee and highest throughput", fmt.Sprintf("knee and SLO-safe point at %s, the highest throughput at %s", at, highest))
	want("the lesson table's knee and highest throughput (tests)", fmt.Sprintf("the lesson's table (knee and SLO-safe at %s, highest at %s)", at, highest))
	var hi, safe = lessonTable[0], lessonTable[0]
	for _, r := range lessonTable {
		if r.Load == tab.Highest {
			hi = r
		}
		if r.Load == tab.SLOSafe.Load {
			safe = r
		}
	}
	want("why the highest throughput is not healthy", fmt.Sprintf("(%.1f s against 2 s, for %.0f%% more than %s)", hi.TTFTP95S, 100*(hi.RPS/safe.RPS-1), at))
	// Little's law: users in flight = throughput × time each spends.
	want("Little's law on the table read as users", fmt.Sprintf("(%s users at %.1f req/s would wait about %.1f s each, not a p95 TTFT of %.1f s)",
		highest, hi.RPS, hi.Load/hi.RPS, hi.TTFTP95S))

	// Learn §3's energy lesson: energy per output token at 1 user, the
	// SLO-safe 256 and 1,024 users, as the page writes it.
	var mj []string
	for _, users := range []float64{1, 256, 1024} {
		st, err := runner.Run(context.Background(), sweep.Load{Kind: sweep.Concurrency, Value: users})
		if err != nil {
			t.Fatal(err)
		}
		if st.Energy == nil || st.Energy.JPerOutputToken == nil {
			t.Fatalf("%v users: no energy per output token", users)
		}
		mj = append(mj, uiFmt(1000**st.Energy.JPerOutputToken, "mJ"))
		if users == 1024 {
			mj = append(mj, uiFmt(st.Summary.TTFT.P95, "ms"))
		}
	}
	want("Learn's energy lesson", fmt.Sprintf("e.g. %s at 1 user, %s at the SLO-safe 256, %s at 1,024 with p95 TTFT %s)", mj[0], mj[1], mj[2], mj[3]))

	want("the closed loop's throughput past saturation", fmt.Sprintf("Now the default engine reads %s, %s and %s req/s at 256, 512 and 1,024 users", rps[0], rps[1], rps[2]))
}
