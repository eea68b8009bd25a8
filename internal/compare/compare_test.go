package compare

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
)

// lengths draws prompt and output lengths from a seeded source, the same
// for every run with the same seed.
type lengths struct{ seed uint64 }

func (l lengths) Lengths(i int64) (int, int) {
	r := rand.New(rand.NewPCG(l.seed, uint64(i)))
	return 256 + r.IntN(512), 64 + r.IntN(128)
}

func simRun(t *testing.T, gpu string, seed uint64) Side {
	t.Helper()
	g, err := simengine.LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	m, err := simengine.LookupModel("Llama-3.1-8B")
	if err != nil {
		t.Fatal(err)
	}
	arr, err := workload.NewArrivals("poisson", 8, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Engine: simengine.DefaultConfig(g, m, 1), Gen: lengths{seed}, Arrivals: arr,
		Requests: 600, KeepTokenTimes: true}
	recs, _, err := sim.Collect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Side{ID: gpu, Summary: stats.Summarize(recs, stats.Options{}), Records: recs}
}

func find(t *testing.T, r Result, name string) Metric {
	t.Helper()
	for _, m := range r.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %s in %v", name, r.Metrics)
	return Metric{}
}

// Two simulator runs with the same seed and preset are identical: nothing is
// flagged. The same workload on a slower GPU is flagged as worse.
func TestSimulatorRuns(t *testing.T) {
	a := simRun(t, "H100-SXM", 1)
	same := simRun(t, "H100-SXM", 1)
	slow := simRun(t, "A100-40GB", 1)

	r := Compare(a, same, Options{Resamples: 300})
	if len(r.Worse) != 0 || len(r.Better) != 0 || r.Verdict != "no change beyond noise" {
		t.Errorf("same seed and preset: worse %v better %v, verdict %q", r.Worse, r.Better, r.Verdict)
	}
	for _, m := range r.Metrics {
		if m.Beyond || m.Diff != 0 {
			t.Errorf("same runs, %s: diff %v beyond %v", m.Name, m.Diff, m.Beyond)
		}
		if strings.HasSuffix(m.Name, ".p50") && !m.Tested {
			t.Errorf("same runs, %s not tested: %s", m.Name, m.Note)
		}
	}
	// 600 requests leave 6 beyond a p99: too few to judge it.
	if m := find(t, r, "e2e_ms.p99"); m.Tested || !strings.Contains(m.Note, "too few") {
		t.Errorf("p99 of 600 requests judged: %+v", m)
	}

	r = Compare(a, slow, Options{Resamples: 300})
	if !strings.HasPrefix(r.Verdict, "B is worse") && !strings.HasPrefix(r.Verdict, "mixed") {
		t.Errorf("H100 → A100: verdict %q", r.Verdict)
	}
	for _, name := range []string{"itl_ms.p50", "tpot_ms.p50", "e2e_ms.p50", "ttft_ms.p50"} {
		m := find(t, r, name)
		if m.Effect != "worse" || m.B <= m.A {
			t.Errorf("H100 → A100, %s: A %.2f B %.2f effect %s CI [%v, %v]", name, m.A, m.B, m.Effect, *m.CILow, *m.CIHigh)
		}
	}
	t.Logf("H100 → A100: %s", r.Verdict)
}

// synth makes n completed requests, one per 10 ms, whose TTFT is drawn from
// a lognormal scaled by ttftScale and whose chunks are 20 ms ± noise apart.
func synth(seed uint64, n int, ttftScale float64) []record.Request {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]record.Request, n)
	for i := range out {
		sent := time.Duration(i) * 10 * time.Millisecond
		ttft := time.Duration(ttftScale * 100 * float64(time.Millisecond) * (0.5 + rng.ExpFloat64()))
		r := record.Request{ID: int64(i), Scheduled: sent, Sent: sent, FirstToken: sent + ttft, InputTokens: 100, OutputTokens: 20}
		t := r.FirstToken
		for range 20 {
			r.TokenTimes = append(r.TokenTimes, t)
			t += time.Duration((18 + 4*rng.Float64()) * float64(time.Millisecond))
		}
		r.Done = r.TokenTimes[len(r.TokenTimes)-1]
		r.StreamEnd = r.Done
		out[i] = r
	}
	return out
}

func side(id string, recs []record.Request) Side {
	return Side{ID: id, Summary: stats.Summarize(recs, stats.Options{}), Records: recs}
}

// A 30% TTFT shift is flagged on TTFT and not on ITL, which did not change.
func TestShiftFlaggedOnlyWhereItIs(t *testing.T) {
	a := side("a", synth(1, 2000, 1))
	b := side("b", synth(2, 2000, 1.3))
	r := Compare(a, b, Options{Resamples: 400})
	for _, name := range []string{"ttft_ms.p50", "ttft_ms.p95"} {
		if m := find(t, r, name); m.Effect != "worse" {
			t.Errorf("%s: effect %s (A %.1f B %.1f)", name, m.Effect, m.A, m.B)
		}
	}
	for _, name := range []string{"itl_ms.p50", "itl_ms.p95", "output_token_throughput_tps", "error_rate"} {
		if m := find(t, r, name); m.Beyond {
			t.Errorf("%s flagged though unchanged: A %.3f B %.3f CI [%.3f, %.3f]", name, m.A, m.B, *m.CILow, *m.CIHigh)
		}
	}
}

// The interval is calibrated: over many pairs drawn from one distribution,
// a metric is flagged in few of them (a 95% interval: about 5%, lower with
// the minimum-change rule).
func TestFalseAlarmRate(t *testing.T) {
	if testing.Short() {
		t.Skip("many bootstraps")
	}
	const pairs = 24
	flagged := 0
	for i := range pairs {
		a := side("a", synth(uint64(100+2*i), 400, 1))
		b := side("b", synth(uint64(101+2*i), 400, 1))
		m := find(t, Compare(a, b, Options{Resamples: 200, Seed: uint64(i)}), "ttft_ms.p50")
		if m.Beyond {
			flagged++
		}
	}
	if flagged > pairs/5 {
		t.Errorf("TTFT p50 flagged in %d of %d same-distribution pairs; a 95%% interval should rarely do that", flagged, pairs)
	}
	t.Logf("false alarms: %d of %d", flagged, pairs)
}

func TestSummaryOnlyIsUntested(t *testing.T) {
	a := side("a", synth(1, 100, 1))
	b := side("b", synth(2, 100, 2))
	b.Records = nil
	r := Compare(a, b, Options{})
	if !strings.HasPrefix(r.Verdict, "cannot judge") {
		t.Errorf("verdict %q", r.Verdict)
	}
	if m := find(t, r, "ttft_ms.p50"); m.Tested || m.Effect != "untested" || m.B <= m.A {
		t.Errorf("summary-only ttft: %+v", m)
	}
}

func TestErrorRate(t *testing.T) {
	ra, rb := synth(1, 1000, 1), synth(1, 1000, 1)
	for i := range rb {
		if i%10 == 0 {
			rb[i].Error = record.ErrHTTP5xx
		}
	}
	r := Compare(side("a", ra), side("b", rb), Options{Resamples: 200})
	if m := find(t, r, "error_rate"); m.Effect != "worse" || m.B < 0.09 {
		t.Errorf("error rate 0 → 10%%: %+v", m)
	}
}
