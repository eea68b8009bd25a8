package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// The simulator page's fleet: replicas behind a router. Four replicas
// serving four times the users of one see about that one's TTFT and four
// times its throughput; at the load that saturates one replica, four keep
// TTFT low; the sweep's load grid grows with the fleet.
func TestSimFleet(t *testing.T) {
	s, ts := newTestServer(t)
	sim := func(body string) simOutcome {
		t.Helper()
		code, out := do(t, s, ts, call{method: "POST", path: "/api/sim", body: body, token: true})
		if code != 200 {
			t.Fatalf("%s: %d %s", body, code, out)
		}
		var o simOutcome
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	const shape = `"max_num_seqs": 32, "input_tokens": "512", "output_tokens": "128"`
	one := sim(`{"load": 24, ` + shape + `}`)
	four := sim(`{"load": 96, "replicas": 4, "router": "least-outstanding", ` + shape + `}`)
	crowded := sim(`{"load": 96, ` + shape + `}`)
	t.Logf("1 replica, 24 users: TTFT p95 %.0f ms, %.1f req/s; 4 replicas, 96 users: %.0f ms, %.1f req/s; 1 replica, 96 users: %.0f ms, %.1f req/s",
		one.Summary.TTFTMS.P95, one.Summary.ThroughputRPS, four.Summary.TTFTMS.P95, four.Summary.ThroughputRPS, crowded.Summary.TTFTMS.P95, crowded.Summary.ThroughputRPS)
	if r := four.Summary.ThroughputRPS / one.Summary.ThroughputRPS; r < 3.4 || r > 4.6 {
		t.Errorf("4 replicas at 4x the users: throughput x%.2f of one replica's, want about 4", r)
	}
	if r := four.Summary.TTFTMS.P95 / one.Summary.TTFTMS.P95; r < 0.7 || r > 1.4 {
		t.Errorf("4 replicas at 4x the users: p95 TTFT x%.2f of one replica's, want about the same", r)
	}
	if crowded.Summary.TTFTMS.P95 < 2*four.Summary.TTFTMS.P95 {
		t.Errorf("96 users on one replica (p95 TTFT %.0f ms) should queue well beyond four replicas (%.0f ms)", crowded.Summary.TTFTMS.P95, four.Summary.TTFTMS.P95)
	}
	if !strings.Contains(four.Engine.Name, "4 replicas") || !strings.Contains(four.Engine.Name, "least-outstanding") || four.Summary.KVUsagePeak <= 0 {
		t.Errorf("fleet engine facts %+v, KV peak %v: want the fleet named and its KV usage tracked", four.Engine, four.Summary.KVUsagePeak)
	}
	code, out := do(t, s, ts, call{method: "POST", path: "/api/sweep", body: `{"load": 96, "replicas": 4, ` + shape + `}`, token: true})
	if code != 200 || !strings.Contains(out, `"load":256`) {
		t.Errorf("fleet sweep: %d, want its grid to reach 4 x 32 x 2 = 256 users: %.300s", code, out)
	}
}
