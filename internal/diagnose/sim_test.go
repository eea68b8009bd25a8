package diagnose_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/diagnose"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
	"github.com/knee-dev/knee/internal/workload"
)

// lengths gives every request the same prompt and output length, with a
// little jitter on the prompt so correlations are defined.
type lengths struct{ in, out int }

func (l lengths) Lengths(i int64) (int, int) {
	r := rand.New(rand.NewPCG(7, uint64(i)))
	return l.in + r.IntN(l.in/8+1), l.out
}

// run simulates Llama-3.1-8B on one H100 for 60 virtual seconds of Poisson
// arrivals at rate req/s.
func run(t *testing.T, rate float64, in int, stepScale float64, seed uint64) []record.Request {
	t.Helper()
	a, err := workload.NewArrivals("poisson", rate, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	// The cost model is pinned (the constants before they were refitted to
	// vLLM serving data): the incidents' rates are set against its
	// capacity, and this tests the diagnosis, not the calibration. Its
	// compute rate is 47% of the H100's peak, 0.585 of its achievable
	// matmul rate (794.5 of 989 TFLOP/s).
	ecfg := enginetest.H100Llama8B(t, 1)
	pinned := simengine.DefaultCost
	pinned.ComputeEfficiency, pinned.KVMemEfficiency = 0.585, 0
	ecfg.Cost = &pinned
	cfg := sim.Config{Engine: ecfg, Gen: lengths{in, 128}, Arrivals: a,
		Duration: 60 * time.Second, WarmupRequests: 10, KeepTokenTimes: true}
	cfg.Engine.StepTimeScale = stepScale
	recs, _, err := sim.Collect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func withoutPhases(recs []record.Request) []record.Request {
	out := make([]record.Request, len(recs))
	for i, r := range recs {
		r.ServerPhases, r.ServerTokenTimes = nil, nil
		out[i] = r
	}
	return out
}

// with5xx turns every fifth request into an HTTP 500 with no tokens.
func with5xx(recs []record.Request) []record.Request {
	out := append([]record.Request(nil), recs...)
	for i := range out {
		if i%5 == 0 {
			r := &out[i]
			*r = record.Request{ID: r.ID, Scheduled: r.Scheduled, Sent: r.Sent, Done: r.Sent + time.Millisecond,
				StreamEnd: r.Sent + time.Millisecond, InputTokens: r.InputTokens, HTTPStatus: 500,
				Error: record.ErrHTTP5xx, ErrorMessage: "internal server error", InFlightAtSend: r.InFlightAtSend}
		}
	}
	return out
}

func TestSimulatedIncidents(t *testing.T) {
	base20 := run(t, 20, 512, 1, 1)
	base10 := run(t, 10, 512, 1, 2)
	base2 := run(t, 2, 512, 1, 3)
	cases := []struct {
		name             string
		baseline, window []record.Request
		want             diagnose.Verdict
	}{
		{"arrivals above capacity", base20, run(t, 80, 512, 1, 4), diagnose.QueuePressure},
		{"arrivals just above capacity", base20, run(t, 60, 512, 1, 4), diagnose.QueuePressure},
		{"step time doubled", base10, run(t, 10, 512, 2, 5), diagnose.DecodeSlowdown},
		{"prompts eight times longer", base2, run(t, 2, 4096, 1, 6), diagnose.PrefillPressure},
		{"prompts eight times longer under load", base10, run(t, 5, 4096, 1, 6), diagnose.PrefillPressure},
		{"20% 5xx", base10, with5xx(run(t, 10, 512, 1, 7)), diagnose.Errors},
		{"nothing changed", base10, run(t, 10, 512, 1, 8), diagnose.Healthy},
	}
	for _, c := range cases {
		for _, phases := range []bool{true, false} {
			name := c.name + "/server phases"
			b, w := c.baseline, c.window
			if !phases {
				name = c.name + "/client only"
				b, w = withoutPhases(b), withoutPhases(w)
			}
			t.Run(name, func(t *testing.T) {
				d := diagnose.Diagnose(w, diagnose.Options{Baseline: b})
				if d.Verdict != c.want {
					t.Errorf("verdict %s, want %s", d.Verdict, c.want)
					for _, e := range d.Evidence {
						t.Log(e.Text)
					}
				}
				if d.Action == "" || len(d.Evidence) == 0 {
					t.Errorf("no action or evidence: %+v", d)
				}
			})
		}
	}
}

// Without a baseline only what the window shows by itself can be judged:
// a queue (phase share, or TTFT rank-correlated with in-flight) and errors.
// A uniformly slower decode has nothing to be compared with: it is
// decode_bound, named as where the time goes (docs/diagnosis.md).
func TestSimulatedIncidentsWithoutBaseline(t *testing.T) {
	over := run(t, 80, 512, 1, 4)
	slow := run(t, 10, 512, 2, 5)
	cases := []struct {
		name string
		recs []record.Request
		want diagnose.Verdict
	}{
		{"overload, server phases", over, diagnose.QueuePressure},
		{"overload, client only", withoutPhases(over), diagnose.QueuePressure},
		{"healthy load", run(t, 10, 512, 1, 9), diagnose.Healthy},
		{"uniformly slow decode alone: where the time goes, not called slow", slow, diagnose.DecodeBound},
		{"5xx", with5xx(slow), diagnose.Errors},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := diagnose.Diagnose(c.recs, diagnose.Options{})
			if d.Verdict != c.want {
				t.Errorf("verdict %s, want %s (%s)", d.Verdict, c.want, d.Basis)
				for _, e := range d.Evidence {
					t.Log(e.Text)
				}
			}
		})
	}
}

// Against the simulator's expectation for the model and GPU, a uniformly
// slow decode is seen without a baseline, and healthy runs stay healthy.
func TestSimulatedIncidentsAgainstTheSimulator(t *testing.T) {
	eng, err := simengine.NewEngine(enginetest.H100Llama8B(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	ref := &diagnose.Reference{Source: "the simulator's Llama-3.1-8B on 1× H100", Expect: diagnose.EngineExpectation(eng.Config())}
	for _, c := range []struct {
		name string
		recs []record.Request
		want diagnose.Verdict
	}{
		{"healthy load", run(t, 10, 512, 1, 9), diagnose.Healthy},
		{"healthy load, client only", withoutPhases(run(t, 10, 512, 1, 9)), diagnose.Healthy},
		{"busy but healthy", run(t, 30, 512, 1, 3), diagnose.Healthy},
		{"every step twice as slow", run(t, 10, 512, 2, 5), diagnose.DecodeSlowdown},
		{"every step twice as slow, client only", withoutPhases(run(t, 10, 512, 2, 5)), diagnose.DecodeSlowdown},
		{"overload", run(t, 80, 512, 1, 4), diagnose.QueuePressure},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := diagnose.Diagnose(c.recs, diagnose.Options{Reference: ref})
			if d.Verdict != c.want {
				t.Errorf("verdict %s, want %s (%s)", d.Verdict, c.want, d.Basis)
			}
			if t.Failed() || testing.Verbose() {
				for _, e := range d.Evidence {
					t.Log(e.Text)
				}
			}
		})
	}
}

// A slowdown that starts half-way through one run is found by splitting it.
func TestSplitWindow(t *testing.T) {
	before := run(t, 10, 512, 1, 11)
	after := run(t, 10, 512, 2, 12)
	joined := append([]record.Request(nil), before...)
	for _, r := range after {
		r.Warmup = false
		r.Scheduled += 60 * time.Second
		r.Sent += 60 * time.Second
		r.FirstToken += 60 * time.Second
		r.Done += 60 * time.Second
		for i := range r.TokenTimes {
			r.TokenTimes[i] += 60 * time.Second
		}
		joined = append(joined, r)
	}
	b, w := diagnose.Split(joined, 60*time.Second)
	if len(b) == 0 || len(w) == 0 {
		t.Fatal("empty split")
	}
	d := diagnose.Diagnose(w, diagnose.Options{Baseline: b, BaselineName: "requests sent before 60s"})
	if d.Verdict != diagnose.DecodeSlowdown || !strings.Contains(d.Basis, "before 60s") {
		t.Errorf("verdict %s (%s)", d.Verdict, d.Basis)
	}
	// The same run judged without a baseline finds the change as a trend.
	d = diagnose.Diagnose(joined, diagnose.Options{})
	if d.Verdict != diagnose.DecodeSlowdown || !strings.Contains(d.Basis, "trend") {
		t.Errorf("trend verdict %s (%s)", d.Verdict, d.Basis)
	}
}
