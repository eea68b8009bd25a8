package sim

import (
	"context"
	"testing"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/workload"
)

// fixed is a workload of constant lengths.
type fixed struct{ in, out int }

func (f fixed) Lengths(int64) (int, int) { return f.in, f.out }

func engineConfig(tb testing.TB, gpu, model string, tp int) simengine.Config {
	tb.Helper()
	g, err := simengine.LookupGPU(gpu)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := simengine.LookupModel(model)
	if err != nil {
		tb.Fatal(err)
	}
	return simengine.DefaultConfig(g, m, tp)
}

// capacity measures the saturated request throughput of a workload with a
// closed loop far beyond what the engine can batch.
func capacity(tb testing.TB, ecfg simengine.Config, gen Lengths, users int, n int64) float64 {
	tb.Helper()
	var done int64
	var last int64
	res, err := Run(context.Background(), Config{Engine: ecfg, Gen: gen, Concurrency: users, Requests: n}, func(r *record.Request) {
		done++
		last = int64(r.Done)
	})
	if err != nil {
		tb.Fatal(err)
	}
	_ = res
	return float64(done) / (float64(last) / 1e9)
}

// BenchmarkMillionRequests simulates one million requests of Llama-3.1-8B
// on one H100, 1024 prompt / 256 output tokens, Poisson arrivals at 80% of
// the saturated throughput.
func BenchmarkMillionRequests(b *testing.B) {
	ecfg := engineConfig(b, "h100", "llama-3.1-8b", 1)
	gen := fixed{1024, 256}
	capRPS := capacity(b, ecfg, gen, 2048, 20000)
	rate := 0.8 * capRPS
	b.Logf("saturated throughput %.1f req/s; offered %.1f req/s", capRPS, rate)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		arr, err := workload.NewArrivals("poisson", rate, 1, 1)
		if err != nil {
			b.Fatal(err)
		}
		var completed int64
		res, err := Run(context.Background(), Config{Engine: ecfg, Gen: gen, Arrivals: arr, Requests: 1_000_000},
			func(r *record.Request) { completed++ })
		if err != nil {
			b.Fatal(err)
		}
		if completed != 1_000_000 {
			b.Fatalf("completed %d of 1e6", completed)
		}
		secs := b.Elapsed().Seconds()
		b.ReportMetric(float64(res.Events)/secs/float64(b.N), "events/s")
		b.ReportMetric(float64(res.Steps), "steps")
		b.ReportMetric(float64(res.Engine.Preemptions), "preemptions")
		b.ReportMetric(res.End.Seconds(), "virtual-s")
	}
}
