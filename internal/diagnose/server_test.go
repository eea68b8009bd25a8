package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// clientOnly makes n completed records with no server phases: TTFT ttft,
// 500 input tokens, 50 output tokens at 10 ms each, sent 100 ms apart.
func clientOnly(n int, ttft time.Duration, from time.Duration) []record.Request {
	var out []record.Request
	for i := 0; i < n; i++ {
		sent := from + time.Duration(i)*100*time.Millisecond
		first := sent + ttft
		r := record.Request{ID: int64(i), Scheduled: sent, Sent: sent, FirstToken: first, InputTokens: 500, OutputTokens: 50,
			InFlightAtSend: 4, TokenSource: record.TokensFromUsage}
		for k := 0; k < 50; k++ {
			r.TokenTimes = append(r.TokenTimes, first+time.Duration(k)*10*time.Millisecond)
		}
		r.Done, r.StreamEnd = r.TokenTimes[49], r.TokenTimes[49]
		out = append(out, r)
	}
	return out
}

func f(v float64) *float64 { return &v }

// TestServerViewChangesVerdict: the client sees the same thing each time —
// TTFT grew from 100 ms to 600 ms with unchanged prompts — and the server's
// scraped metrics decide which phase grew.
func TestServerViewChangesVerdict(t *testing.T) {
	base := clientOnly(60, 100*time.Millisecond, 0)
	win := clientOnly(60, 600*time.Millisecond, 10*time.Second)
	baseSrv := &ServerFacts{Source: "vLLM /metrics", QueueMS: f(5), PrefillMS: f(80), RunningMax: f(256), WaitingMax: f(0)}
	cases := []struct {
		name         string
		server, bsrv *ServerFacts
		want         Verdict
		evidence     []string
	}{
		{"absent: client timing alone", nil, nil, QueuePressure,
			[]string{"ttft_unexplained_ms", "TTFT beyond what input length explains"}},
		{"server says queue", &ServerFacts{Source: "vLLM /metrics", QueueMS: f(505), PrefillMS: f(82), RunningMax: f(256), WaitingMax: f(40), WaitingGrowing: true},
			baseSrv, QueuePressure,
			[]string{"scraped_server_queue_ms", "server queue from its /metrics", "pinned at the same ceiling", "grew through the window without draining"}},
		{"server says prefill", &ServerFacts{Source: "vLLM /metrics", QueueMS: f(6), PrefillMS: f(580), RunningMax: f(64), WaitingMax: f(0)},
			baseSrv, PrefillPressure,
			[]string{"scraped_server_prefill_ms", "server prefill from its /metrics: 80 → 580 ms"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Diagnose(win, Options{Baseline: base, Server: c.server, BaselineServer: c.bsrv})
			if d.Verdict != c.want {
				t.Fatalf("verdict %s, want %s; evidence:\n%s", d.Verdict, c.want, evidenceText(d))
			}
			all := evidenceText(d)
			for _, want := range c.evidence {
				if !strings.Contains(all, want) {
					t.Errorf("evidence lacks %q:\n%s", want, all)
				}
			}
			if c.server == nil && strings.Contains(all, "server metrics") {
				t.Errorf("server evidence without a server view:\n%s", all)
			}
		})
	}
}

// TestServerViewWithoutBaseline: one steady window, no baseline, no
// per-request phases; client timing alone finds nothing, the server's queue
// share (or its growing waiting queue) says queue_pressure.
func TestServerViewWithoutBaseline(t *testing.T) {
	win := clientOnly(60, 300*time.Millisecond, 0)
	if d := Diagnose(win, Options{}); d.Verdict != Healthy {
		t.Fatalf("client timing alone: %s, want healthy (no correlation, no baseline)", d.Verdict)
	}
	d := Diagnose(win, Options{Server: &ServerFacts{Source: "SGLang /metrics", QueueMS: f(250), PrefillMS: f(45)}})
	if d.Verdict != QueuePressure || !strings.Contains(evidenceText(d), "server queue 250 ms from its /metrics") {
		t.Fatalf("queue share: %s\n%s", d.Verdict, evidenceText(d))
	}
	d = Diagnose(win, Options{Server: &ServerFacts{Source: "TGI /metrics", WaitingMax: f(80), WaitingGrowing: true}})
	if d.Verdict != QueuePressure || !strings.Contains(evidenceText(d), "grew through the window") {
		t.Fatalf("growing queue: %s\n%s", d.Verdict, evidenceText(d))
	}
	long := clientOnly(60, 700*time.Millisecond, 0) // E2E 1190 ms
	d = Diagnose(long, Options{Server: &ServerFacts{Source: "vLLM /metrics", QueueMS: f(5), PrefillMS: f(650)}})
	if d.Verdict != PrefillPressure {
		t.Fatalf("prefill share: %s\n%s", d.Verdict, evidenceText(d))
	}
}

func evidenceText(d Diagnosis) string {
	var b strings.Builder
	for _, e := range d.Evidence {
		b.WriteString(e.Metric + ": " + e.Text + "\n")
	}
	return b.String()
}
