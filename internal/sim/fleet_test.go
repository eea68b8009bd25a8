package sim

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/workload"
)

func arrivalsOf(t testing.TB, kind string, rate, burstiness float64, seed uint64) workload.Arrivals {
	t.Helper()
	a, err := workload.NewArrivals(kind, rate, burstiness, seed)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func collectFleet(t testing.TB, cfg FleetConfig) ([]record.Request, FleetResult) {
	t.Helper()
	var recs []record.Request
	res, err := RunFleet(context.Background(), cfg, func(r *record.Request) { recs = append(recs, r.Clone()) })
	if err != nil {
		t.Fatal(err)
	}
	return recs, res
}

// A fleet of one is the single-engine run: the same records, field for
// field, and records in virtual-time order.
func TestFleetOfOneIsRun(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ecfg.QueueLimit = 30
	gen := varied{32, 3000, 1, 300}
	base := Config{Engine: ecfg, Gen: gen, Arrivals: poisson(t, 40, 3), Requests: 2000, StreamTokenTimes: true}
	want, wres, err := Collect(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	base.Arrivals = poisson(t, 40, 3)
	got, gres := collectFleet(t, FleetConfig{Config: base, Count: 1})
	if wres.Rejected == 0 {
		t.Fatal("want some rejections at 40 req/s with a queue limit of 30")
	}
	if len(got) != len(want) || gres.Completed != wres.Completed || gres.Rejected != wres.Rejected || gres.Steps != wres.Steps || gres.Tokens != wres.Tokens {
		t.Fatalf("fleet of one: %d records, %+v; single run: %d records, %+v", len(got), gres.Result, len(want), wres)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Done < got[i-1].Done {
			t.Fatalf("records out of virtual-time order at %d: %v after %v", i, got[i].Done, got[i-1].Done)
		}
	}
	byID := func(rs []record.Request) {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	}
	byID(got)
	byID(want)
	for i := range got {
		g, w := got[i], want[i]
		if g.Replica != "r0" {
			t.Fatalf("record %d names replica %q, want r0", g.ID, g.Replica)
		}
		g.Replica = ""
		gj, _ := g.MarshalJSON()
		wj, _ := w.MarshalJSON()
		if string(gj) != string(wj) {
			t.Fatalf("record %d differs:\nfleet  %s\nsingle %s", g.ID, gj, wj)
		}
	}
}

type latencies struct{ ttft, tpot []float64 }

func latenciesOf(recs []record.Request) latencies {
	var l latencies
	for _, r := range recs {
		if r.Warmup || !r.OK() {
			continue
		}
		ttft, _ := r.TTFT()
		l.ttft = append(l.ttft, ttft.Seconds())
		if tpot, ok := r.TPOT(); ok {
			l.tpot = append(l.tpot, tpot.Seconds())
		}
	}
	return l
}

func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// shifted is a workload whose lengths are another's from an offset: an
// independent sample of the same length distribution.
type shifted struct {
	gen Lengths
	off int64
}

func (s shifted) Lengths(i int64) (int, int) { return s.gen.Lengths(i + s.off) }

// N replicas behind round robin at N× one replica's load see that
// replica's latency distribution, within sampling noise: each quantile of
// the fleet's TTFT and TPOT lies within the range that eight independent
// runs of one replica (same length distribution, other samples) span,
// widened by 3%. Arrivals are evenly spaced, so round robin hands every
// replica the single replica's arrival pattern (split round robin, a
// Poisson stream becomes a smoother Erlang stream per replica: latencies
// would be lower, not equal).
func TestRoundRobinFleetMatchesOneReplica(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	const rate, perReplica = 14.0, 1500 // about 70% of one replica's capacity
	run := func(n int, off int64) latencies {
		gen := shifted{varied{200, 2000, 50, 400}, off}
		cfg := FleetConfig{Config: Config{Engine: ecfg, Gen: gen, Arrivals: arrivalsOf(t, "constant", rate*float64(n), 1, 5),
			Requests: int64(perReplica * n), WarmupRequests: 100 * n}, Count: n, Router: RoundRobin}
		recs, res := collectFleet(t, cfg)
		for _, r := range res.Replicas {
			if r.Routed != int64(perReplica) {
				t.Fatalf("%d replicas: replica %s got %d requests, want %d", n, r.Name, r.Routed, perReplica)
			}
		}
		return latenciesOf(recs)
	}
	var refs []latencies
	for k := range 8 {
		refs = append(refs, run(1, int64(k)*1_000_000))
	}
	for _, n := range []int{1, 4, 16} {
		got := run(n, 7_000_000)
		for _, m := range []struct {
			name string
			pick func(latencies) []float64
		}{{"ttft", func(l latencies) []float64 { return l.ttft }}, {"tpot", func(l latencies) []float64 { return l.tpot }}} {
			for _, q := range []float64{.5, .9, .99} {
				lo, hi := math.Inf(1), 0.0
				for _, r := range refs {
					v := quantile(m.pick(r), q)
					lo, hi = min(lo, v), max(hi, v)
				}
				v := quantile(m.pick(got), q)
				t.Logf("N=%2d %s p%.0f: %.2f ms (one replica %.2f–%.2f ms)", n, m.name, 100*q, 1e3*v, 1e3*lo, 1e3*hi)
				if v < lo*0.97 || v > hi*1.03 {
					t.Errorf("N=%d: %s p%.0f %.2f ms outside one replica's %.2f–%.2f ms", n, m.name, 100*q, 1e3*v, 1e3*lo, 1e3*hi)
				}
			}
		}
	}
}

// Prefix-affinity routing keeps each group's system prompt on the replicas
// that hold it: more of the fleet's prompt tokens hit, and TTFT is lower,
// than round robin, whose replicas each have to cache every group.
func TestPrefixAffinityBeatsRoundRobin(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ecfg.GPUMemoryUtilization = 0.35 // a KV cache of ~80k tokens: too small for every group's prefix
	in, err := workload.ParseDist("2304")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := workload.ParseDist("64")
	gen, err := workload.NewGenerator(workload.Spec{Input: in, Output: out, SharedPrefixTokens: 2048, PrefixGroups: 64, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	run := func(router string) (float64, float64) {
		recs, res := collectFleet(t, FleetConfig{Config: Config{Engine: ecfg, Gen: gen, Arrivals: poisson(t, 40, 4),
			Requests: 6000, WarmupRequests: 1000}, Count: 4, Router: router})
		l := latenciesOf(recs)
		return res.PrefixHitRate(), quantile(l.ttft, .5)
	}
	rrHit, rrTTFT := run(RoundRobin)
	paHit, paTTFT := run(PrefixAffinity)
	t.Logf("round robin: hit rate %.1f%%, TTFT p50 %.1f ms; prefix affinity: hit rate %.1f%%, TTFT p50 %.1f ms",
		100*rrHit, 1e3*rrTTFT, 100*paHit, 1e3*paTTFT)
	if paHit <= rrHit+0.05 || paTTFT >= rrTTFT {
		t.Errorf("prefix affinity should hit more and answer sooner: hit %.3f vs %.3f, TTFT %v vs %v", paHit, rrHit, paTTFT, rrTTFT)
	}
}

// On bursty (gamma) arrivals of mixed lengths near the fleet's capacity,
// sending each request to the replica with the fewest outstanding requests
// keeps queues shorter than round robin, which keeps feeding a replica
// stuck with long requests. (Well below capacity round robin's TTFT p95 is
// the lower one: it never puts two prompts of a burst on one replica.)
func TestLeastOutstandingBeatsRoundRobinOnBursts(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ecfg.MaxNumSeqs = 32
	gen := varied{100, 4000, 10, 1000}
	for _, seed := range []uint64{8, 9} {
		run := func(router string) float64 {
			recs, _ := collectFleet(t, FleetConfig{Config: Config{Engine: ecfg, Gen: gen, Arrivals: arrivalsOf(t, "gamma", 18, 0.25, seed),
				Requests: 8000, WarmupRequests: 500}, Count: 4, Router: router})
			return quantile(latenciesOf(recs).ttft, .95)
		}
		rr, lo := run(RoundRobin), run(LeastOutstanding)
		t.Logf("seed %d: gamma arrivals (burstiness 0.25) at 18 req/s on 4 replicas: TTFT p95 round robin %.0f ms, least outstanding %.0f ms", seed, 1e3*rr, 1e3*lo)
		if lo >= rr*0.8 {
			t.Errorf("seed %d: least outstanding TTFT p95 %.3f s, want well below round robin's %.3f s", seed, lo, rr)
		}
	}
}

// The same seed gives the same fleet run, record for record, for every
// router; session affinity keeps a prefix group on one replica; a gateway
// queue limit rejects at the gateway.
func TestFleetDeterministicAndRouters(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	in, _ := workload.ParseDist("1024")
	out, _ := workload.ParseDist("32:256")
	gen, err := workload.NewGenerator(workload.Spec{Input: in, Output: out, SharedPrefixTokens: 512, PrefixGroups: 8, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, router := range Routers {
		runOnce := func() string {
			recs, _ := collectFleet(t, FleetConfig{Config: Config{Engine: ecfg, Gen: gen, Arrivals: poisson(t, 60, 2), Requests: 1500, StreamTokenTimes: true},
				Count: 3, Router: router})
			var b []byte
			for _, r := range recs {
				j, _ := r.MarshalJSON()
				b = append(b, j...)
			}
			return string(b)
		}
		if a, b := runOnce(), runOnce(); a != b {
			t.Errorf("%s: two runs with one seed differ", router)
		}
	}
	recs, _ := collectFleet(t, FleetConfig{Config: Config{Engine: ecfg, Gen: gen, Arrivals: poisson(t, 60, 2), Requests: 1500},
		Count: 3, Router: SessionAffinity})
	where := map[uint64]string{}
	var segs []simengine.Segment
	for _, r := range recs {
		_, _, segs = gen.Content(r.ID, segs[:0])
		if w, ok := where[segs[0].ID]; ok && w != r.Replica {
			t.Fatalf("session affinity sent group %x to %s and %s", segs[0].ID, w, r.Replica)
		}
		where[segs[0].ID] = r.Replica
	}
	recs, res := collectFleet(t, FleetConfig{Config: Config{Engine: ecfg, Gen: gen, Arrivals: poisson(t, 400, 2), Requests: 3000},
		Count: 2, Router: LeastOutstanding, GatewayQueueLimit: 16})
	var rejected int64
	for _, r := range recs {
		if r.Error == record.ErrRejected {
			rejected++
			if r.HTTPStatus != 429 || r.Replica != "" {
				t.Fatalf("gateway rejection record %+v", r)
			}
		}
	}
	if res.GatewayRejected == 0 || rejected != res.GatewayRejected || res.Completed+res.Rejected != res.Issued {
		t.Fatalf("gateway limit at 400 req/s: %d rejected (%d records), %+v", res.GatewayRejected, rejected, res.Result)
	}
	if _, err := RunFleet(context.Background(), FleetConfig{Config: Config{Engine: ecfg, Gen: gen, Concurrency: 2, Requests: 3}, Count: 2, Router: "random"}, nil); err == nil {
		t.Fatal("an unknown router should be an error")
	}
}

// On Mooncake's conversation trace (where the shared traces are present),
// prefix affinity over 8 replicas hits the cache more than round robin and
// answers sooner.
func TestPrefixAffinityOnMooncakeTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 12,000 requests twice")
	}
	// Pure (no package state changed) and long: it runs beside the
	// other Mooncake replay once the sequential tests are done.
	t.Parallel()
	tr, _ := mooncakeTrace(t)
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	run := func(router string) (float64, float64) {
		s, err := tr.Stream(false)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		recs, res := collectFleet(t, FleetConfig{Config: Config{Engine: ecfg, Gen: s, Arrivals: s, Requests: int64(tr.Info().Kept), TooLongAsErrors: true},
			Count: 8, Router: router})
		return res.PrefixHitRate(), quantile(latenciesOf(recs).ttft, .5)
	}
	rrHit, rrTTFT := run(RoundRobin)
	paHit, paTTFT := run(PrefixAffinity)
	t.Logf("Mooncake conversation trace, 8× H100 Llama-3.1-8B: round robin hit rate %.1f%%, TTFT p50 %.0f ms; prefix affinity %.1f%%, %.0f ms",
		100*rrHit, 1e3*rrTTFT, 100*paHit, 1e3*paTTFT)
	if paHit <= rrHit*1.5 || paTTFT >= rrTTFT {
		t.Errorf("prefix affinity: hit rate %.3f vs %.3f, TTFT p50 %.3f s vs %.3f s", paHit, rrHit, paTTFT, rrTTFT)
	}
}

// longOrShort is a workload whose every fifth prompt is long.
type longOrShort struct{ long, short, out int }

func (w longOrShort) Lengths(i int64) (int, int) {
	if i%5 == 0 {
		return w.long, w.out
	}
	return w.short, w.out
}

// Prefill/decode disaggregation: long prompts no longer stretch the
// inter-token gaps of the requests decoding beside them (the decode
// replica never prefills), and a request's TTFT pays the KV transfer.
func TestDisaggregatedPrefillDecode(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	gen := longOrShort{8000, 256, 128}
	// gapStats: the longest inter-token gap, and the share over 50 ms.
	gapStats := func(cfg FleetConfig) (float64, float64, FleetResult) {
		var longest float64
		var n, over int
		cfg.Config = Config{Engine: ecfg, Gen: gen, Arrivals: poisson(t, 8, 6), Requests: 3000, WarmupRequests: 300,
			OnGaps: func(g time.Duration, k int) {
				longest = max(longest, g.Seconds())
				n += k
				if g > 50*time.Millisecond {
					over += k
				}
			}}
		_, res := collectFleet(t, cfg)
		return longest, float64(over) / float64(n), res
	}
	coloMax, coloOver, _ := gapStats(FleetConfig{Count: 2, Router: LeastOutstanding})
	disMax, disOver, res := gapStats(FleetConfig{Prefill: 1, Decode: 1, Router: LeastOutstanding})
	t.Logf("8 req/s, every fifth prompt 8000 tokens (else 256), 128 out: longest inter-token gap %.1f ms (%.2f%% over 50 ms) on 2 colocated replicas, %.1f ms (%.2f%%) with 1 prefill + 1 decode",
		1e3*coloMax, 100*coloOver, 1e3*disMax, 100*disOver)
	if coloMax < 0.1 || coloOver == 0 || disOver != 0 || disMax > 0.02 {
		t.Errorf("colocated: longest gap %.1f ms, %.2f%% over 50 ms; disaggregated: %.1f ms, %.2f%%: want long prompts to stretch only the colocated gaps",
			1e3*coloMax, 100*coloOver, 1e3*disMax, 100*disOver)
	}
	if p, d := res.Replicas[0], res.Replicas[1]; p.Name != "p0" || d.Name != "d0" || p.Completed != 3000 || d.Completed != 3000 || p.Engine.OutputTokens != 3000 {
		t.Errorf("replicas %+v / %+v: the prefill replica should compute one token per request and hand all 3000 on", p, d)
	}

	// One request at a time: TTFT is the single replica's plus the
	// transfer and the decode replica's first step.
	one := func(cfg FleetConfig) []record.Request {
		cfg.Config = Config{Engine: ecfg, Gen: fixed{8000, 16}, Concurrency: 1, Requests: 20}
		recs, _ := collectFleet(t, cfg)
		return recs
	}
	single, split := one(FleetConfig{Count: 1}), one(FleetConfig{Prefill: 1, Decode: 1})
	transfer := time.Duration(DefaultKVLink.transferNS(ecfg.Model, 1, 8000))
	for i := range single {
		a, _ := single[i].TTFT()
		b, _ := split[i].TTFT()
		tpot, _ := single[i].TPOT()
		if d := b - a; d < transfer || d > transfer+2*tpot {
			t.Fatalf("request %d: TTFT %v split against %v on one replica: the difference %v should be the transfer %v plus about a decode step (%v)", i, b, a, d, transfer, tpot)
		}
		if i == 0 {
			t.Logf("8000-token prompt alone: TTFT %v on one replica, %v disaggregated (KV transfer %v, decode step %v)", a, b, transfer, tpot)
		}
		if p := split[i].ServerPhases; p.Queue+p.Prefill+p.Decode > split[i].Done-split[i].Sent || split[i].Replica != "p0/d0" {
			t.Fatalf("record %+v: phases exceed E2E or replica not named p0/d0", split[i])
		}
	}
}

// Session affinity keeps a trace's sessions on one replica each.
func TestSessionAffinityFollowsTraceSessions(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "{\"arrival_ms\": %d, \"input_tokens\": 300, \"output_tokens\": 8, \"session_id\": \"s%d\"}\n", i*20, i%7)
	}
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := workload.OpenTrace(path, workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.Stream(false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, res := collectFleet(t, FleetConfig{Config: Config{Engine: engineConfig(t, "h100", "llama-3.1-8b", 1), Gen: s, Arrivals: s, Requests: 300},
		Count: 4, Router: SessionAffinity})
	where := map[int64]string{}
	for _, r := range recs {
		where[r.ID%7] = where[r.ID%7] + "," + r.Replica
	}
	for k, v := range where {
		parts := strings.Split(strings.TrimPrefix(v, ","), ",")
		for _, p := range parts {
			if p != parts[0] {
				t.Fatalf("session s%d went to %s", k, v)
			}
		}
	}
	used := 0
	for _, r := range res.Replicas {
		if r.Routed > 0 {
			used++
		}
	}
	if used < 2 {
		t.Errorf("7 sessions all on one of 4 replicas: %+v", res.Replicas)
	}
}

// A fleet file gives a mixed fleet; least outstanding sends the slower
// replica fewer requests, round robin the same share.
func TestMixedFleetFile(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "fleet.yaml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := engineConfig(t, "h100", "llama-3.1-8b", 1)
	cat := simengine.NewCatalog()
	engines, err := LoadFleetFile(cat, write("replicas:\n  - {gpu: h100, count: 2}\n  - {gpu: a100-80gb, max_num_seqs: 128}\n"), base)
	if err != nil {
		t.Fatal(err)
	}
	if len(engines) != 3 || engines[2].GPU.Name != "A100-80GB" || engines[2].MaxNumSeqs != 128 || engines[0].GPU.Name != "H100-SXM" {
		t.Fatalf("engines %+v", engines)
	}
	routed := func(router string) []int64 {
		_, res := collectFleet(t, FleetConfig{Config: Config{Engine: base, Gen: fixed{1024, 256}, Arrivals: poisson(t, 30, 1), Requests: 3000},
			Replicas: engines, Router: router})
		return []int64{res.Replicas[0].Routed, res.Replicas[1].Routed, res.Replicas[2].Routed}
	}
	rr, lo := routed(RoundRobin), routed(LeastOutstanding)
	t.Logf("2× H100 + 1× A100 at 30 req/s: round robin routes %v, least outstanding %v", rr, lo)
	if rr[2] != 1000 || lo[2] >= lo[0]*3/4 {
		t.Errorf("round robin %v, least outstanding %v: want the A100 to get a third, then clearly less", rr, lo)
	}
	for _, bad := range []string{"replicas: []\n", "replicas:\n  - {gpu: tpu}\n", "replicas:\n  - {gpu: l4, tp: 1}\n", "gpus: [h100]\n", "replicas:\n  - {count: -1}\n"} {
		if _, err := LoadFleetFile(cat, write(bad), engineConfig(t, "h100", "llama-3.1-70b", 1)); err == nil {
			t.Errorf("%q: want an error", bad)
		} else {
			t.Logf("%q: %v", bad, err)
		}
	}
}

// BenchmarkFleetMillionRequests simulates a million requests on 16
// replicas of Llama-3.1-8B on H100 (1024 in / 256 out) behind least
// outstanding, at 200 req/s (about 75% of the fleet's capacity).
func BenchmarkFleetMillionRequests(b *testing.B) {
	ecfg := engineConfig(b, "h100", "llama-3.1-8b", 1)
	b.ReportAllocs()
	for range b.N {
		var completed int64
		res, err := RunFleet(context.Background(), FleetConfig{Config: Config{Engine: ecfg, Gen: fixed{1024, 256},
			Arrivals: arrivalsOf(b, "poisson", 200, 1, 1), Requests: 1_000_000}, Count: 16, Router: LeastOutstanding},
			func(r *record.Request) { completed++ })
		if err != nil {
			b.Fatal(err)
		}
		if completed != 1_000_000 {
			b.Fatalf("completed %d of 1e6", completed)
		}
		b.ReportMetric(float64(res.Steps), "steps")
		b.ReportMetric(res.End.Seconds(), "virtual-s")
	}
}
