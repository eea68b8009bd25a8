package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// served makes n requests as knee's own server would report them: the
// server intends its tokens stepMS apart (with a little batch variation);
// the client sees each token after a delivery delay drawn by deliver (the
// machine: pacing, CPU contention).
func served(seed uint64, n int, stepMS float64, deliver func(rng *rand.Rand, k int) float64) []record.Request {
	rng := rand.New(rand.NewPCG(seed, 11))
	out := make([]record.Request, n)
	for i := range out {
		sent := time.Duration(i) * 20 * time.Millisecond
		r := record.Request{ID: int64(i), Scheduled: sent, Sent: sent, InputTokens: 100, OutputTokens: 40}
		intended := 30.0 + 5*rng.Float64()
		for k := range 40 {
			r.ServerTokenTimes = append(r.ServerTokenTimes, time.Duration(intended*float64(time.Millisecond)))
			r.TokenTimes = append(r.TokenTimes, sent+time.Duration((intended+deliver(rng, k))*float64(time.Millisecond)))
			intended += stepMS * (0.95 + 0.1*rng.Float64())
		}
		r.FirstToken, r.Done = r.TokenTimes[0], r.TokenTimes[len(r.TokenTimes)-1]
		r.StreamEnd = r.Done
		out[i] = r
	}
	return out
}

func heavyTail(rng *rand.Rand, _ int) float64 { return 3 * rng.ExpFloat64() }

// The case: the server decodes 37% slower in B, measured through a
// machine whose delivery delay has a heavy tail. TPOT p50 and p95 moved
// alike, and both are judged alike: worse (was: p50 worse, p95 "within
// jitter", because the per-token jitter at the 95th percentile exceeded the
// TPOT difference).
func TestRealChangeJudgedAlikeAtEveryQuantile(t *testing.T) {
	a := side("a", served(1, 1200, 6.6, heavyTail))
	b := side("b", served(2, 1200, 6.6*1.37, heavyTail))
	r := Compare(a, b, Options{Resamples: 300})
	for _, name := range []string{"tpot_ms.p50", "tpot_ms.p95", "itl_ms.p50", "itl_ms.p95", "e2e_ms.p50", "e2e_ms.p95"} {
		m := find(t, r, name)
		if m.Effect != "worse" || m.WithinJitter {
			t.Errorf("%s: %s (within jitter %v), A %.2f B %.2f CI [%.2f, %.2f]: a 37%% slower decode is worse at every quantile",
				name, m.Effect, m.WithinJitter, m.A, m.B, *m.CILow, *m.CIHigh)
		}
	}
}

// The other way round: the server did the same, the machine delivered B's
// tokens later and later (a busy CPU). The measured TPOT grows beyond
// resampling noise, but the intended times did not move: within jitter at
// every quantile, p50 included (was: "worse" at p50, whose jitter allowance
// was zero by construction).
func TestMachineOnlyIsWithinJitterAtEveryQuantile(t *testing.T) {
	a := side("a", served(1, 1200, 6.6, func(*rand.Rand, int) float64 { return 0.2 }))
	b := side("b", served(1, 1200, 6.6, func(_ *rand.Rand, k int) float64 { return 0.2 + 1.5*float64(k) }))
	r := Compare(a, b, Options{Resamples: 300})
	for _, name := range []string{"tpot_ms.p50", "tpot_ms.p95", "e2e_ms.p50"} {
		m := find(t, r, name)
		if m.Effect == "worse" || !m.WithinJitter || !m.Tested || !(*m.CILow > 0) {
			t.Errorf("%s: %s (within jitter %v), A %.2f B %.2f: the server did not change", name, m.Effect, m.WithinJitter, m.A, m.B)
		}
	}
	if !strings.Contains(r.Verdict, "no change beyond noise") {
		t.Errorf("verdict %q", r.Verdict)
	}
}

// All failed against all completed: not "better" latency from nothing; the
// latencies of the failed side are missing (NaN, shown "–"), the runs are
// said to be not comparable on latency, and the error-rate interval is not
// the degenerate [−100%, −100%].
func TestAllFailedIsNotComparableOnLatency(t *testing.T) {
	bad := synth(1, 5, 1)
	for i := range bad {
		bad[i].Error, bad[i].TokenTimes, bad[i].FirstToken, bad[i].Done = record.ErrHTTP5xx, nil, 0, 0
	}
	a, b := side("1", bad), side("2", synth(2, 5, 1))
	r := Compare(a, b, Options{Resamples: 200})
	if r.LatencyComparable || !strings.HasPrefix(r.Verdict, "not comparable on latency: A (run 1) completed none of its 5 requests") {
		t.Errorf("verdict %q", r.Verdict)
	}
	for _, m := range r.Metrics {
		if m.Unit == "ms" && (!math.IsNaN(m.A) || m.Effect != "untested") {
			t.Errorf("%s: A %v effect %s; want no figure and not judged", m.Name, m.A, m.Effect)
		}
	}
	e := find(t, r, "error_rate")
	if !e.Tested || *e.CILow == *e.CIHigh || *e.CIHigh >= 0 {
		t.Errorf("error rate 100%% → 0%% at n=5: CI [%v, %v]", *e.CILow, *e.CIHigh)
	}
}

// Runs of different models, targets or workloads are compared with a caution.
func TestSetupDifferenceCautions(t *testing.T) {
	a, b := side("1", synth(1, 200, 1)), side("2", synth(2, 200, 1))
	a.Model, b.Model = "llama-3.1-8b", "qwen3-8b"
	a.Setup = [][2]string{{"input_tokens", "512"}, {"api", "chat"}}
	b.Setup = [][2]string{{"input_tokens", "2048"}, {"api", "chat"}}
	r := Compare(a, b, Options{Resamples: 100})
	joined := strings.Join(r.Cautions, "\n")
	if !strings.Contains(joined, "model (A llama-3.1-8b, B qwen3-8b)") || !strings.Contains(joined, "input_tokens (A 512, B 2048)") || strings.Contains(joined, "api") {
		t.Errorf("cautions: %v", r.Cautions)
	}
	if c := Compare(a, a, Options{Resamples: 100}).Cautions; strings.Contains(strings.Join(c, "\n"), "differ in") {
		t.Errorf("identical setups cautioned: %v", c)
	}
}
