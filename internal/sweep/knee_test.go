package sweep

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
)

// curve builds concurrency steps from loads, output throughputs and p95 TTFTs
// (ms; nil for none).
func curve(loads, tps, ttft []float64) []Step {
	steps := make([]Step, len(loads))
	for i := range loads {
		steps[i].Load = Load{Kind: Concurrency, Value: loads[i]}
		steps[i].Summary.OutputTokenThroughputTPS = tps[i]
		steps[i].Summary.RequestThroughputRPS = tps[i] / 100
		if ttft != nil {
			steps[i].Summary.TTFT.P95 = ttft[i]
		}
		steps[i].SLOMet = true
	}
	return steps
}

func geometric(from float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from * math.Pow(2, float64(i))
	}
	return out
}

func TestFindKnee(t *testing.T) {
	mm := func(loads []float64) []float64 { // smooth saturation: 1000·x/(x+16)
		out := make([]float64, len(loads))
		for i, x := range loads {
			out[i] = 1000 * x / (x + 16)
		}
		return out
	}
	cases := []struct {
		name     string
		loads    []float64
		tps      []float64
		ttft     []float64
		want     float64 // -1: no knee
		warnings []string
	}{
		{name: "sharp saturation", loads: geometric(1, 7),
			tps: []float64{100, 200, 400, 800, 1600, 1600, 1600}, ttft: []float64{50, 52, 55, 60, 80, 900, 2500}, want: 16},
		{name: "noisy plateau", loads: geometric(1, 8),
			tps: []float64{100, 205, 390, 810, 1580, 1620, 1550, 1640}, want: 16},
		{name: "non-monotone: throughput falls past overload", loads: geometric(1, 7),
			tps: []float64{100, 200, 400, 800, 1600, 1200, 800}, want: 16, warnings: []string{"throughput falls at 32 in flight"}},
		{name: "coarse grid", loads: []float64{1, 4, 16, 64},
			tps: []float64{100, 400, 1000, 1050}, want: 16, warnings: []string{"coarse grid: the knee lies between 4 in flight and 64 in flight", "1 above"}},
		{name: "smooth saturation", loads: geometric(1, 9), tps: mm(geometric(1, 9)), want: 64},
		{name: "linear: knee not reached", loads: geometric(1, 6),
			tps: []float64{100, 198, 404, 790, 1610, 3150}, want: -1, warnings: []string{"beyond the last step"}},
		{name: "flat: saturated from the start", loads: geometric(8, 5),
			tps: []float64{1600, 1610, 1590, 1620, 1605}, want: 8, warnings: []string{"knee is at the first step"}},
		{name: "too few steps", loads: []float64{1, 2}, tps: []float64{100, 200}, want: -1, warnings: []string{"only 2 step(s)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Analyze(curve(c.loads, c.tps, c.ttft), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := -1.0
			if r.Knee.Found() {
				got = r.Knee.Load
			}
			if got != c.want {
				t.Fatalf("knee = %v, want %v (reason: %s)", got, c.want, r.Knee.Reason)
			}
			if r.Knee.Reason == "" {
				t.Error("knee has no reason")
			}
			for _, w := range c.warnings {
				if !strings.Contains(strings.Join(r.Warnings, "\n"), w) {
					t.Errorf("warnings %q lack %q", r.Warnings, w)
				}
			}
			if len(c.warnings) == 0 && len(r.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", r.Warnings)
			}
		})
	}
}

func TestKneeReasonStatesTTFTGrowth(t *testing.T) {
	r, _ := Analyze(curve(geometric(1, 7), []float64{100, 200, 400, 800, 1600, 1600, 1600}, []float64{50, 52, 55, 60, 80, 900, 2500}), Options{})
	for _, want := range []string{"Kneedle", "16 in flight", "+0% throughput", "p95 TTFT grows ×11 (80 ms → 900 ms)"} {
		if !strings.Contains(r.Knee.Reason, want) {
			t.Errorf("reason %q lacks %q", r.Knee.Reason, want)
		}
	}
	if r.KneeMetric != MetricOutputTPS {
		t.Errorf("metric %q, want output_tps", r.KneeMetric)
	}
}

func TestSafePoint(t *testing.T) {
	slos := []string{"p95(ttft)<2s"}
	cases := []struct {
		name     string
		met      []bool
		slos     []string
		want     float64
		warnings []string
	}{
		{name: "limit inside the sweep", met: []bool{true, true, true, false, false}, slos: slos, want: 4},
		{name: "every step passes", met: []bool{true, true, true}, slos: slos, want: 4, warnings: []string{"at least 4 in flight"}},
		{name: "first step fails", met: []bool{false, false, false}, slos: slos, want: -1, warnings: []string{"already fails"}},
		{name: "non-monotone: a pass after a failure is noise", met: []bool{true, false, true, false}, slos: slos, want: 1, warnings: []string{"non-monotone: 4 in flight meets the SLOs again after 2 in flight failed"}},
		{name: "no SLOs", met: []bool{true, true, true}, want: -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loads := geometric(1, len(c.met))
			steps := curve(loads, loads, nil)
			for i, m := range c.met {
				steps[i].SLOMet = m
				steps[i].SLOs = []Check{{Objective: "p95(ttft)<2s", Value: map[bool]float64{true: 1500, false: 2500}[m], Met: m}}
			}
			r, err := Analyze(steps, Options{SLOs: c.slos})
			if err != nil {
				t.Fatal(err)
			}
			got := -1.0
			if r.SLOSafe.Found() {
				got = r.SLOSafe.Load
			}
			if got != c.want {
				t.Fatalf("safe = %v, want %v (%s)", got, c.want, r.SLOSafe.Reason)
			}
			all := strings.Join(r.Warnings, "\n")
			for _, w := range c.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q lack %q", r.Warnings, w)
				}
			}
		})
	}
}

func TestSafePointReasonNamesTheFailure(t *testing.T) {
	steps := curve([]float64{1, 2, 4}, []float64{1, 2, 3}, nil)
	steps[2].SLOMet = false
	steps[0].SLOs = []Check{{Objective: "p95(ttft)<2s", Value: 300, Met: true}}
	steps[1].SLOs = []Check{{Objective: "p95(ttft)<2s", Value: 1500, Met: true}}
	steps[2].SLOs = []Check{{Objective: "p95(ttft)<2s", Value: 2600, Met: false}}
	p := SafePoint(steps, []string{"p95(ttft)<2s"})
	want := "highest load where every SLO holds (p95(ttft)<2s: 1.5 s); the next step 4 in flight fails p95(ttft)<2s (measured 2.6 s)"
	if p.Reason != want || p.Load != 2 {
		t.Errorf("got %v %q\nwant 2 %q", p.Load, p.Reason, want)
	}
}

func TestResultJSONShape(t *testing.T) {
	steps := curve(geometric(1, 5), []float64{100, 200, 400, 410, 415}, []float64{10, 11, 12, 40, 90})
	steps[4].SLOMet = false
	r, _ := Analyze(steps, Options{SLOs: []string{"p95(ttft)<50ms"}})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if k := m["knee"].(map[string]any); k["load"] != 4.0 || k["reason"] == "" {
		t.Errorf("knee = %v", k)
	}
	if s := m["slo_safe"].(map[string]any); s["load"] != 8.0 {
		t.Errorf("slo_safe = %v", s)
	}
	st := m["steps"].([]any)[0].(map[string]any)
	if st["load"] != 1.0 || st["load_kind"] != "concurrency" || st["output_tps"] != 100.0 || st["ttft_p95_ms"] != 10.0 {
		t.Errorf("step 0 = %v", st)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Steps) != 5 || back.Steps[3].Summary.TTFT.P95 != 40 || back.Knee.Load != 4 || back.SLOSafe.Load != 8 {
		t.Errorf("round trip lost data: %+v", back)
	}
	none := Point{Index: -1, Reason: "x"}
	b, _ = json.Marshal(none)
	if string(b) != `{"load":null,"reason":"x"}` {
		t.Errorf("no point = %s", b)
	}
}

func TestStepWarningsReachTheResult(t *testing.T) {
	steps := curve(geometric(1, 4), []float64{100, 200, 300, 310}, nil)
	steps[2].Warnings = []string{"client lag p99 is 40 ms"}
	r, _ := Analyze(steps, Options{})
	if len(r.Warnings) == 0 || r.Warnings[0] != "step 4 in flight: client lag p99 is 40 ms" {
		t.Errorf("warnings %q", r.Warnings)
	}
	b, _ := json.Marshal(steps[2])
	var back Step
	if err := json.Unmarshal(b, &back); err != nil || len(back.Warnings) != 1 {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

func TestKneeReasonNamesWhatGrowsPastIt(t *testing.T) {
	loads := []float64{1, 2, 4, 8, 16}
	tps := []float64{200, 300, 400, 405, 402}
	step := func(ttft, tpot []float64, queue []float64) []Step {
		steps := curve(loads, tps, nil)
		for i := range steps {
			steps[i].Summary.TTFT.P50 = ttft[i]
			steps[i].Summary.TPOT.P50 = tpot[i]
			steps[i].Summary.Completed, steps[i].Summary.OutputTokens = 10, 10*49 // 48 tokens after the first
			if queue != nil {
				steps[i].Summary.ServerQueue = &stats.Dist{P50: queue[i]}
			}
		}
		return steps
	}
	// The server's decode phase of a median request (48 tokens after the
	// first) at each step's server-side step time.
	withServerDecode := func(steps []Step, serverTPOT []float64) []Step {
		for i := range steps {
			steps[i].Summary.ServerDecode = &stats.Dist{P50: 48 * serverTPOT[i]}
		}
		return steps
	}
	flatTPOT := []float64{5, 6, 7, 7.2, 7.3}
	cases := []struct {
		name        string
		steps       []Step
		want, never string
	}{
		{"queueing, client view only", step([]float64{50, 60, 80, 400, 1200}, flatTPOT, nil),
			"from 4 in flight to 16 in flight, p50 TTFT grows 80 ms → 1.2 s (+1.12 s) and decoding 48 more tokens at p50 TPOT 7 ms → 7.3 ms takes +14.4 ms: queueing is what grows", "server"},
		// Under CPU contention TPOT grows too, but far less than the wait.
		{"queueing while TPOT also grows", step([]float64{50, 60, 80, 400, 1200}, []float64{5, 6, 7, 9, 12}, nil),
			"queueing is what grows", "decoding is"},
		{"queueing, the server's queue agrees", step([]float64{50, 60, 80, 400, 1200}, flatTPOT, []float64{1, 1, 3, 300, 1100}),
			"the server's p50 queue time 3 ms → 1.1 s: queueing is what grows", "prefill"},
		{"TTFT grows, the server's queue does not", step([]float64{50, 60, 80, 400, 1200}, flatTPOT, []float64{1, 1, 3, 3, 4}),
			"queue time does not: prefill slows", "queueing is what grows"},
		{"decode slows", step([]float64{50, 60, 80, 90, 100}, []float64{5, 6, 7, 14, 28}, nil),
			"takes +1.01 s: decoding is what slows", "queueing"},
		{"decode slows, and the server's steps with it", withServerDecode(step([]float64{50, 60, 80, 90, 100}, []float64{5, 6, 7, 14, 28}, nil), []float64{5, 6, 7, 14, 27}),
			"decode phase 336 ms → 1.3 s (+960 ms): decoding is what slows", "client"},
		// A client reading every stream on one thread: the gaps it measures
		// grow with the streams, the server's steps hardly.
		{"the client slows, not the server", withServerDecode(step([]float64{50, 60, 80, 90, 100}, []float64{5, 6, 7, 14, 28}, nil), []float64{5, 6, 7, 7.5, 8}),
			"decode phase 336 ms → 384 ms (+48 ms): the client is what slows", "decoding is what slows"},
		{"both grow alike: no conclusion", step([]float64{50, 60, 80, 240, 400}, []float64{5, 6, 7, 10, 11}, nil),
			"takes +192 ms", "is what"},
		{"no TPOT: nothing said", step([]float64{50, 60, 80, 400, 1200}, []float64{0, 0, 0, 0, 0}, nil),
			"Kneedle", "p50 TTFT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Analyze(c.steps, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Knee.Load != 4 {
				t.Fatalf("knee at %v, want 4: %s", r.Knee.Load, r.Knee.Reason)
			}
			if !strings.Contains(r.Knee.Reason, c.want) || strings.Contains(r.Knee.Reason, c.never) {
				t.Errorf("reason %q: want %q, never %q", r.Knee.Reason, c.want, c.never)
			}
		})
	}
}
