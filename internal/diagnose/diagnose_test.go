package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

const ms = time.Millisecond

// req builds a completed request with server phases; the client sees TTFT =
// queue + prefill and evenly spaced tokens over the decode time.
func req(id int64, sent, queue, prefill, decode time.Duration, in, out int) record.Request {
	r := record.Request{ID: id, Scheduled: sent, Sent: sent, InputTokens: in, OutputTokens: out,
		ServerPhases: &record.Phases{Queue: queue, Prefill: prefill, Decode: decode}, InFlightAtSend: 1}
	r.FirstToken = sent + queue + prefill
	for i := 0; i < out; i++ {
		r.TokenTimes = append(r.TokenTimes, r.FirstToken+decode*time.Duration(i)/time.Duration(out-1))
	}
	r.Done = r.FirstToken + decode
	r.StreamEnd = r.Done
	return r
}

func repeat(n int, f func(i int) record.Request) []record.Request {
	out := make([]record.Request, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// Two windows whose requests take exactly the same total time, 1 s, split
// differently between the phases, get different verdicts.
func TestEqualTotalsDifferentSplits(t *testing.T) {
	base := repeat(20, func(i int) record.Request {
		return req(int64(i), time.Duration(i)*time.Second, 0, 50*ms, 50*ms, 512, 101)
	})
	queued := repeat(20, func(i int) record.Request {
		return req(int64(i), time.Duration(i)*time.Second, 900*ms, 50*ms, 50*ms, 512, 101)
	})
	slowDecode := repeat(20, func(i int) record.Request {
		return req(int64(i), time.Duration(i)*time.Second, 0, 50*ms, 950*ms, 512, 101)
	})
	longPrompt := repeat(20, func(i int) record.Request {
		return req(int64(i), time.Duration(i)*time.Second, 0, 950*ms, 50*ms, 4096, 101)
	})
	for _, c := range []struct {
		name string
		win  []record.Request
		want Verdict
	}{{"queue", queued, QueuePressure}, {"decode", slowDecode, DecodeSlowdown}, {"prefill", longPrompt, PrefillPressure}} {
		for _, phases := range []bool{true, false} {
			b, w := base, c.win
			if !phases {
				b, w = strip(b), strip(w)
			}
			e2e, _ := w[0].E2E()
			if e2e != time.Second {
				t.Fatalf("e2e %v", e2e)
			}
			d := Diagnose(w, Options{Baseline: b})
			if d.Verdict != c.want {
				t.Errorf("%s (phases %v): verdict %s, want %s", c.name, phases, d.Verdict, c.want)
				for _, e := range d.Evidence {
					t.Log(e.Text)
				}
			}
		}
	}
}

func strip(recs []record.Request) []record.Request {
	out := append([]record.Request(nil), recs...)
	for i := range out {
		out[i].ServerPhases = nil
	}
	return out
}

func TestClientLag(t *testing.T) {
	base := repeat(40, func(i int) record.Request {
		return req(int64(i), time.Duration(i)*100*ms, 0, 20*ms, 100*ms, 512, 11)
	})
	late := repeat(40, func(i int) record.Request {
		r := req(int64(i), time.Duration(i)*100*ms+300*ms, 0, 20*ms, 100*ms, 512, 11)
		r.Scheduled = time.Duration(i) * 100 * ms
		r.InFlightAtSend = 1 + i%3 // slots were free
		return r
	})
	d := Diagnose(late, Options{Baseline: base})
	if d.Verdict != ClientBottleneck || !strings.Contains(d.Evidence[0].Text, "client lag p95 300 ms") {
		t.Errorf("verdict %s: %v", d.Verdict, d.Evidence)
	}
	// The same lag at the in-flight cap is a queue in the client.
	for i := range late {
		late[i].InFlightAtSend = 8
	}
	d = Diagnose(late, Options{Baseline: base})
	if d.Verdict != QueuePressure || !strings.Contains(d.Evidence[0].Text, "waited for a free slot") {
		t.Errorf("at cap: verdict %s: %v", d.Verdict, d.Evidence)
	}
}

func TestRejections(t *testing.T) {
	win := repeat(40, func(i int) record.Request {
		if i%4 == 0 {
			return record.Request{ID: int64(i), Sent: time.Duration(i) * ms, Error: record.ErrRejected, HTTPStatus: 429}
		}
		return req(int64(i), time.Duration(i)*ms, 0, 20*ms, 100*ms, 512, 11)
	})
	d := Diagnose(win, Options{})
	if d.Verdict != QueuePressure || !strings.Contains(d.Evidence[0].Text, "25.0% of requests were rejected") {
		t.Errorf("verdict %s: %v", d.Verdict, d.Evidence)
	}
}

func TestEmptyAndAllFailed(t *testing.T) {
	if d := Diagnose(nil, Options{}); d.Verdict != Healthy || len(d.Evidence) == 0 {
		t.Errorf("empty: %+v", d)
	}
	failed := repeat(5, func(i int) record.Request {
		return record.Request{ID: int64(i), Error: record.ErrConnect}
	})
	if d := Diagnose(failed, Options{}); d.Verdict != Errors {
		t.Errorf("all failed: %s", d.Verdict)
	}
}

func TestSpearman(t *testing.T) {
	if r := spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 400}); r < 0.999 {
		t.Errorf("monotone ρ = %v", r)
	}
	if r := spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); r > -0.999 {
		t.Errorf("reversed ρ = %v", r)
	}
	if r := spearman([]float64{1, 1, 1}, []float64{1, 2, 3}); r != 0 {
		t.Errorf("constant ρ = %v", r)
	}
}
