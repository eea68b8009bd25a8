package web

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
)

// TestLearnClaimsHoldInEngine runs every claim the Learn page states on
// knee's engine at the page's own settings: the direction it claims must
// hold, by the margin it claims.
func TestLearnClaimsHoldInEngine(t *testing.T) {
	n := 0
	for _, s := range learnSections {
		for _, c := range s.Claims {
			n++
			got, err := c.check(context.Background(), s)
			if err != nil {
				t.Fatalf("%s/%s: %v", s.ID, c.ID, err)
			}
			t.Logf("%s/%s: %s %s (want ≥ %v, ≤ %v)", s.ID, c.ID, c.Metric, got, c.AtLeast, c.AtMost)
			if !got.Holds {
				t.Errorf("%s/%s does not hold in the engine: %q\n%s/%s: %s (want at least %v, at most %v)",
					s.ID, c.ID, c.Text, c.Metric, c.Over, got, c.AtLeast, c.AtMost)
			}
		}
	}
	if n < 6 {
		t.Errorf("only %d claims checked", n)
	}
}

// TestTraceReplay: with a trace, the simulator replays it at the asked
// mean rate (section 4 of the Learn page); without one, asking is a 400.
func TestTraceReplay(t *testing.T) {
	s, ts := newTestServer(t)
	body := `{"load_kind": "rate", "load": 5, "trace": true}`
	if code, msg := do(t, s, ts, call{method: "POST", path: "/api/sim", body: body, token: true}); code != 400 || !strings.Contains(msg, "--trace") {
		t.Errorf("trace without --trace: %d %s, want 400 naming --trace", code, msg)
	}
	tr, err := workload.OpenTrace(filepath.Join("..", "workload", "testdata", "trace_mooncake.jsonl"), workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Trace = tr
	if code, msg := do(t, s, ts, call{method: "POST", path: "/api/sim", body: `{"load": 5, "trace": true}`, token: true}); code != 400 || !strings.Contains(msg, "load_kind rate") {
		t.Errorf("trace at a concurrency: %d %s, want 400 asking for a rate", code, msg)
	}
	var got [2]simOutcome
	for i, rate := range []string{"2", "20"} {
		code, msg := do(t, s, ts, call{method: "POST", path: "/api/sim", body: `{"load_kind": "rate", "load": ` + rate + `, "trace": true}`, token: true})
		if code != 200 {
			t.Fatalf("trace replay at %s req/s: %d %s", rate, code, msg)
		}
		if err := json.Unmarshal([]byte(msg), &got[i]); err != nil {
			t.Fatal(err)
		}
	}
	info := tr.Info()
	t.Logf("%s: %d requests; at 2 req/s %.1f s simulated, at 20 req/s %.1f s", info.Path, info.Kept, got[0].SimulatedS, got[1].SimulatedS)
	if got[0].Requests != info.Kept {
		t.Errorf("replayed %d requests, the trace has %d", got[0].Requests, info.Kept)
	}
	// Ten times the rate: the same requests arrive in about a tenth of the time.
	if r := got[0].SimulatedS / got[1].SimulatedS; r < 4 {
		t.Errorf("10× the replay rate shortened the run only ×%.1f (%.1f s → %.1f s)", r, got[0].SimulatedS, got[1].SimulatedS)
	}
	code, msg := do(t, s, ts, call{method: "GET", path: "/api/learn"})
	if code != 200 || !strings.Contains(msg, `"name":"trace_mooncake.jsonl"`) {
		t.Errorf("GET /api/learn with a trace: %d %.300s", code, msg)
	}
}

// Learn §3's curve, at the sweep's own run lengths: past the point where
// the batch is full, throughput stays within 10% of its highest (it fell
// from 62.9 to 42.4 req/s when runs past saturation were cut at 2,000
// requests and counted the start-up queue and the drain).
func TestLearnCurveFlatPastSaturation(t *testing.T) {
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
	loads, err := sweepLoads(context.Background(), su)
	if err != nil {
		t.Fatal(err)
	}
	runner := &sweepRunner{su: su}
	best := 0.0
	var past []float64
	for _, l := range loads {
		st, err := runner.Run(context.Background(), sweep.Load{Kind: sweep.Concurrency, Value: l})
		if err != nil {
			t.Fatal(err)
		}
		rps := st.Summary.RequestThroughputRPS
		t.Logf("%4.0f users: %.1f req/s", l, rps)
		best = max(best, rps)
		if l >= float64(p.MaxNumSeqs) {
			past = append(past, rps)
		}
	}
	if len(past) < 2 {
		t.Fatalf("the sweep has %d steps past the batch limit", len(past))
	}
	for _, v := range past {
		if v < 0.9*best {
			t.Errorf("past saturation throughput fell to %.1f req/s, under 90%% of the highest %.1f: %v", v, best, past)
		}
	}
}
