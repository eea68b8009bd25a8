package sweep

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/workload"
)

// startH100 starts a simulated server of Llama-3.1-8B on one H100,
// closed when the test ends.
func startH100(t *testing.T) (base string, srv *simserver.Server) {
	t.Helper()
	c := simengine.NewCatalog()
	g, _ := c.LookupGPU("h100")
	m, _ := c.LookupModel("llama-3.1-8b")
	base, srv, err := simserver.StartLocal(context.Background(), simserver.Config{Engine: simengine.DefaultConfig(g, m, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return base, srv
}

// TestTargetRunnerStepsOnARealServer: the real-target runner measures each
// step as the template says at the step's load (a closed loop of the
// step's users, or an open loop at its rate with --max-concurrency), tells
// its hooks, and sends ignore_eos only as told.
func TestTargetRunnerStepsOnARealServer(t *testing.T) {
	t.Parallel()
	base, srv := startH100(t)
	in, _ := workload.ParseDist("32")
	out, _ := workload.ParseDist("4")
	gen, err := workload.NewGenerator(workload.Spec{Input: in, Output: out, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var begun []Load
	var records, running, configured atomic.Int64
	var sawConfig []loadgen.Config
	r := &TargetRunner{
		Template: loadgen.Config{BaseURL: base, Model: srv.Model(), Requests: 8, MaxConcurrency: 3, Concurrency: 99},
		Items:    gen.Item,
		Arrivals: func(rate float64) (workload.Arrivals, error) {
			return workload.NewArrivals("constant", rate, 1, 1)
		},
		IgnoreEOS: true,
		BeginStep: func(l Load) { begun = append(begun, l) },
		OnRecord:  func(*record.Request) { records.Add(1) },
		Configure: func(cfg *loadgen.Config) error { configured.Add(1); return nil },
		Begin: func(_ context.Context, cfg loadgen.Config, src loadgen.Source) (loadgen.Config, loadgen.Source, error) {
			sawConfig = append(sawConfig, cfg)
			return cfg, src, nil
		},
		Running: func(*loadgen.Run, float64) { running.Add(1) },
	}
	steps := []Load{{Kind: Concurrency, Value: 2}, {Kind: Rate, Value: 200}}
	for i, load := range steps {
		step, err := r.Run(context.Background(), load)
		if err != nil {
			t.Fatalf("step %s: %v", load, err)
		}
		if step.Load != load || !step.Full || step.Summary.Requests != 8 || step.Summary.Completed != 8 {
			t.Errorf("step %s: load %s, full %v, %d requests %d completed; want its load, full, 8 and 8", load, step.Load, step.Full, step.Summary.Requests, step.Summary.Completed)
		}
		cfg := sawConfig[i]
		if !cfg.IgnoreEOS || !cfg.MinTokens {
			t.Errorf("step %s: ignore_eos %v min_tokens %v, want both as told", load, cfg.IgnoreEOS, cfg.MinTokens)
		}
		switch load.Kind {
		case Concurrency:
			if cfg.Concurrency != 2 || cfg.Arrivals != nil || cfg.MaxConcurrency != 0 {
				t.Errorf("closed-loop step: concurrency %d, arrivals %v, max concurrency %d; want 2, none, 0", cfg.Concurrency, cfg.Arrivals, cfg.MaxConcurrency)
			}
		case Rate:
			if cfg.Concurrency != 0 || cfg.Arrivals == nil || cfg.RateRPS != 200 || cfg.MaxConcurrency != 3 {
				t.Errorf("open-loop step: concurrency %d, rate %v, max concurrency %d; want 0, 200, the template's 3", cfg.Concurrency, cfg.RateRPS, cfg.MaxConcurrency)
			}
		}
	}
	if len(begun) != 2 || records.Load() != 16 || running.Load() != 2 || configured.Load() != 2 {
		t.Errorf("hooks: %d steps begun, %d records, %d runs, %d configured; want 2, 16, 2, 2", len(begun), records.Load(), running.Load(), configured.Load())
	}
}

// TestStepsToOneTargetSendTheirOwnPrompts: steps measured on one target
// that outlives them send prompts no other step sent (a prefix-caching
// server would answer a repeated prompt from its cache), the same prompts
// again for the same load (shards and a restarted shard agree), and with
// a fresh server per step the workload from its start.
func TestStepsToOneTargetSendTheirOwnPrompts(t *testing.T) {
	t.Parallel()
	base, srv := startH100(t)
	in, _ := workload.ParseDist("16")
	out, _ := workload.ParseDist("2")
	gen, err := workload.NewGenerator(workload.Spec{Input: in, Output: out, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	prompts := func(r *TargetRunner, load Load) []string {
		t.Helper()
		var got []string
		r.Begin = func(_ context.Context, cfg loadgen.Config, src loadgen.Source) (loadgen.Config, loadgen.Source, error) {
			for i := range int64(n) {
				got = append(got, src(i).Prompt)
			}
			return cfg, src, nil
		}
		if _, err := r.Run(context.Background(), load); err != nil {
			t.Fatalf("step %s: %v", load, err)
		}
		return got
	}
	newRunner := func() *TargetRunner {
		return &TargetRunner{Template: loadgen.Config{BaseURL: base, Model: srv.Model(), Requests: n}, Items: gen.Item}
	}
	r := newRunner()
	seen := map[string]string{}
	loads := []Load{{Kind: Concurrency, Value: 1}, {Kind: Concurrency, Value: 2}, {Kind: Concurrency, Value: 3}, {Kind: Concurrency, Value: 4}}
	for _, load := range loads {
		for _, p := range prompts(r, load) {
			if prev, ok := seen[p]; ok {
				t.Fatalf("step %s sent a prompt step %s sent: a prefix cache would answer it", load, prev)
			}
			seen[p] = load.String()
		}
	}
	again := prompts(newRunner(), loads[2])
	want := prompts(newRunner(), loads[2])
	for i := range want {
		if again[i] != want[i] {
			t.Fatalf("load %s's request %d differs between two runners: shards would send different prompts", loads[2], i)
		}
	}
	fresh := newRunner()
	fresh.Server = func(context.Context) (string, string, func(), error) { return base, srv.Model(), func() {}, nil }
	got := prompts(fresh, loads[1])
	for i, p := range got {
		if w := gen.Item(int64(i)).Prompt; p != w {
			t.Fatalf("a fresh server per step: request %d is not the workload's request %d", i, i)
		}
	}
}

// A step share scales a step's duration and request count, not below
// half a second or four requests (nor above what was asked).
func TestShortenStep(t *testing.T) {
	for _, c := range []struct {
		share     float64
		dur, want time.Duration
		req, wReq int64
	}{
		{0.5, 2 * time.Second, time.Second, 24, 12},
		{0.25, 600 * time.Millisecond, 500 * time.Millisecond, 5, 4},
		{0.5, 300 * time.Millisecond, 300 * time.Millisecond, 3, 3},
		{1, 2 * time.Second, 2 * time.Second, 24, 24},
		{0, 2 * time.Second, 2 * time.Second, 24, 24}, // no share asked: whole
	} {
		cfg := loadgen.Config{Duration: c.dur, Requests: c.req}
		ctx := context.Background()
		if c.share > 0 {
			ctx = WithStepShare(ctx, c.share)
		}
		shortenStep(ctx, &cfg)
		if cfg.Duration != c.want || cfg.Requests != c.wReq {
			t.Errorf("share %v of %v, %d requests: got %v, %d; want %v, %d", c.share, c.dur, c.req, cfg.Duration, cfg.Requests, c.want, c.wReq)
		}
	}
}

// A mix's Source is told where the step's prompts start: its own place
// for each load on a target that outlives the steps (the same again for
// the same load), 0 with a fresh server per step.
func TestMixSourceToldTheStepsFirstItem(t *testing.T) {
	t.Parallel()
	base, srv := startH100(t)
	in, _ := workload.ParseDist("16")
	out, _ := workload.ParseDist("2")
	gen, err := workload.NewGenerator(workload.Spec{Input: in, Output: out, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var firsts []int64
	r := &TargetRunner{Template: loadgen.Config{BaseURL: base, Model: srv.Model(), Requests: 2}, Items: gen.Item,
		Source: func(_ *loadgen.Config, _ workload.Arrivals, first int64) (loadgen.Source, error) {
			firsts = append(firsts, first)
			return func(i int64) loadgen.Request {
				it := gen.Item(first + i)
				return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, MaxTokens: it.MaxTokens}
			}, nil
		}}
	for _, v := range []float64{1, 2, 1} {
		if _, err := r.Run(context.Background(), Load{Kind: Concurrency, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	r.Server = func(context.Context) (string, string, func(), error) { return base, srv.Model(), func() {}, nil }
	if _, err := r.Run(context.Background(), Load{Kind: Concurrency, Value: 2}); err != nil {
		t.Fatal(err)
	}
	if firsts[0] == firsts[1] || firsts[0] != firsts[2] || firsts[3] != 0 {
		t.Fatalf("firsts %v: want two loads apart, the same load alike, 0 for a fresh server", firsts)
	}
}
