package diagnose

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
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

// The case, without a baseline: queue ~0.1 s, prefill ~0.4 s and
// decode ~3.4 s for 200 output tokens (17 ms a token, 85% of every request)
// against a queue-bound run of the same total. Both say which phase
// dominates; against a reference that knows the model's speed (6.6 ms a
// token here, what the simulator predicts for Llama-3.1-8B on an H100) the
// decode-bound run is decode_slowdown, and an objective on TPOT says the
// same; the queue-bound run is queue_pressure either way. Alone, the
// decode-bound run is decode_bound: not called slow, but not healthy.
func TestDecodeBoundWithoutBaseline(t *testing.T) {
	decodeBound := repeat(40, func(i int) record.Request {
		return req(int64(i), time.Duration(i)*time.Second, 100*ms, 400*ms, 3400*ms, 512, 200)
	})
	queueBound := repeat(40, func(i int) record.Request {
		return req(int64(i), time.Duration(i)*time.Second, 2600*ms, 400*ms, 900*ms, 512, 200)
	})
	ref := &Reference{Source: "the simulator's Llama-3.1-8B on 1× H100-SXM",
		Expect: func(float64, float64, float64) Expected { return Expected{TPOTMS: 6.6, PrefillMS: 30} }}
	set, err := slo.ParseAll([]string{"mean(tpot)<10ms"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		win       []record.Request
		ref       *Reference
		want      Verdict
		dominates string
	}{
		{"decode-bound, no reference", decodeBound, nil, DecodeBound, "decode"},
		{"decode-bound, simulator", decodeBound, ref, DecodeSlowdown, "decode"},
		{"decode-bound, slo", decodeBound, &Reference{SLOs: set, Source: "the objectives"}, DecodeSlowdown, "decode"},
		{"queue-bound, no reference", queueBound, nil, QueuePressure, "queue"},
		{"queue-bound, simulator", queueBound, ref, QueuePressure, "queue"},
		{"decode-bound without phases, simulator", strip(decodeBound), ref, DecodeSlowdown, "decode"},
		{"queue-bound without phases", strip(queueBound), ref, Healthy, "first_token"},
	} {
		d := Diagnose(c.win, Options{Reference: c.ref})
		text := ""
		for _, e := range d.Evidence {
			text += e.Text + "\n"
		}
		if d.Verdict != c.want || d.DominantPhase != c.dominates {
			t.Errorf("%s: verdict %s, dominant %q; want %s, %q\n%s", c.name, d.Verdict, d.DominantPhase, c.want, c.dominates, text)
		}
		if c.dominates == "decode" && !strings.Contains(text, "Decode dominates") {
			t.Errorf("%s: the evidence does not say decode dominates:\n%s", c.name, text)
		}
		if c.want == DecodeSlowdown && c.ref.Expect != nil && !strings.Contains(text, "decode 17.1 ms per output token, ×2.59 the 6.6 ms") {
			t.Errorf("%s: the evidence does not set the speed against the expectation:\n%s", c.name, text)
		}
	}
}

// The lesson's worked pair as files of per-request phase times, no baseline
// and no reference: A (queue 2.5 s, prefill 0.4, decode 1.1) is
// queue_pressure; B (queue 0.1, prefill 0.4, decode 3.5, 87% decode) is
// decode_bound and says what to compare decode with — never healthy. The
// same holds for prefill, and a short request stays healthy.
func TestLessonPairWithoutReference(t *testing.T) {
	rows := func(header, row string) string {
		s := header + "\n"
		for i := 0; i < 30; i++ {
			s += fmt.Sprintf("%d,%s\n", i*1000, row)
		}
		return s
	}
	phases := "sent_ms,queue_ms,prefill_ms,decode_ms,input_tokens,output_tokens"
	client := "sent_ms,ttft_ms,tpot_ms,input_tokens,output_tokens,in_flight"
	for _, c := range []struct {
		name, file string
		want       Verdict
		names      string // the phase the evidence must name
	}{
		{"A: queue-bound", rows(phases, "2500,400,1100,512,200"), QueuePressure, "queue"},
		{"B: decode-bound", rows(phases, "100,400,3500,512,200"), DecodeBound, "decode"},
		{"B, client timing only", rows(client, "500,17.59,512,200,1"), DecodeBound, "decode"},
		{"prefill-bound", rows(phases, "100,3000,900,8192,100"), PrefillPressure, "prefill"},
		{"prefill-bound, client timing only, one in flight", rows(client, "3100,9.09,8192,100,1"), PrefillBound, "prefill"},
		{"decode-heavy request under the floor", rows(phases, "10,40,1500,512,100"), Healthy, "decode"},
	} {
		recs, _, err := Read(strings.NewReader(c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		d := Diagnose(recs, Options{})
		text := d.Action + "\n"
		for _, e := range d.Evidence {
			text += e.Text + "\n"
		}
		if d.Verdict != c.want || !strings.Contains(strings.ToLower(text), c.names) {
			t.Errorf("%s: verdict %s, want %s naming %s\n%s", c.name, d.Verdict, c.want, c.names, text)
		}
		if c.want == DecodeBound && !(strings.Contains(text, "--gpu and --model") && strings.Contains(text, "--baseline") && strings.Contains(text, "mean(tpot)")) {
			t.Errorf("%s: does not say what to compare decode with:\n%s", c.name, text)
		}
	}
}
