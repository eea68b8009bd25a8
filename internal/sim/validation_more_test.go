package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/workload"
)

// More sources of the validation table (issue 28): three publishers' hosts
// and engine versions that no constant of knee was fitted on, added for
// leave-one-source-out. Every row runs knee's defaults (no host constants
// of its own), so the in-source table and the held-out one differ only by
// the defaults each runs under. Facts carried over are numbers and setups;
// every assumption is stated at its row.
//
// Sources:
//   - [gpustack-h200] github.com/gpustack/gpustack docs/performance-lab/deepseek-r1/h200.md
//     (the "Other Benchmark Cases" baseline and §1's vLLM run): GPUStack's
//     H200 machine (eight H200s; a host none of the other GPUStack sources
//     ran on), vLLM 0.11.0, `vllm serve deepseek-ai/DeepSeek-R1-0528 -tp 8`
//     (every other setting vLLM's default: FP8 weights as published, KV
//     cache BF16 ("auto"), max-model-len the model's 163,840, max-num-seqs
//     1024, max-num-batched-tokens 8192), vllm bench serve --backend
//     openai-chat. Rows: bursts (every prompt sent at once) of the random
//     dataset, seed 42: 500 of 2,000 in / 100 out, 500 of 4,000 / 200, 100
//     of 32,000 / 100 and 1,000 of 128 / 4, each run at the prompt lengths
//     the files report (total input tokens over requests: 1,997, 3,995,
//     31,999 and 127) and at its full output (the totals show every answer
//     ran to its limit); and ShareGPT at --max-concurrency 4, 100 prompts
//     (22,836 prompt and 21,338 output tokens: run at their means, 228 and
//     213, as the gpustack-h100 source's ShareGPT row is). Metrics: "Total
//     Token throughput" (prompt and answer tokens a second), mean TTFT and
//     mean TPOT of each burst; mean TTFT, mean TPOT and output tok/s of the
//     ShareGPT loop. Assumed: vLLM 0.11 schedules synchronously (async
//     scheduling became vLLM's default after it, vllm-project/vllm#27614;
//     the gpt-oss page below shows --async-scheduling as an opt-in for
//     0.10.2).
//   - [gpustack-h100-v0.10] github.com/gpustack/gpustack docs/performance-lab/gpt-oss-120b/h100.md:
//     GPUStack's H100 machine (the gpustack-h100 source's host, so this
//     source is not independent of that one in hardware; it is a source
//     of its own by engine version and model), vLLM 0.10.2, openai/gpt-oss-120b
//     (MoE, 128 experts, 4 a token; MXFP4 experts). Baseline: `vllm serve
//     openai/gpt-oss-120b --max-model-len 32768` on one H100, synchronous
//     scheduling (0.10.2's default: the page's §2 turns --async-scheduling
//     on as an optimisation); "optimized": `--async-scheduling -tp 2`
//     (max-model-len the model's 131,072). Rows: the same bursts as above,
//     run at the reported means (in 1,998, 3,998, 32,000 and 128; out
//     98, 134, 99 and 4: these answers end at EOS), and ShareGPT at
//     --max-concurrency 4 (100 prompts, 22,946 / 21,691 tokens: run at 229
//     / 217); at TP2 the ShareGPT loop and the 2,000-token burst (out 98).
//   - [systalyze-h200] github.com/systalyze/vllm-benchmarks (README.md;
//     configs/qwen3-32b/h200/baseline/row.json and launch.sh;
//     workload/build_workload.py): AWS p5en.48xlarge (eight H200 SXM, one
//     TP1 replica a GPU), vllm/vllm-openai:v0.27.1 (stock: the baseline's
//     launch line mounts none of the repository's patched files),
//     Qwen/Qwen3-32B BF16, `--max-model-len 12288
//     --no-enable-prefix-caching`, every other flag the default (BF16 KV
//     cache, async scheduling). Load: AIPerf 0.12.0, Poisson arrivals, 512
//     requests a rate after 16 warm-up requests, from the frozen workload
//     of 160 chat requests (sequential sampling; assumed to start over
//     once the 160 are used): prompt lengths
//     the inverse-CDF ladder of a lognormal with p50 3,500 and p90 10,000
//     (cap 11,200), answers one with p50 200 and p90 400 (cap 800), held
//     to length by ignore_eos (systalyzeLengths rebuilds both ladders; the
//     file's pairing of the two, a Python shuffle, is not reproduced, so
//     they are paired by a fixed scramble: independent, as in the file).
//     Row: the baseline's capacity, 343 output tok/s a GPU at its
//     throughput plateau (the README's capacity table), simulated as the
//     best of three Poisson runs at 1.0, 1.15 and 1.3 × the closed-loop
//     saturation rate the driver found (row.json lambda_sat 1.5034 req/s;
//     the driver steps the rate up by 0.1 × it until throughput stops
//     growing). Not used: the README's "per-user tok/s p50" (baseline 42,
//     best 182), read until 2026-12 as the median TPOT (1000/42 = 23.8 ms)
//     at the 1.290 req/s load point. The README names no load point for
//     that column, and its own figures rule that one out: at the load
//     point the best configuration's p50 ITL is 5.7× lower, while 182/42
//     is 4.3× (G7 Gemma 7.8× against 152/78 = 1.9×; G7 Qwen 8.0× against
//     99/31 = 3.2×), so the two per-user figures are not both at it; nor
//     does the README say whether they are 1 / ITL or tokens over the
//     whole request.
//
// Searched and not used (why), so that nobody searches them again:
//   - Vultr inference cookbook, B200 (docs.vultr.com/inference-cookbook): vLLM 0.12/0.16,
//     2048/512 sweeps, but only Nemotron Nano/Super, GLM-5, DeepSeek V3.2
//     and MiniMax M2.5: no knee preset but DeepSeek's, whose V3.2 sparse
//     attention knee does not model.
//   - NVIDIA NIM benchmarking page, Llama-3.1-8B (1.3.0, 1.8.0) and
//     Llama-3.1-70B (1.3.0) tables: the copies at hand lose the GPU,
//     precision and sequence-length headers of those tables.
//   - runinfra.ai vLLM/SGLang/TensorRT-LLM post (H100, L40S, Llama-3.1-8B):
//     the copy at hand gives headline figures without prompt and answer
//     lengths.
//   - FreedomIntelligence/AccelMark result files (SGLang 0.5.6 on
//     A100-40GB, ShareGPT): answers end at EOS and their lengths are not
//     in the request file (only the prompts' token counts).
//   - LambdaLabsML/vllm-benchmark results (vLLM 0.5/0.6, H100/A100, TP1-8):
//     V0 multi-step scheduling streams tokens ten at a time (ITL ~193 ms
//     at a ~20 ms TPOT, every TTFT equal), which knee does not model.
//   - tim-wang blog (vLLM 0.9 V0/V1 and SGLang 0.4.9, H100, evalscope):
//     prompt lengths given as a 5,000-10,000 range of evalscope's
//     min/max-prompt-length, characters or tokens depending on its version.
//   - ngkore docs (gpt-oss-20b/120b, Gemma-3, Qwen3-Omni): GPU not named;
//     TTFT ~0.5 s at one user on 256-token prompts points at a client or
//     network knee does not see.
//   - Jiten-Bhalavat/SGLang-vLLM-benchmarks: results only as screenshots.
//   - gpustack's SGLang and TensorRT-LLM runs on the same pages: each a
//     single 1,000-prompt ShareGPT burst (no fixed lengths), and SGLang's
//     gpt-oss run is 3.4x below vLLM's on the same GPU (an engine problem
//     knee's vLLM-default SGLang profile cannot predict).
//   - pavlokhmel.com (vLLM TP vs DP on 8x H100; RTX 4090/A100/H100/H200):
//     the copy at hand stops before its results.
//   - Azure HPC blog (Llama 3.1 8B, vLLM on ND-H100-v5 and other GPUs) and
//     Ori's BeFOri post (H100/A100): ShareGPT-based profiles, and the
//     copies at hand stop before the result tables.
//   - A DeepSeek-R1 FP8 TP8 guide on MI300X (rocm/vllm:latest, 128 users
//     of 3,200 / 800): engine version "latest", and the copy at hand does
//     not name its publisher.
//   - vllm-project/vllm issue 13412 (Llama-3.3-70B TP8 on H200): V0 with
//     --num-scheduler-steps 10 and chunked prefill off.
//   - systalyze's G7 and G7e rows (RTX PRO 4500 / 6000) and its Gemma-4 and
//     Nemotron rows: no knee preset for those GPUs or models.

// servedBurst is one vllm bench serve run of fixed lengths against vLLM's
// defaults (no host constants): users at a time (users = n: every request
// sent at once), n requests.
type servedBurst struct {
	source            string
	cfg               func(*testing.T) simengine.Config
	users, n, in, out int
	// totalTPS: the throughput published is total tok/s (prompt and
	// answer tokens a second), not output tok/s.
	totalTPS bool
}

func (b servedBurst) measure(t *testing.T) measured {
	t.Helper()
	r := meanRun(t, Config{Engine: b.cfg(t), Gen: fixed{b.in, b.out}, Concurrency: b.users, Requests: int64(b.n)}, b.out)
	if b.totalTPS {
		r.outputTPS *= float64(b.in+b.out) / float64(b.out)
	}
	return r
}

// rows is the run's published figures as rows sharing one simulated run.
func (b servedBurst) rows(name string, metrics ...burstMetric) []validationPoint {
	label := map[string]string{"throughput": "output tok/s", "ttft": "TTFT", "tpot": "TPOT"}
	if b.totalTPS {
		label["throughput"] = "total tok/s"
	}
	return sharedRunRows(name, b.source, label, b.measure, checkOnly(metrics))
}

// check is a check-only published figure (tol 0.30 unless its miss says
// why not).
func check(metric string, published float64) burstMetric {
	return burstMetric{metric: metric, published: published, tol: 0.30}
}

// missing is a check-only figure beyond 30%, with the bound that guards
// its error from growing and the reason.
func missing(metric string, published, tol float64, why string) burstMetric {
	return burstMetric{metric: metric, published: published, tol: tol, miss: why}
}

// Why the new sources' rows miss. No constant of knee was fitted on
// them; the tolerances only guard against the errors growing (each about
// a quarter above the in-source error it had when added).
const (
	missGPUStackHost      = "no host constants: this GPUStack machine runs its bursts well below knee's defaults (knee's total tok/s reads 2-3.2x the published and its mean TTFT a quarter to a half of it; its mean TPOT 0.35-0.5 of it on the H200 machine and in the H100 machine's TP2 burst, while the TP1 2,000- and 4,000-token bursts' TPOT are within 30%), as the gpustack-h100 source's machine does, whose fitted compute efficiency is 0.41 of the achievable matmul rate (hostConstants); knee's defaults carry none of that"
	missGPUStackAdmission = "the 128 / 4 bursts are admission-bound: each run (22.1 s for 1,000 requests on the H200 machine, 7.7 s on the H100 machine's gpt-oss) is ~22 and ~8 ms of serial front-end work a request, with the TTFTs bunched near the run's end (median 19.0 of 22.1 s), the shape the gpustack sources' host profiles fit (front_end_serial_ms and its split, 8.8-20 ms a request); the cost differs by host and model, so no one default carries it"
	missSmallBatchMoE     = "DeepSeek-R1 TP8 on H200s at 4 users decodes slower than knee predicts (19.4 ms a token published, 15.0 ms in this table; ~8 ms before knee priced block-scaled FP8 at half the FP8 rate): its output tok/s reads about a third high and its TTFT, which waits on the same steps, a quarter low; gpt-oss-120b at 4 users, the other small-batch mixture of experts here, is within 22% since its dense layers are read in BF16"
	missLongBurstTPOT     = "the 32,000-token burst's mean TPOT reads high: knee decodes those 100 requests in steps that also carry other requests' prefill chunks, where the published median ITL (7.3 ms around a mean of 25) says most of their decode steps carried none; not investigated further"
)

// morePoints are the rows of the sources above.
func morePoints() []validationPoint {
	pts := gpustackH200Points()
	pts = append(pts, gpustackGptOSSPoints()...)
	pts = append(pts, systalyzePoints()...)
	pts = append(pts, datacrunchPoints()...)
	pts = append(pts, lmsysSGLangPoints()...)
	pts = append(pts, wangrayingPoints()...)
	pts = append(pts, trtllmStaticPoints()...)
	pts = append(pts, gpustackSGLangPoints()...)
	pts = append(pts, trtllmV015Points()...)
	pts = append(pts, ree2razPoints()...)
	return append(pts, skypilotPoints()...)
}

// syncScheduling is a vLLM before async scheduling became its default.
func syncScheduling(c simengine.Config) simengine.Config {
	c.NoAsyncScheduling = true
	return c
}

func gpustackH200Points() []validationPoint {
	const src = "gpustack-h200"
	r1 := func(t *testing.T) simengine.Config { return syncScheduling(engineConfig(t, "h200", "deepseek-r1", 8)) }
	burst := func(n, in, out int) servedBurst {
		return servedBurst{source: src, cfg: r1, users: n, n: n, in: in, out: out, totalTPS: true}
	}
	var pts []validationPoint
	name := "DeepSeek-R1 TP8, H200, vLLM 0.11, "
	pts = append(pts, servedBurst{source: src, cfg: r1, users: 4, n: 100, in: 228, out: 213}.rows(name+"C=4, ShareGPT 228/213",
		missing("ttft", 123.30, 0.75, missSmallBatchMoE), missing("tpot", 19.36, 0.95, missSmallBatchMoE), missing("throughput", 196.81, 3.75, missSmallBatchMoE))...)
	pts = append(pts, burst(500, 1997, 100).rows(name+"500 at once, 2000/100",
		missing("throughput", 17690.89, 2.35, missGPUStackHost), missing("ttft", 28911.90, 0.90, missGPUStackHost), missing("tpot", 237.02, 0.80, missGPUStackHost))...)
	pts = append(pts, burst(500, 3995, 200).rows(name+"500 at once, 4000/200",
		missing("throughput", 15808.55, 2.00, missGPUStackHost), missing("ttft", 63058.71, 0.85, missGPUStackHost), missing("tpot", 164.23, 0.70, missGPUStackHost))...)
	pts = append(pts, burst(100, 31999, 100).rows(name+"100 at once, 32000/100",
		missing("throughput", 15514.57, 1.35, missGPUStackHost), missing("ttft", 101351.99, 0.65, missGPUStackHost), missing("tpot", 365.79, 0.65, missGPUStackHost))...)
	return append(pts, burst(1000, 127, 4).rows(name+"1000 at once, 128/4",
		missing("throughput", 5931.25, 12, missGPUStackAdmission), missing("ttft", 19392.11, 0.99, missGPUStackAdmission))...)
}

func gpustackGptOSSPoints() []validationPoint {
	const src = "gpustack-h100-v0.10"
	tp1 := func(t *testing.T) simengine.Config {
		c := syncScheduling(engineConfig(t, "h100", "gpt-oss-120b", 1))
		c.MaxModelLen = 32768
		return c
	}
	// --async-scheduling -tp 2: knee's default scheduling.
	tp2 := func(t *testing.T) simengine.Config { return engineConfig(t, "h100", "gpt-oss-120b", 2) }
	burst := func(n, in, out int) servedBurst {
		return servedBurst{source: src, cfg: tp1, users: n, n: n, in: in, out: out, totalTPS: true}
	}
	var pts []validationPoint
	name := "gpt-oss-120b, H100, vLLM 0.10.2, "
	pts = append(pts, servedBurst{source: src, cfg: tp1, users: 4, n: 100, in: 229, out: 217}.rows(name+"C=4, ShareGPT 229/217",
		check("ttft", 49.00), check("tpot", 8.31), check("throughput", 453.04))...)
	pts = append(pts, burst(500, 1998, 98).rows(name+"500 at once, 2000/100",
		missing("throughput", 14385.69, 2.75, missGPUStackHost), missing("ttft", 36234.76, 0.90, missGPUStackHost), check("tpot", 41.35))...)
	pts = append(pts, burst(500, 3998, 134).rows(name+"500 at once, 4000/200",
		missing("throughput", 14247.47, 2.25, missGPUStackHost), missing("ttft", 72954.68, 0.85, missGPUStackHost), check("tpot", 31.70))...)
	pts = append(pts, burst(100, 32000, 99).rows(name+"100 at once, 32000/100",
		missing("throughput", 16136.57, 1.60, missGPUStackHost), missing("ttft", 99444.04, 0.70, missGPUStackHost), missing("tpot", 23.99, 1.45, missLongBurstTPOT))...)
	pts = append(pts, burst(1000, 128, 4).rows(name+"1000 at once, 128/4",
		missing("throughput", 17059.15, 4.75, missGPUStackAdmission), missing("ttft", 4850.46, 0.99, missGPUStackAdmission))...)
	name = "gpt-oss-120b TP2, H100, vLLM 0.10.2 async, "
	pts = append(pts, servedBurst{source: src, cfg: tp2, users: 4, n: 100, in: 229, out: 217}.rows(name+"C=4, ShareGPT 229/217",
		check("ttft", 37.51), check("tpot", 5.75), check("throughput", 645.55))...)
	return append(pts, servedBurst{source: src, cfg: tp2, users: 500, n: 500, in: 1998, out: 98, totalTPS: true}.rows(name+"500 at once, 2000/100",
		missing("throughput", 34083.02, 2.65, missGPUStackHost), missing("ttft", 15291.77, 0.95, missGPUStackHost), missing("tpot", 139.32, 0.85, missGPUStackHost))...)
}

// systalyzeLengths is the systalyze workload's 160 (prompt, answer) pairs,
// request i taking pair i mod 160 (AIPerf's sequential sampling).
type systalyzeLengths struct{ in, out []int }

// newSystalyzeLengths rebuilds build_workload.py's ladders: the inverse
// CDF of a lognormal at quantiles (i+0.5)/160, capped, with the two order
// statistics that p50 and p90 read pinned to them.
func newSystalyzeLengths() systalyzeLengths {
	ladder := func(p50, p90 float64, limit, n int) []int {
		sigma := math.Log(p90/p50) / (math.Sqrt2 * math.Erfinv(2*0.9-1))
		v := make([]int, n)
		for i := range v {
			z := math.Sqrt2 * math.Erfinv(2*(float64(i)+0.5)/float64(n)-1)
			v[i] = max(1, min(limit, int(math.Round(math.Exp(math.Log(p50)+sigma*z)))))
		}
		for _, pin := range []struct{ q, target float64 }{{0.5, p50}, {0.9, p90}} {
			pos := pin.q * float64(n-1)
			v[int(math.Floor(pos))], v[int(math.Ceil(pos))] = int(math.Round(pin.target)), int(math.Round(pin.target))
		}
		return v
	}
	in, out := ladder(3500, 10000, 11200, 160), ladder(200, 400, 800, 160)
	// A fixed scramble of each ladder (97 and 67 are prime to 160):
	// neighbouring requests differ, and prompt and answer lengths are
	// independent.
	l := systalyzeLengths{in: make([]int, 160), out: make([]int, 160)}
	for i := range 160 {
		l.in[i], l.out[i] = in[i*97%160], out[i*67%160]
	}
	return l
}

func (l systalyzeLengths) Lengths(i int64) (int, int) {
	return l.in[i%160], l.out[i%160]
}

// systalyzeRun is one AIPerf run at rate (Poisson): 16 warm-up requests,
// then 512. Returns the output tokens a second over the run.
func systalyzeRun(t *testing.T, rate float64) (outputTPS float64) {
	t.Helper()
	cfg := engineConfig(t, "h200", "qwen3-32b", 1)
	cfg.MaxModelLen, cfg.NoPrefixCaching = 12288, true
	arr, err := workload.NewArrivals("poisson", rate, 1, 42)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Engine: cfg, Gen: newSystalyzeLengths(), Arrivals: arr, Requests: 512 + 16, WarmupRequests: 16}, nil)
	if err != nil || res.Tokens == 0 {
		t.Fatalf("simulated run: %v (%d tokens)", err, res.Tokens)
	}
	return float64(res.Tokens) / res.End.Seconds()
}

func systalyzePoints() []validationPoint {
	const lambdaSat = 1.5034211765815986 // row.json: the closed-loop saturation rate
	name := "Qwen3-32B, H200, vLLM 0.27.1, AIPerf Poisson, ISL p50 3500 / OSL p50 200"
	return []validationPoint{
		{name + ", plateau: output tok/s", "systalyze-h200", false, "throughput", 343, 0.30,
			func(t *testing.T) float64 {
				var best float64
				for _, f := range []float64{1.0, 1.15, 1.3} {
					best = max(best, systalyzeRun(t, f*lambdaSat))
				}
				return best
			}, ""},
	}
}

// TestSystalyzeLengths holds the rebuilt workload to what
// build_workload.py pins: p50 and p90 of each ladder, and its cap.
func TestSystalyzeLengths(t *testing.T) {
	l := newSystalyzeLengths()
	for _, c := range []struct {
		name          string
		v             []int
		p50, p90, cap int
	}{{"prompt", l.in, 3500, 10000, 11200}, {"answer", l.out, 200, 400, 800}} {
		s := make([]float64, len(c.v))
		for i, x := range c.v {
			s[i] = float64(x)
		}
		sort.Float64s(s)
		if got := quantileSorted(s, 0.5); got != float64(c.p50) {
			t.Errorf("%s p50 %v, want %d", c.name, got, c.p50)
		}
		if got := quantileSorted(s, 0.9); got != float64(c.p90) {
			t.Errorf("%s p90 %v, want %d", c.name, got, c.p90)
		}
		if s[len(s)-1] > float64(c.cap) || s[0] < 1 {
			t.Errorf("%s range %v-%v, want 1-%d", c.name, s[0], s[len(s)-1], c.cap)
		}
		var sum float64
		for _, x := range s {
			sum += x
		}
		t.Logf("%s: mean %.0f", c.name, sum/float64(len(s)))
	}

}

// SGLang sources (issue 28: the table had none). knee's "sglang" server
// profile runs vLLM's defaults, and these rows are scored with the same
// defaults (familySGLang is fitted with the vLLM family, no constant of
// its own). What knee can set from each source's launch line is set:
// --disable-radix-cache (no prefix cache), SGLang's static memory
// fraction (mem_frac 0.88 at TP1, 0.85 at TP4 unless given: the LMSYS
// README's notes), and whether the scheduler overlaps the CPU's work
// with the GPU's (SGLang's overlap scheduler, on by default from v0.4.0;
// the async scheduling of knee's vLLM). The "sglang" profile's scheduler
// (session 16): a prefill batch runs on its own, pausing decode (mixed
// chunks are opt-in), a request is admitted only when its whole prompt
// fits, and the running cap comes from the KV cache (simengine.Config's
// SeparatePrefill and RunningCapFromKV). Held out it moved the 27-source
// medians by under a point (TTFT 19.98 -> 20.17%, TPOT 9.54 -> 9.46%,
// throughput 9.65 -> 9.93%; every p90 unchanged); on these rows it fixed
// wangraying's ITL (+30% -> -2%) and SkyPilot's throughput (21% / 26% ->
// 15% / 24%) and lowered the TTFTs knee already read low (DataCrunch 13% /
// 36% -> 24% / 55% beside the cap alone). SGLang's prefill chunk is 8,192
// tokens by default (stated by the wangraying source, seen in the
// SkyPilot logs), and knee's batch budget is set to it (vLLM's default on
// the A100s would be 2,048).
//
// Sources:
//   - [datacrunch-h200-sglang] github.com/datacrunch-research/h200-benchmarks
//     (sglang/experiments/llama_3_3_70b_sglang.sh, docker_dev_commands.txt,
//     sglang/outputs/llama_3_3_70b_online_output.jsonl): DataCrunch's
//     4× H200 141GB, image lmsysorg/sglang:latest of December 2024 (Llama
//     3.3's release month; SGLang v0.4.x, overlap scheduler on: assumed
//     from the date, the file names no version), `sglang.launch_server
//     --model-path meta-llama/Llama-3.3-70B-Instruct --tp-size 4
//     --disable-radix-cache --enable-torch-compile` (BF16 weights and KV,
//     every other setting the default); `sglang.bench_serving --backend
//     sglang --dataset-name random --random-input 1024 --random-output
//     1024` at --request-rate 1, 2, 4, 8 and 16 (Poisson) with 300, 600,
//     1,200, 2,400 and 3,200 prompts. The random dataset's
//     --random-range-ratio was 0.0 (the jsonl's random_range_ratio): each
//     prompt's and each answer's length is uniform on 1..1,024 (the files'
//     totals: 152,612 / 160,347 tokens over 300 requests, means 509 / 534;
//     sglangUniformLengths draws its own uniform sample, seed fixed, and
//     TestSGLangUniformLengths holds its means to the files'), answers held
//     to length (bench_serving sends ignore_eos). Metrics per rate: median
//     TTFT, median ITL (every gap of every request, pooled) and output
//     tok/s over the run; the throughput is scored only at 8 and 16 req/s,
//     where the server fell behind the offered load (below that it equals
//     the offered load, which says nothing of the server). The ShareGPT
//     runs in the same file are not used (lengths not fixed).
//   - [lmsys-sglang-v0.3] github.com/sgl-project/sglang benchmark/benchmark_vllm_060/README.md
//     (LMSYS, SGLang v0.3.0 against vLLM 0.6.0, September 2024): SGLang
//     v0.3.0 (no overlap scheduler yet: synchronous), Llama-3.1-8B-Instruct
//     BF16 on one A100 80GB (`--enable-torch-compile --disable-radix-cache`,
//     mem_frac 0.88) and Llama-3.1-70B-Instruct BF16 on four H100 80GB
//     (`--disable-radix-cache --tp 4`, mem_frac 0.85 online, 0.88 given
//     for the offline run); `sglang.bench_serving --backend sglang
//     --dataset-name sharegpt` at --request-rate 4 (1,200 prompts) and 8
//     (2,400), Poisson; offline 5,000 prompts at once. Metrics: median TTFT
//     and median ITL of the online runs; request and output tok/s of the
//     offline runs. ShareGPT lengths: the sample is fixed by bench_serving's
//     seed (1): the same commands' totals, published by two other runs
//     (datacrunch's jsonl above and sgl-project/sglang issue 2097, both
//     Llama-3 tokenizers), are 269,081 / 226,901 tokens for 1,200 prompts
//     (means 224 / 189) and 540,779 / 461,874 for 2,400 (225 / 192); knee
//     runs each at its means, as the table's other ShareGPT rows. The
//     offline runs' output mean is the README's own ratio (4281.51 / 22.03
//     = 194 tokens; 3856.01 / 19.84 = 194); their prompt mean is assumed
//     the 2,400 sample's 225. The vLLM rows are not used (vLLM 0.6 with
//     --num-scheduler-steps 10: V0 multi-step, which knee does not model).
//   - [wangraying-a100-sglang] github.com/wangraying/sglang docs/benchmark/benchmark.md
//     (a contributor's fork, branch v0.3.5.post2-dev): SGLang v0.3.5.post2
//     (overlap scheduler opt-in then: synchronous), Llama-3.1-8B-Instruct
//     BF16 on one A100-SXM4-40GB, max total tokens 128K, chunked prefill
//     8,192, mixed running off, radix cache on (random prompts share no
//     prefix); the Random-2000 dataset (3,000 requests of 2,000 in / 200
//     out: 6,000,000 / 600,000 tokens) at request rate 16 (Poisson,
//     sglang.bench_serving), the FCFS row of its table: output tok/s,
//     mean TTFT and mean ITL (pooled). The 128K cap is read as 131,072
//     tokens and applied (kvCapped): at SGLang's mem_frac 0.88 knee's
//     cache would hold 151,232.
//   - [skypilot-h200-vllm-0.8] github.com/Michaelvll/llm-ie-benchmarks
//     (SkyPilot's engine benchmarks; README: the runs are on Nebius H200
//     machines): sgl/benchmark.yaml at commit decfb38 and
//     sgl/logs/vllm-deepseek-r1.log of that commit: eight H200s, vLLM 0.8.4
//     (V1; synchronous scheduling, async came later), `vllm serve
//     deepseek-ai/DeepSeek-R1 --tensor-parallel-size 8 --trust-remote-code
//     --no-enable-prefix-caching` (FP8 weights as published, KV cache
//     "auto"); `sglang.bench_serving --backend vllm --num-prompts 50
//     --request-rate 10 --dataset-name random --random-range-ratio 1` at
//     1,000 / 2,000, 5,000 / 1,000, 10,000 / 500 and 30,000 / 100 (the
//     log's totals: every prompt and answer at its length). Metrics per
//     run: median TTFT, median ITL (pooled) and output tok/s. Assumed:
//     vLLM 0.8.4's V1 batch defaults on an H200 are knee's (8,192 batched
//     tokens, 1,024 sequences; not checked in the copy at hand).
//   - [skypilot-h200-sglang-0.4.5] the same repository and machines:
//     sgl/benchmark.yaml and sgl/logs/sgl-0.4.5.post3-deepseek-r1.log and
//     -200.log (commit d709dba): SGLang 0.4.5.post3 (overlap scheduler on),
//     `sglang.launch_server --model deepseek-ai/DeepSeek-R1 --tp 8
//     --trust-remote-code` with SGL_ENABLE_JIT_DEEPGEMM=1; the same four
//     length pairs with --backend sglang-oai at --request-rate 10, 50 and
//     200 prompts, each run three times; the table the script prints (the
//     third run's output tok/s) is scored. SGLang sized its KV pool itself:
//     its log reads "#token: 630651, token usage: 0.96" and "#token:
//     631491, token usage: 0.97" (50 prompts) and "#token: 330462, token
//     usage: 0.51" (200), which the rounding of the usage pins to about
//     654,000 tokens; knee's cache is held to that (kvCapped), where its
//     mem_frac default for TP8 (0.81, assumed from the ladder the LMSYS
//     notes show) would give knee 512,304. This source shares its host
//     with the one above (two sources by engine, not independent in
//     hardware).
//
// Searched for this pass and not used (why):
//   - sgl-project/sglang issues 9585 and 12389 (bench_serving JSON of
//     4,000 / 1,000 at concurrency 1 and 32): prefill-decode
//     disaggregation over Mooncake, model and GPUs not stated.
//   - sgl-project/sglang issue 8285 (1,024 / 1,024 at concurrency 330):
//     model, GPU and version not stated; its TTFT varied 2.5-47.6 s over
//     five identical runs.
//   - sgl-project/sglang issue 1639 (SGLang vs vLLM 0.6.3, 2,000 ShareGPT
//     prompts at once): GPU and model stated only upthread, outside the
//     copy at hand.
//   - codeintel.xyz, morphllm.com, cloudai.pt, iotdigitaltwinplm.com:
//     secondary pages restating others' figures or "illustrative" numbers.
//   - runinfra.ai (vLLM 0.23, SGLang 0.5.13, TensorRT-LLM 1.2.1; H100 and
//     L40S): the harness repository it names is not in the index
//     searched; the page alone gives no prompt and answer lengths.
//   - llm-bench.rituraj.info (vLLM 0.8.5 / SGLang 0.4.6 on an L4,
//     Qwen2.5-7B): SGLang with --disable-cuda-graph and prompts "≤256" /
//     "≤2048" without their distribution.
//   - hungchun0201.github.io agentic-ai-survey week 1 (vLLM / SGLang on
//     H100 and L40S): a course's instructions; the results it names are
//     not in the copy at hand.
//   - ctechfilmuniversity project_kaspar (vLLM / SGLang on an RTX 4090):
//     a German ShareGPT set with no lengths, WSL host.
//   - tim-wang blog's SGLang 0.4.9 column: rejected above for its
//     prompt-length range.
//   - Michaelvll/llm-ie-benchmarks issue 3 and README tables (vLLM 0.8.4
//     1,042 / 795 / 436 / 38 tok/s): a rerun whose logs are not in the
//     repository; the logs above are used instead. Its vllm/ directory
//     (the vLLM team's own runs) was not examined in this pass.
//   - tenstorrent/tt-inference-server release reports: Tenstorrent
//     hardware; the one GPU reference table found (4× H100) is for
//     Llama-3.2-90B-Vision, which knee has no preset for.
//   - kubeai-project/kubeai PR 341 (Llama-3.3-70B on a GH200): the PR text
//     gives the result block without the request rate or server flags.
//   - evokernel-specs.pages.dev cases: "synthesized from public vLLM
//     benchmark threads", not measurements.
//   - dennislee22/vLLM-benchmarking (A100 80GB, Qwen2 7B-72B, memory
//     fraction varied): not examined in this pass.

// sglangConfig is an SGLang server as knee runs it: vLLM's defaults with
// SGLang's memory fraction and prefill chunk, no prefix cache
// (--disable-radix-cache), and synchronous steps before SGLang's overlap
// scheduler, and the "sglang" server profile's scheduling.
func sglangConfig(t *testing.T, gpu, model string, tp int, memFrac float64, overlap bool) simengine.Config {
	t.Helper()
	c := engineConfig(t, gpu, model, tp)
	c.GPUMemoryUtilization = memFrac
	c.MaxNumBatchedTokens = max(c.MaxNumBatchedTokens, profileNamed("sglang").MinBatchedTokens) // SGLang's chunked prefill size
	c.NoPrefixCaching = true
	c.NoAsyncScheduling = !overlap
	// SGLang's memory plan, in prediction too (no vLLM start-up sampler run),
	// and its scheduler (the "sglang" profile: separate prefill batches,
	// whole-prompt admission, the running cap from the KV cache).
	c.NoSamplerWarmup = !profileNamed("sglang").SamplerWarmup()
	c.SeparatePrefill = profileNamed("sglang").SeparatePrefill
	c.RunningCapFromKV = profileNamed("sglang").RunningCapFromKV
	return c
}

// sglangUniformLengths is bench_serving's random dataset at
// --random-range-ratio 0: prompt and answer lengths each uniform on
// 1..max, independent, drawn once from a fixed seed (numpy's own draw is
// not reproduced; only its distribution is).
type sglangUniformLengths struct{ in, out []int }

func newSGLangUniformLengths(n, maxIn, maxOut int) sglangUniformLengths {
	r := rand.New(rand.NewPCG(1, uint64(n)))
	l := sglangUniformLengths{in: make([]int, n), out: make([]int, n)}
	for i := range n {
		l.in[i], l.out[i] = 1+r.IntN(maxIn), 1+r.IntN(maxOut)
	}
	return l
}

func (l sglangUniformLengths) Lengths(i int64) (int, int) {
	return l.in[i%int64(len(l.in))], l.out[i%int64(len(l.out))]
}

// sglangBench is one sglang.bench_serving run: n requests of gen at a
// Poisson rate, or all at once when rate is 0 (--request-rate inf).
// means: the source publishes means (TTFT and pooled ITL), not medians.
type sglangBench struct {
	source string
	cfg    func(*testing.T) simengine.Config
	rate   float64
	n      int
	gen    Lengths
	means  bool
}

// measure returns the run's TTFT (median or mean over requests), ITL
// (median or mean of every gap of every request, pooled, as bench_serving
// counts them; in the TPOT slot) and output tokens a second over the run.
// The gaps come grouped from the engine (Config.OnGaps), not per token:
// leave-one-source-out runs each of these rows 80 times.
func (b sglangBench) measure(t *testing.T) measured {
	t.Helper()
	n := b.n
	if b.rate == 0 {
		n = predictionRequests(n)
	}
	c := Config{Engine: b.cfg(t), Gen: b.gen, Requests: int64(n)}
	if b.rate > 0 {
		arr, err := workload.NewArrivals("poisson", b.rate, 1, 42)
		if err != nil {
			t.Fatal(err)
		}
		c.Arrivals = arr
	} else {
		c.Concurrency = n
	}
	var gaps []gapCount
	c.OnGaps = func(g time.Duration, k int) { gaps = append(gaps, gapCount{float64(g) / 1e6, k}) }
	var ttft []float64
	res, err := Run(context.Background(), c, func(r *record.Request) {
		if r.Error == "" {
			ttft = append(ttft, float64(r.FirstToken-r.Sent)/1e6)
		}
	})
	if err != nil || len(ttft) == 0 || len(gaps) == 0 {
		t.Fatalf("simulated run: %v (%d records)", err, len(ttft))
	}
	m := measured{outputTPS: float64(res.Tokens) / res.End.Seconds()}
	if b.means {
		m.ttftMS, m.tpotMS = mean(ttft), meanGap(gaps)
	} else {
		m.ttftMS, m.tpotMS = quantile(ttft, 0.5), medianGap(gaps)
	}
	return m
}

// gapCount is count inter-token gaps of ms each.
type gapCount struct {
	ms    float64
	count int
}

func meanGap(g []gapCount) float64 {
	var s float64
	var n int
	for _, x := range g {
		s, n = s+x.ms*float64(x.count), n+x.count
	}
	return s / float64(n)
}

// medianGap is the lower median of the gaps, each counted count times.
func medianGap(g []gapCount) float64 {
	g = slices.Clone(g)
	slices.SortFunc(g, func(a, b gapCount) int { return cmp.Compare(a.ms, b.ms) })
	var n int
	for _, x := range g {
		n += x.count
	}
	var seen int
	for _, x := range g {
		if seen += x.count; 2*seen >= n {
			return x.ms
		}
	}
	return math.NaN()
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// rows is the run's published figures as rows sharing one simulated run.
func (b sglangBench) rows(name string, metrics ...burstMetric) []validationPoint {
	stat := "median "
	if b.means {
		stat = "mean "
	}
	label := map[string]string{"throughput": "output tok/s", "ttft": stat + "TTFT", "tpot": stat + "ITL"}
	return sharedRunRows(name, b.source, label, b.measure, checkOnly(metrics))
}

// checkOnly is metrics with none of them a fit: the rows of these sources
// are all checks.
func checkOnly(metrics []burstMetric) []burstMetric {
	out := make([]burstMetric, len(metrics))
	for i, m := range metrics {
		m.fit = false
		out[i] = m
	}
	return out
}

// Why the SGLang rows miss in the in-source table, which runs the
// defaults knee shipped before the leave-one-source-out refit
// (legacyDefaultCost); every figure here is knee's error on that row
// (TestValidationTable) and, where stated, held out
// (TestLeaveOneSourceOut, with the defaults fitted on the other sources).
// No constant was fitted on these rows; the tolerances only guard
// against the errors growing (each about a quarter above the error the
// row had when added).
const (
	missSGLangLowLoadTTFT = "at 1-8 req/s the published median TTFT (86-106 ms on DataCrunch's H200s below saturation, 54-58 ms on LMSYS's H100s) is where knee's reads 33-41% low under the pre-refit defaults, whose front end is shorter; held out, with the refit's front end (7.3-14 ms), the same rows read -17% to -2%"
	missSGLangLoadITL     = "the published median ITL rises with load (DataCrunch's H200s: 13.6, 14.8, 19.4, 70.8 and 179 ms at 1, 2, 4, 8 and 16 req/s) where knee's barely does (11.6, 11.8, 12.3, 13.5 and 52 ms in-source; 13.2 to 15.7 ms held out up to 8 req/s): the TPOT that barely rises with load of issue 28. knee runs SGLang's separate prefill batches (the sglang profile), but a median gap is a decode step's, and at 8 req/s knee's prefill batches pause too few of them to move it; the median TTFT at 8 and 16 req/s follows the same steps"
	missSGLangCapacity    = "at saturation the pre-refit defaults put these servers' capacity 1.6-2x above the published (DataCrunch at 16 req/s +70%, LMSYS's 5,000 prompts at once +64% on the 8B, +99% on the 70B TP4); held out, under the refit's defaults, the same rows read +9% to +35%"
)

// datacrunchRates are the DataCrunch runs: rate (req/s), prompts, median
// TTFT (ms), median ITL (ms), output tok/s, the files' prompt and answer
// token totals, and each row's bound and reason where it misses.
var datacrunchRates = []struct {
	rate              float64
	n                 int
	ttft, itl, tps    float64
	totalIn, totalOut int
	ttftTol, itlTol   float64
	ttftMiss, itlMiss string
	tpsTol            float64
	tpsMiss           string
}{
	{1, 300, 85.745, 13.639, 537.41, 152612, 160347, 0.45, 0.30, missSGLangLowLoadTTFT, "", 0.30, ""},
	{2, 600, 87.556, 14.830, 987.31, 308748, 308712, 0.42, 0.30, missSGLangLowLoadTTFT, "", 0.30, ""},
	{4, 1200, 106.063, 19.420, 2047.91, 615860, 607936, 0.52, 0.47, missSGLangLowLoadTTFT, missSGLangLoadITL, 0.30, ""},
	{8, 2400, 191.412, 70.763, 3515.02, 1222995, 1218922, 0.80, 0.95, missSGLangLoadITL, missSGLangLoadITL, 0.30, ""},
	{16, 3200, 614.250, 179.121, 4288.05, 1629242, 1642637, 0.88, 0.94, missSGLangLoadITL, missSGLangLoadITL, 0.88, missSGLangCapacity},
}

func datacrunchPoints() []validationPoint {
	const src = "datacrunch-h200-sglang"
	cfg := func(t *testing.T) simengine.Config { return sglangConfig(t, "h200", "llama-3.3-70b", 4, 0.85, true) }
	var pts []validationPoint
	for _, r := range datacrunchRates {
		b := sglangBench{source: src, cfg: cfg, rate: r.rate, n: r.n, gen: newSGLangUniformLengths(r.n, 1024, 1024)}
		name := fmt.Sprintf("Llama-3.3-70B TP4, H200, SGLang (Dec 2024), random 1..1024 / 1..1024, %g req/s", r.rate)
		ms := []burstMetric{
			{metric: "ttft", published: r.ttft, tol: r.ttftTol, miss: r.ttftMiss},
			{metric: "tpot", published: r.itl, tol: r.itlTol, miss: r.itlMiss},
		}
		if r.rate >= 8 {
			ms = append(ms, burstMetric{metric: "throughput", published: r.tps, tol: r.tpsTol, miss: r.tpsMiss})
		}
		pts = append(pts, b.rows(name, ms...)...)
	}
	return pts
}

func lmsysSGLangPoints() []validationPoint {
	const src = "lmsys-sglang-v0.3"
	llama8 := func(t *testing.T) simengine.Config {
		return sglangConfig(t, "a100-80gb", "llama-3.1-8b", 1, 0.88, false)
	}
	llama70 := func(t *testing.T) simengine.Config { return sglangConfig(t, "h100", "llama-3.1-70b", 4, 0.85, false) }
	llama70Offline := func(t *testing.T) simengine.Config { return sglangConfig(t, "h100", "llama-3.1-70b", 4, 0.88, false) }
	share1200, share2400, shareOffline := fixed{224, 189}, fixed{225, 192}, fixed{225, 194}
	var pts []validationPoint
	n8 := "Llama-3.1-8B, A100 80GB, SGLang v0.3.0, ShareGPT "
	pts = append(pts, sglangBench{source: src, cfg: llama8, rate: 4, n: 1200, gen: share1200}.rows(n8+"224/189, 4 req/s",
		check("ttft", 31.98), check("tpot", 11.93))...)
	pts = append(pts, sglangBench{source: src, cfg: llama8, rate: 8, n: 2400, gen: share2400}.rows(n8+"225/192, 8 req/s",
		check("ttft", 35.68), check("tpot", 14.41))...)
	pts = append(pts, sglangBench{source: src, cfg: llama8, n: 5000, gen: shareOffline}.rows(n8+"225/194, 5000 at once",
		missing("throughput", 4281.51, 0.80, missSGLangCapacity))...)
	n70 := "Llama-3.1-70B TP4, H100, SGLang v0.3.0, ShareGPT "
	pts = append(pts, sglangBench{source: src, cfg: llama70, rate: 4, n: 1200, gen: share1200}.rows(n70+"224/189, 4 req/s",
		missing("ttft", 53.94, 0.45, missSGLangLowLoadTTFT), check("tpot", 21.67))...)
	pts = append(pts, sglangBench{source: src, cfg: llama70, rate: 8, n: 2400, gen: share2400}.rows(n70+"225/192, 8 req/s",
		missing("ttft", 58.11, 0.49, missSGLangLowLoadTTFT), missing("tpot", 24.45, 0.43, missSGLangLoadITL))...)
	return append(pts, sglangBench{source: src, cfg: llama70Offline, n: 5000, gen: shareOffline}.rows(n70+"225/194, 5000 at once",
		missing("throughput", 3856.01, 1.25, missSGLangCapacity))...)
}

// kvCapped lowers c's memory fraction until its KV cache holds at most
// tokens: SGLang's --max-total-tokens, which caps the cache below what its
// memory fraction would give (knee has no such flag; the memory the cap
// leaves unused is what lowering the fraction leaves).
func kvCapped(t *testing.T, c simengine.Config, tokens int) simengine.Config {
	t.Helper()
	if c.GPUMemoryUtilization == 0 {
		c.GPUMemoryUtilization = 0.9 // knee's default
	}
	for ; c.GPUMemoryUtilization > 0.3; c.GPUMemoryUtilization -= 0.001 {
		e, err := simengine.NewEngine(c)
		if err != nil {
			t.Fatal(err)
		}
		if e.Stats().KVBlocksTotal*simengine.BlockTokens <= tokens {
			return c
		}
	}
	t.Fatalf("no memory fraction above 0.3 holds the KV cache to %d tokens", tokens)
	return c
}

func wangrayingPoints() []validationPoint {
	cfg := func(t *testing.T) simengine.Config {
		return sglangConfig(t, "a100-40gb", "llama-3.1-8b", 1, 0.88, false)
	}
	return sglangBench{source: "wangraying-a100-sglang", cfg: cfg, rate: 16, n: 3000, gen: fixed{2000, 200}, means: true}.rows(
		"Llama-3.1-8B, A100-40GB, SGLang v0.3.5, Random-2000 (2000/200), 16 req/s",
		check("throughput", 842.9), check("ttft", 254763.2), check("tpot", 60.4))
}

// skypilotLengths are the SkyPilot runs' prompt and answer lengths.
var skypilotLengths = [4][2]int{{1000, 2000}, {5000, 1000}, {10000, 500}, {30000, 100}}

// skypilotVLLM is the vLLM 0.8.4 log's median TTFT, median ITL (ms) and
// output tok/s, by skypilotLengths, each with its row's bound.
var skypilotVLLM = [4][3]struct{ published, tol float64 }{
	{{314.12, 0.99}, {45.14, 0.55}, {1052.20, 0.92}},
	{{5924.34, 0.99}, {47.88, 0.51}, {799.60, 1.09}},
	{{14881.48, 0.99}, {51.01, 0.45}, {436.70, 1.52}},
	{{63173.23, 0.83}, {495.43, 0.76}, {37.82, 2.06}},
}

// skypilotSGLang is the SGLang 0.4.5.post3 tables' output tok/s, 50 and
// 200 prompts, by skypilotLengths, each with its row's bound.
var skypilotSGLang = [4][2]struct{ published, tol float64 }{
	{{1329.14, 0.47}, {3276.05, 0.58}},
	{{951.64, 0.72}, {1322.31, 0.91}},
	{{479.69, 1.27}, {501.95, 0.95}},
	{{47.38, 1.25}, {47.68, 1.26}},
}

// missDeepSeekH200 is why every SkyPilot row misses (in-source errors).
const missDeepSeekH200 = "DeepSeek-R1 at TP8 on these H200s prefills at about half knee's rate on both engines: the 30,000-token runs (1.5M prompt tokens in the SGLang run's 105 s, ~14,000 tok/s; vLLM's median TTFT 63 s against knee's 27 s) read +52% to +114% on output tok/s, and the vLLM runs' median TTFTs are 0.13-0.42x the published; with 50 in flight knee's median ITL is within 8% of the published 45-51 ms since it prices block-scaled FP8 at half the FP8 rate (25-33 ms before). MLA's prefill (knee prices it as ordinary attention of 128 heads of 192) and the FP8 kernels at these batches are not what knee's roofline assumes (not investigated further)"

func skypilotPoints() []validationPoint {
	vllm := func(t *testing.T) simengine.Config {
		c := engineConfig(t, "h200", "deepseek-r1", 8)
		c.NoPrefixCaching, c.NoAsyncScheduling = true, true
		return c
	}
	sgl := func(t *testing.T) simengine.Config {
		// The pool the log shows, from knee's default fraction down.
		return kvCapped(t, sglangConfig(t, "h200", "deepseek-r1", 8, 0.9, true), 654000)
	}
	var pts []validationPoint
	for i, l := range skypilotLengths {
		v := skypilotVLLM[i]
		name := fmt.Sprintf("DeepSeek-R1 TP8, H200, vLLM 0.8.4, 50 of %d / %d at 10 req/s", l[0], l[1])
		pts = append(pts, sglangBench{source: "skypilot-h200-vllm-0.8", cfg: vllm, rate: 10, n: 50, gen: fixed{l[0], l[1]}}.rows(name,
			missing("ttft", v[0].published, v[0].tol, missDeepSeekH200),
			missing("tpot", v[1].published, v[1].tol, missDeepSeekH200),
			missing("throughput", v[2].published, v[2].tol, missDeepSeekH200))...)
		for j, n := range []int{50, 200} {
			name := fmt.Sprintf("DeepSeek-R1 TP8, H200, SGLang 0.4.5, %d of %d / %d at 10 req/s", n, l[0], l[1])
			pts = append(pts, sglangBench{source: "skypilot-h200-sglang-0.4.5", cfg: sgl, rate: 10, n: n, gen: fixed{l[0], l[1]}}.rows(name,
				missing("throughput", skypilotSGLang[i][j].published, skypilotSGLang[i][j].tol, missDeepSeekH200))...)
		}
	}
	return pts
}

// TestSGLangUniformLengths holds the uniform lengths of the DataCrunch
// rows to the files' totals: each mean within 6% of the published one
// (the standard error of a mean of 300 uniform draws on 1..1024 is 3.4%).
func TestSGLangUniformLengths(t *testing.T) {
	for _, r := range datacrunchRates {
		l := newSGLangUniformLengths(r.n, 1024, 1024)
		var in, out int
		for i := range r.n {
			a, b := l.Lengths(int64(i))
			if a < 1 || a > 1024 || b < 1 || b > 1024 {
				t.Fatalf("rate %g: lengths %d / %d outside 1..1024", r.rate, a, b)
			}
			in, out = in+a, out+b
		}
		for _, c := range []struct {
			name      string
			got, want int
		}{{"prompt", in, r.totalIn}, {"answer", out, r.totalOut}} {
			if rel := float64(c.got-c.want) / float64(c.want); math.Abs(rel) > 0.06 {
				t.Errorf("rate %g: %s tokens %d, published %d (%+.1f%%)", r.rate, c.name, c.got, c.want, rel*100)
			}
		}
	}
}

// TensorRT-LLM's static-batch performance page (issue 28: the table had
// no L40S). Source: github.com/NVIDIA/TensorRT-LLM docs/source/performance.md
// (commit 138f96d; the page of the v0.6.1 era, before perf-overview.md):
// NVIDIA's own machines, Llama-2-7B ("LLaMA 7B"; the page's build notes
// name Llama2-7b and Llama2-70b) and Llama-2-70B, engines built with
// --enable_fp8 --fp8_kv_cache on H100 and L40S (FP8 weights and KV
// cache) and without them on A100 (FP16 weights and KV), run by
// gptSessionBenchmark: one static batch of fixed lengths (batch size,
// input and output length as each row says), warm-up 1, five runs; the
// throughput is output tokens a second over the batch's latency. Five
// sources by host and engine version:
//   - [trtllm-v0.5-l40s] the L40S tables, "from TensorRT-LLM v0.5":
//     throughput of Llama-2-7B FP8 at TP1 (batch 64 of 128/128 and
//     128/2048, 32 of 2048/128, 16 of 2048/2048) and first-token latency
//     at batch 1 (128 and 2048 tokens in).
//   - [trtllm-v0.6-h100] the H100 (FP8) throughput table, v0.6.1:
//     Llama-2-7B at TP1, Llama-2-70B at TP2 (and TP4 for 128/2048), in
//     output tok/s a GPU (the header says so in every copy of the page).
//   - [trtllm-v0.6-a100] the A100 (FP16) throughput table, v0.6.1,
//     Llama-2-7B at TP1 only: the copies of the page disagree on whether
//     this table is per GPU (commit 138f96d heads it "out tok/s", a later
//     copy "out tok/s/GPU"), which matters only at TP2 and TP4, so those
//     rows (7B TP2, 70B TP4) are left out. Assumed: the A100 80GB SXM
//     (the page says "A100").
//   - [trtllm-v0.5-h100] and [trtllm-v0.5-a100] the first-token latency
//     tables ("from TensorRT-LLM v0.5"): batch 1, 128 and 2048 tokens in,
//     Llama-2-7B at TP1 and Llama-2-70B at TP4 (H100 FP8, A100 FP16). The
//     figures are whole ms: 7 ms is ±7% of rounding. The page does not
//     say whether the v0.5 and v0.6.1 figures of one GPU came from the
//     same machine; if they did, those two sources are one host in
//     hardware (sources by engine version, as gpustack-h100-v0.10 is).
//
// Every row runs as an offline batch (offlineBatch: no API server) with
// the TensorRT-LLM profile's scheduling (tensorRTLLM: no chunked context)
// and knee's defaults, its memory fraction 0.9 (the engines' own KV sizing
// is not published). knee batches in flight where gptSessionBenchmark
// runs one static batch (every prompt's context, then every answer's
// steps in lockstep); with identical requests sent at once the two do
// the same work in about the same steps. The GPT-J and Falcon rows are
// not used (no knee preset).
//
// Searched for this pass (issue 28's L40S and PCIe multi-GPU gap) and not
// used (why):
//   - vllm-project/vllm PR 16780 (eight L40S, vLLM, DeepSeek-R1 at TP8):
//     a GGUF IQ1_S checkpoint, a quantization knee has no model of.
//   - NIM "Test Inference Results" tables (Llama-3-8B FP16 on one and two
//     A10G, 200/114 at concurrency 1-2048): the copy at hand names no
//     publisher or repository, nor the load tool or what its
//     "Token-per-second" counts.
//   - databasemart.com vLLM GPU benchmarks (A40, 100 in / 600 out at 50
//     and 100 requests): no knee preset for the A40, answers end at EOS;
//     pages for other GPUs were not in the index searched.
//   - InferenceMAX (vLLM Llama-3.1-70B FP8 on H200 at TP1-8, concurrency
//     4-64): its results live in CI artifacts, not in the repositories
//     indexed, and max-num-seqs follows the concurrency of each run.
//   - devfloor9 engineering-playbook (Llama 4 on g6e L40S and others) and
//     ai-hpc.github.io's L40S x12 pages: "projected values" and targets,
//     not measurements.
//   - e2enetworks A30/V100 report: no knee preset for either GPU.
//   - vllm-project/vllm issue 16515 (L4, Llama-3.1-8B FP8,
//     inference-benchmarker at 1, 5 and 10 req/s): the result table is not
//     in the copy at hand.
//   - gpustack's quantization page (Qwen3-8B on RTX 4090 / A100 / H100,
//     vLLM 0.9.2): ShareGPT bursts of 1,000 with answers ending at EOS and
//     no token totals.
//   - a Llama-3.2-11B-Vision L4 benchmark_serving log: no knee preset.
//   - vllm-project/vllm issue 16515 (RTX 5090 and L4, Llama-3.1-8B FP16
//     and FP8 at 1-100 req/s): the raw data is an attached file, not in
//     the thread.
//   - dennislee22/vLLM-benchmarking (Qwen2 7B-72B, A100): TP run through
//     Ray across Kubernetes pods (even "on the same node"), the logs name
//     an A100 40GB where the text says 80GB, and the random prompts hit
//     the prefix cache ~50%.
//   - an "L4 Inference Benchmark Lab" (Mistral-7B on one L4, vLLM
//     0.10.1, 4 users): prompts in S/M/L buckets without their
//     distribution, answers ending at EOS, streaming and non-streaming
//     requests mixed.
//   - vllm-project/vllm issue 1435's later benchmark turns (500/500 at
//     constant RPS): GPU and server flags not in the copy at hand.
type trtllmStatic struct {
	source, gpu, model string
	tp                 int
	fp8                bool
	batch, in, out     int
}

func (s trtllmStatic) name() string {
	prec := "FP16"
	if s.fp8 {
		prec = "FP8"
	}
	return fmt.Sprintf("%s %s TP%d, %s, TensorRT-LLM %s, batch %d of %d/%d", s.model, prec, s.tp, s.gpu, trtllmVersion[s.source], s.batch, s.in, s.out)
}

var trtllmVersion = map[string]string{"trtllm-v0.5-l40s": "v0.5", "trtllm-v0.6-h100": "v0.6.1", "trtllm-v0.6-a100": "v0.6.1", "trtllm-v0.5-h100": "v0.5", "trtllm-v0.5-a100": "v0.5"}

func (s trtllmStatic) run(t *testing.T) measured {
	t.Helper()
	cfg := tensorRTLLM(t, s.gpu, strings.ToLower(s.model), s.tp, s.in+s.out)
	if s.fp8 {
		cfg.Model.WeightPrecision, cfg.Model.KVPrecision = "fp8", "fp8"
	}
	return offlineBatch(t, cfg, s.batch, s.in, s.out)
}

// throughput is a row of output tok/s (a GPU when perGPU).
func (s trtllmStatic) throughput(published, tol float64, perGPU bool, miss string) validationPoint {
	label := "output tok/s"
	if perGPU {
		label += " a GPU"
	}
	return validationPoint{s.name() + ": " + label, s.source, false, "throughput", published, tol,
		func(t *testing.T) float64 {
			tps := s.run(t).outputTPS
			if perGPU {
				tps /= float64(s.tp)
			}
			return tps
		}, miss}
}

// firstToken is a row of batch-1 first-token latency (in tokens in, one
// out).
func firstToken(source, gpu, model string, tp int, fp8 bool, in int, published, tol float64, miss string) validationPoint {
	s := trtllmStatic{source: source, gpu: gpu, model: model, tp: tp, fp8: fp8, batch: 1, in: in, out: 1}
	return validationPoint{s.name() + ": first-token latency", source, false, "ttft", published, tol,
		func(t *testing.T) float64 { return s.run(t).ttftMS }, miss}
}

// Why static-batch rows miss (in-source errors, under the TensorRT-LLM
// profile; the tolerances only guard against the errors growing, each
// about a quarter above the error the row had when added). Not tuned,
// not investigated further.
const (
	missTRTLLM70BLongDecode = "Llama-2-70B's 2,048-token answers decode at about half the rate knee predicts (TP2, batch 64: ~58 ms a step published, ~29 ms in knee; TP4, batch 480: 1,486 tok/s a GPU against ~3,400) while the same engine's 128-token answers and Llama-2-7B's 2,048-token answers are within 22%; Llama-2-70B is the one model here with grouped-query attention, whose TensorRT-LLM kernel (XQA) the page calls experimental and off by default then: assumed, not verified, that its attention read the KV cache once per query head"
	missTRTLLMShortContext  = "a 128-token prompt's first token at batch 1 on Llama-2-70B TP4 takes 26 ms (H100) and 47 ms (A100) published, where knee's one step (the weights' read, T0, one all-reduce a layer) is 13 and 29 ms; the 2,048-token first tokens are within 12%: a fixed cost of the v0.5 context step at TP4 that knee's defaults (fitted on engines with CUDA graphs) do not carry"
)

func trtllmStaticPoints() []validationPoint {
	const l40s, h100, a100 = "trtllm-v0.5-l40s", "trtllm-v0.6-h100", "trtllm-v0.6-a100"
	b7 := func(src, gpu string, fp8 bool, batch, in, out int) trtllmStatic {
		return trtllmStatic{source: src, gpu: gpu, model: "Llama-2-7B", tp: 1, fp8: fp8, batch: batch, in: in, out: out}
	}
	b70 := func(tp, batch, in, out int) trtllmStatic {
		return trtllmStatic{source: h100, gpu: "h100", model: "Llama-2-70B", tp: tp, fp8: true, batch: batch, in: in, out: out}
	}
	return []validationPoint{
		b7(l40s, "l40s", true, 64, 128, 128).throughput(3240, 0.30, false, ""),
		b7(l40s, "l40s", true, 64, 128, 2048).throughput(1622, 0.30, false, ""),
		b7(l40s, "l40s", true, 32, 2048, 128).throughput(581, 0.30, false, ""),
		b7(l40s, "l40s", true, 16, 2048, 2048).throughput(531, 0.30, false, ""),
		firstToken(l40s, "l40s", "Llama-2-7B", 1, true, 128, 14, 0.30, ""),
		firstToken(l40s, "l40s", "Llama-2-7B", 1, true, 2048, 73, 0.30, ""),

		b7(h100, "h100", true, 768, 128, 128).throughput(19694, 0.30, false, ""),
		b7(h100, "h100", true, 112, 128, 2048).throughput(6818, 0.30, false, ""),
		b7(h100, "h100", true, 80, 2048, 128).throughput(2244, 0.30, false, ""),
		b7(h100, "h100", true, 48, 2048, 2048).throughput(2740, 0.30, false, ""),
		b70(2, 1024, 128, 128).throughput(2657, 0.30, true, ""),
		b70(4, 480, 128, 2048).throughput(1486, 1.60, true, missTRTLLM70BLongDecode),
		b70(2, 96, 2048, 128).throughput(306, 0.30, true, ""),
		b70(2, 64, 2048, 2048).throughput(547, 1.25, true, missTRTLLM70BLongDecode),

		b7(a100, "a100-80gb", false, 384, 128, 128).throughput(5586, 0.30, false, ""),
		b7(a100, "a100-80gb", false, 60, 128, 2048).throughput(1928, 0.30, false, ""),
		b7(a100, "a100-80gb", false, 52, 2048, 128).throughput(591, 0.30, false, ""),

		firstToken("trtllm-v0.5-h100", "h100", "Llama-2-7B", 1, true, 128, 7, 0.30, ""),
		firstToken("trtllm-v0.5-h100", "h100", "Llama-2-7B", 1, true, 2048, 36, 0.30, ""),
		firstToken("trtllm-v0.5-h100", "h100", "Llama-2-70B", 4, true, 128, 26, 0.62, missTRTLLMShortContext),
		firstToken("trtllm-v0.5-h100", "h100", "Llama-2-70B", 4, true, 2048, 109, 0.30, ""),
		firstToken("trtllm-v0.5-a100", "a100-80gb", "Llama-2-7B", 1, false, 128, 16, 0.30, ""),
		firstToken("trtllm-v0.5-a100", "a100-80gb", "Llama-2-7B", 1, false, 2048, 133, 0.30, ""),
		firstToken("trtllm-v0.5-a100", "a100-80gb", "Llama-2-70B", 4, false, 128, 47, 0.48, missTRTLLMShortContext),
		firstToken("trtllm-v0.5-a100", "a100-80gb", "Llama-2-70B", 4, false, 2048, 377, 0.30, ""),
	}
}

// The static-batch rows run offline: the front end's constants do not
// reach them (leave-one-source-out simulates each once per distinct step
// constants).
func init() {
	for s := range trtllmVersion {
		offlineSources[s] = true
	}
}

// Searched for this pass and not used (why):
//   - cssnoeasy's 2x A100 80GB PCIe (no NVLink, cross-NUMA), vLLM 0.19.0,
//     Qwen2.5-7B FP16 TP1/TP2 (github.com/cssnoeasy/a100-vllm-benchmark-blog
//     docs/reports/a100-tp1-vs-tp2-formal-baseline.md, commit e4226b0):
//     the first PCIe tensor-parallel source found, scored and then
//     withdrawn because its runs are not cold: every run is `vllm bench
//     serve --dataset-name random --seed 0` against one server kept up
//     through three repeats, so runs 2 and 3 send the very prompts of run
//     1 to a server with prefix caching on (vLLM V1's default; its KV cache
//     peaked at 1-10% use, so nothing was evicted). The report's per-run
//     table shows it: the short load's median TTFT is 275 ms (TP1) and 241
//     ms (TP2) in run 1 — one step prefilling eight 512-token prompts
//     together, as knee's closed loop does (it read ~126 ms against the
//     warm runs' 72) — and 69-76 / 54 ms in runs 2 and 3, a decode-sized
//     step. The long loads are tabulated only as means over the cold run
//     and the two warm ones, so neither a cold nor a fully cached
//     simulation reproduces them (knee's cold TTFT read +48% to +231%, its
//     output tok/s 27-42% low where the prefill was skipped). A source
//     that publishes its per-run JSON (or runs each repeat with its own
//     seed) would be scored.
//   - philschmid's llmperf A10G page (vLLM 0.4.3, Llama-3-8B on a
//     g5.2xlarge, 550 / 150 at concurrency 1-64): llmperf counts tokens
//     with a Llama-2 tokenizer and its answers end at EOS, so neither
//     length is established in Llama-3 tokens.
//   - sariekr/gpu_conc (RunPod; gpt-oss-20b on an H100 PCIe, H200, B200,
//     MI300X at concurrency 1-1024): its own client, `pip install vllm`
//     unpinned (version not stated), prompts sized by a word heuristic.
//   - gpustack's gpt-oss-20b A100 page: vLLM 0.11 on GPUStack's A100
//     machine, the gpustack-a100 source's host and engine version (not a
//     new source).
//   - cssnoeasy's Qwen3-32B quantization report (same machine, vLLM
//     0.19): --enforce-eager (no CUDA graphs), which knee's defaults do
//     not model; and only p99 TTFT and TPOT.
//   - llm-serving-lab/vllm-benchmark: vllm-metal on an M4 Mac mini.
//   - Michaelvll/llm-ie-benchmarks vllm/: the same Nebius H200 machines
//     and DeepSeek-R1 as the SkyPilot sources above (its log of April
//     2025 is of vLLM 0.8.x, the skypilot-h200-vllm-0.8 source's engine).
//   - lukaLLM/AI_Inference_Benchmarks_RTX600PRO_L40S (bench_serving JSONL
//     of vLLM and SGLang): an RTX PRO 6000 Blackwell, which knee has no
//     preset for, serving Qwen3-32B-FP8.
//   - leosch1/vllm-qwen3-8-27b-fp8-l40s-kernel-config-tuning (two L40S,
//     vLLM 0.27.1): a Qwen3.8-27B-FP8 model knee has no preset for, and
//     answers under a reasoning parser without --ignore-eos.
//   - TonyLi15/sglang-benchmark: GH200s serving Qwen2.5-3B (no knee
//     preset), the client on another node, SGLang's dev image unversioned.
//   - graz-dev/vllm-benchmark _old/benchmarks.json (GuideLLM, Qwen2.5-7B,
//     512 / 128 throughput profile): the GPU and vLLM version of that old
//     run are not stated (the README now describes Llama-3.1-8B on an
//     A10G).
//   - sgl-project/sglang benchmark/blog_v0_2 README: commands only; the
//     figures are in the blog post, not in the repository.
//   - big-yellow-duck/vllm-bench-collection: AMD Radeon (gfx1100-1201)
//     GPUs and Qwen3.8-27B, no knee presets.

// An SGLang source on GPUStack's H100 machine (issue 28: SGLang beside
// vLLM on a host whose vLLM runs the table already holds). Source:
// [gpustack-h100-sglang-0.5] github.com/gpustack/gpustack
// docs/performance-lab/qwen3-8b/h100-latency.md (commit 1dbc3b8; §1 and
// §3): GPUStack's H100 machine (one H100 SXM; the gpustack-h100
// source's host, so not independent of it in hardware: a source of its
// own by engine), SGLang v0.5.3.post3, `python3 -m sglang.launch_server
// --model-path Qwen/Qwen3-8B` (BF16) and the same with
// Qwen/Qwen3-8B-FP8 (FP8 weights, block-scaled; KV cache BF16, SGLang's
// default), every other setting SGLang's default (overlap scheduler on,
// radix cache on: ShareGPT's prompts share no prefix worth counting, so
// knee runs without a prefix cache; memory fraction SGLang's own, taken
// as 0.88: at 4 users the KV cache never fills). Load: the page's vLLM
// command, `vllm bench serve --backend openai-chat --dataset-name
// sharegpt --num-prompts 100 --max-concurrency 4`, against each server:
// 23,260 prompt and 22,061 output tokens in every run (the same 100
// conversations as the vLLM 0.11 run of the gpustack-h100 source), run
// at their means 233 / 221 as that row is. Metrics: mean TTFT, mean TPOT
// and output tok/s of each run. Not used: the page's runs with
// --cuda-graph-max-bs 8 (within 1% of the default run), the triton and
// flashinfer attention backends and EAGLE3 speculative decoding (kernel
// and decoding choices knee does not model), and TensorRT-LLM's run (not
// SGLang or vLLM). The gpustack throughput pages' SGLang runs stay
// rejected (a 1,000-prompt ShareGPT burst with no token totals, above).

func gpustackSGLangPoints() []validationPoint {
	const src = "gpustack-h100-sglang-0.5"
	bf16 := func(t *testing.T) simengine.Config { return sglangConfig(t, "h100", "qwen3-8b", 1, 0.88, true) }
	fp8 := func(t *testing.T) simengine.Config {
		c := bf16(t)
		// Qwen/Qwen3-8B-FP8's quantization_config: fp8 with
		// weight_block_size [128, 128].
		c.Model.WeightPrecision, c.Model.WeightBlockSize = "fp8", 128
		return c
	}
	run := func(cfg func(*testing.T) simengine.Config) servedBurst {
		return servedBurst{source: src, cfg: cfg, users: 4, n: 100, in: 233, out: 221}
	}
	name := "Qwen3-8B %s, H100, SGLang 0.5.3, C=4, ShareGPT 233/221"
	pts := run(bf16).rows(fmt.Sprintf(name, "BF16"), check("ttft", 27.70), check("tpot", 7.19), check("throughput", 525.59))
	return append(pts, run(fp8).rows(fmt.Sprintf(name, "FP8"),
		missing("ttft", 39.66, 0.72, missBlockFP8), check("tpot", 5.65), check("throughput", 657.83))...)
}

// missBlockFP8 is why the FP8 run's first token misses (the bound about
// a quarter above the error the row had when added, before knee priced
// block-scaled FP8). Not tuned.
const missBlockFP8 = "Qwen3-8B-FP8 is block-quantized (a scale per 128×128 weights, its model card) and its published first token is slower than BF16's (39.7 against 27.7 ms) where knee's, even with block-scaled FP8 at half the FP8 rate (CostParams.BlockFP8Efficiency), is faster (held out 23 ms against BF16's 30): SGLang's FP8 prefill pays more than its GEMMs (per-token-group activation quantization, not modelled). Its decode is within the table's bounds since the block-FP8 share (published FP8/BF16 time a token 0.79; knee held out 0.62, 0.55 before the share)"

// TensorRT-LLM v0.15.0's performance overview (issue 28: the table had no
// L40S running in-flight batching, and no tensor parallelism over PCIe).
// Source: github.com/NVIDIA/TensorRT-LLM, gh-pages branch,
// performance/perf-overview.html (commit 0627833; the v0.15 docs), the
// "Throughput Measurements" table, "generated using version 0.15.0",
// token throughput in tokens a second: NVIDIA's own machines, one GPU
// column each, engines built by `trtllm-bench build --tp_size $tp_size
// [--quantization FP8] --dataset $dataset_file` (the build sizes the
// engine's batch limits from the dataset by heuristics the page does not
// print), datasets from `prepare_dataset.py token-norm-dist` with both
// standard deviations 0 (every prompt and answer at its length), run by
// `trtllm-bench throughput` (every request queued at once, in-flight
// batching, no API server) with --kv_cache_free_gpu_mem_fraction 0.95 "in
// majority of cases" (0.90 on out-of-memory). Request counts per length
// pair, the page's table: 128/128 30,000; 128/2048, 500/2000, 1000/1000
// and 2048/128 3,000; 128/4096, 2048/2048 and 5000/500 1,500; 20000/2000
// 1,000. The figure is output tokens a second (the page's sample output:
// 3,000 requests × 128 answer tokens / 16.41 s = 23,406, its "Token
// Throughput"). Two sources by host:
//   - [trtllm-v0.15-l40s] the L40S column, FP8 ("If you specify FP8
//     quantization, the KV cache will automatically be set to FP8 as
//     well"): Llama-3.1-8B at TP1 and Llama-3.1-70B at TP4 and TP8, over
//     PCIe (the L40S has no NVLink).
//   - [trtllm-v0.15-a100] the A100-SXM4-80GB column, precision "Mixed"
//     (read as an engine built without --quantization: FP16 weights and
//     KV cache, the page's FP16 build): Llama-3.1-8B at TP1 and
//     Llama-3.1-70B at TP4 and TP8 (NVLink).
//
// Every row runs trtllmBench (the trtllm source's: the TensorRT-LLM
// profile's scheduling, knee's memory fraction 0.9 and batch defaults,
// a tenth of the requests while predicting). Every length pair the page
// has for these models and TP sizes is used. Not used: the LLaMA v3 70B
// rows (knee's 70B preset is 3.1's: 128K context), the TP1/TP2 70B cells
// (FP8 70B at TP1 and FP16 70B at TP2 leave the KV cache a few GB, which
// hinges on the engine's memory plan the page does not give), the H100
// columns (NVIDIA's H100 machine, the trtllm source's host), the
// A100-PCIE-80GB column (no knee preset: it is not the SXM part's 400 W
// and NVLink), the GH200 column (gptManagerBenchmark with chunked
// context, a different driver than the other columns), the Mistral 7B
// rows (the page does not say which version; knee's preset is v0.3, and
// v0.1 had a 4,096-token sliding window), the Mixtral rows (left out for
// the test's time: a mixture-of-experts row is simulated once per pair of
// expert efficiencies of the grid) and the page's "Online Serving
// Measurements" (TensorRT-LLM 0.14 behind Triton, prompt/answer lengths
// 467/256, 467/16 and 202/214 without their dataset or distribution, and
// no client named).
//
// Searched for this pass (vLLM and SGLang hosts on L40S, A10G, A100 40GB,
// H100 PCIe, TP2 on PCIe) and not used (why):
//   - Red Hat's MLPerf Inference v5.1 post (Llama-3.1-8B FP8, vLLM 0.10.0,
//     H100 and L40S, Offline and Server tokens/s): the CNN/DailyMail
//     prompts and the answers (EOS, at most 128) have lengths the post
//     does not give, and the submission's configs were not in the index.
//   - kvcached's bench_offload_vs_kvcached (A100-SXM4-40GB, vLLM 0.19.0,
//     Qwen3-4B): two vLLM instances sharing one GPU, multi-turn prefixes
//     under prefix caching; bench_layout/bench_result.md is a GB10 (no
//     knee preset).
//   - sgl-project/sglang issue 1362 (SGLang v0.3, Llama-3.1-405B-FP8 on
//     8× H100, ShareGPT at 16 req/s): a maintainer's run in a bug thread;
//     its host and engine are the lmsys-sglang-v0.3 source's era and the
//     rest of the block was not in the copy at hand.
//   - sgl-project/sglang issue 810 (SGLang 0.2.5, Llama-3-70B-FP8 TP8 on
//     H100s, random 256/512 at once): a bug (OOM) thread; the result
//     block was not in the copy at hand.
//   - sgl-project/sglang PR 1060 (Llama-3.1-8B, 8192/8 at once): run with
//     --disable-flashinfer (Triton attention), a kernel choice knee does
//     not model.
//   - vllm-project/vllm PRs 18566, 31826, 10906 and 13305 (vLLM main
//     between releases): the GPU (and for 31826 the model) is not in the
//     copy at hand, 10906 is V0, 13305 ran on MI300X with ShareGPT answers
//     ending at EOS.
//   - vllm-project/vllm PR 15322 (DeepSeek-R1 on L20) and PR 25135 (405B
//     FP4 on AMD): no knee preset for those GPUs.
//   - tenstorrent/tt-inference-server model_performance_reference.json:
//     Tenstorrent targets ("theoretical"), not GPU measurements.
//   - AI-Hypercomputer/gpu-recipes (A3 Mega/Ultra vLLM, TensorRT-LLM and
//     SGLang recipes) and vllm-project/recipes: commands and placeholder
//     ("X.XX") outputs, no figures.
//   - sgl-project/sglang benchmark/benchmark_v0.4.1.post4: DataCrunch's
//     DeepSeek-V3 commands, figures elsewhere (and DP attention, which
//     knee does not model).
//   - databasemart.com's other GPU pages, apolo.us's multi-GPU report (H100
//     PCIe), pavlokhmel.com: not in the index searched, a custom client
//     reading vLLM's Prometheus counters, and the copy at hand stops
//     before the results, respectively.
//   - evokernel-specs.pages.dev (L40S ×4, Qwen2.5-Coder-32B): "synthesized
//     from public benchmarks", not a measurement.
//   - inference-sim/sim-to-real-accuracy-validation: its vLLM ground truth
//     is not tracked in the repository (only simulator error tables).
//   - AMD's ROCm performance-results page in its other versions (vLLM
//     0.10.1 of September and 0.11.1 of November 2025 on the same 8×
//     MI300X server): the amd-mi300x source's host and workload with only
//     the engine version changed, the same four 128-token-prompt rows a
//     version (near duplicates, not a new setup); its MI325X section is not
//     in the copies at hand.
//   - arXiv 2603.10031 (vLLM 0.14.1 on 8× MI325X, Llama-3.1-405B and
//     three MoE models): the copies at hand stop at the abstract, and the
//     GQA runs use KV-cache offloading.
//   - modal-labs/stopwatch: configurations only; its results live in a
//     database, not in the repository.
//   - gpustack/gpustack performance-lab pages not yet used (Qwen3-32B,
//     GLM, gpt-oss-20b on A100/H100/H200): the hosts and vLLM versions of
//     the gpustack sources already in the table.
//   - yobitelcomm/bench's multi-vendor marathon: "5 vendors" are model
//     vendors; every run is the yobitel source's 8× H100 host.
//   - NVIDIA NIM's Llama-3.1-8B and 70B tables (NIM 1.3.0 and 1.8.0): the
//     copies at hand drop the GPU, precision and length headers of those
//     tables (as recorded above for the earlier pass).

// trtllmV015 is one length pair of the v0.15 table: output tok/s by
// column (0 where the page has no figure).
type trtllmV015 struct {
	in, out, n int
	// l40s8, l40s70tp4, l40s70tp8: the L40S (FP8) column; a100...: the
	// A100-SXM4-80GB (FP16) column.
	l40s8, l40s70tp4, l40s70tp8, a1008, a10070tp4, a10070tp8 float64
}

var trtllmV015Rows = []trtllmV015{
	{128, 128, 30000, 8982.97, 1469.28, 1381.25, 6552.62, 2716.71, 4595.66},
	{128, 2048, 3000, 5297.21, 1911.43, 2157.58, 5220.03, 2663.76, 4967.17},
	{128, 4096, 1500, 2989.17, 1357.83, 1895.68, 3326.45, 1913.13, 3594.1},
	{500, 2000, 3000, 4263.97, 1599.38, 1877.86, 4191.62, 2193.81, 4349.21},
	{1000, 1000, 3000, 4013.95, 1187.23, 1242.34, 3753.46, 1889.72, 3285.33},
	{2048, 128, 3000, 1055.55, 176.41, 163.53, 789.56, 320.96, 556.48},
	{2048, 2048, 1500, 2162.8, 909.3, 1092.72, 2366.86, 1341.99, 2464.13},
	{5000, 500, 1500, 972.2, 242.95, 242.61, 816.09, 389.99, 700.7},
	{20000, 2000, 1000, 326.02, 158.35, 198.77, 330.47, 209.39, 399.8},
}

// Why v0.15 rows miss (in-source errors, under the TensorRT-LLM profile;
// each bound about a quarter above the error the row had when added).
// Not tuned, not investigated further.
const (
	missTRTLLMPCIeTP       = "Llama-3.1-70B FP8 over PCIe on L40S reads high, TP8 more than TP4 (TP4 +12% to +37%, TP8 +37% to +55%; the 8B at TP1 on the same GPU is within 25%): the published TP8 figures are at or below TP4's for 128/128, 2048/128 and 5000/500 (1,381 against 1,469 tok/s at 128/128), where knee's all-reduce at the PCIe rate still lets TP8 gain; the page itself names an NCCL all-reduce issue on AMD-CPU hosts for multi-GPU runs (assumed, not verified, to be this host's)"
	missTRTLLMLongDecodeTP = "Llama-3.1-70B FP16 on A100-SXM4-80GB reads high on answers of 2,000 tokens and more at TP4 and TP8 (+6% to +55%; beyond 30% at 128/2048 and 128/4096 at TP4, 128/4096 and 2048/2048 at TP8) while its answers of 128 to 1,000 tokens are within 16% and the 8B at TP1 within 10%: the direction of the v0.6 Llama-2-70B long-decode miss (missTRTLLM70BLongDecode)"
)

// trtllmV015Tol is the bound of a row beyond 30%, by column label and
// length pair.
var trtllmV015Tol = map[string]float64{
	"l40s-70-tp4 128/2048": 0.50, "l40s-70-tp4 128/4096": 0.50, "l40s-70-tp4 500/2000": 0.45, "l40s-70-tp4 1000/1000": 0.45, "l40s-70-tp4 2048/128": 0.45,
	"l40s-70-tp8 128/128": 0.55, "l40s-70-tp8 128/2048": 0.55, "l40s-70-tp8 128/4096": 0.70, "l40s-70-tp8 500/2000": 0.55, "l40s-70-tp8 1000/1000": 0.60,
	"l40s-70-tp8 2048/128": 0.70, "l40s-70-tp8 2048/2048": 0.70, "l40s-70-tp8 5000/500": 0.65, "l40s-70-tp8 20000/2000": 0.50,
	"a100-70-tp4 128/2048": 0.40, "a100-70-tp4 128/4096": 0.40,
	"a100-70-tp8 128/4096": 0.70, "a100-70-tp8 2048/2048": 0.45,
}

func trtllmV015Points() []validationPoint {
	var pts []validationPoint
	for _, r := range trtllmV015Rows {
		for _, c := range []struct {
			source, key, label, gpu, model string
			tp                             int
			published                      float64
			miss                           string
		}{
			{"trtllm-v0.15-l40s", "l40s-8", "Llama-3.1-8B-FP8, L40S", "l40s", "llama-3.1-8b-fp8", 1, r.l40s8, ""},
			{"trtllm-v0.15-l40s", "l40s-70-tp4", "Llama-3.1-70B-FP8 TP4, L40S (PCIe)", "l40s", "llama-3.1-70b-fp8", 4, r.l40s70tp4, missTRTLLMPCIeTP},
			{"trtllm-v0.15-l40s", "l40s-70-tp8", "Llama-3.1-70B-FP8 TP8, L40S (PCIe)", "l40s", "llama-3.1-70b-fp8", 8, r.l40s70tp8, missTRTLLMPCIeTP},
			{"trtllm-v0.15-a100", "a100-8", "Llama-3.1-8B FP16, A100-SXM4-80GB", "a100-80gb", "llama-3.1-8b", 1, r.a1008, ""},
			{"trtllm-v0.15-a100", "a100-70-tp4", "Llama-3.1-70B FP16 TP4, A100-SXM4-80GB", "a100-80gb", "llama-3.1-70b", 4, r.a10070tp4, missTRTLLMLongDecodeTP},
			{"trtllm-v0.15-a100", "a100-70-tp8", "Llama-3.1-70B FP16 TP8, A100-SXM4-80GB", "a100-80gb", "llama-3.1-70b", 8, r.a10070tp8, missTRTLLMLongDecodeTP},
		} {
			name := fmt.Sprintf("%s, TensorRT-LLM 0.15 trtllm-bench, %d at once, %d/%d: output tok/s", c.label, r.n, r.in, r.out)
			tol, miss := 0.30, ""
			if b, ok := trtllmV015Tol[fmt.Sprintf("%s %d/%d", c.key, r.in, r.out)]; ok {
				tol, miss = b, c.miss
			}
			pts = append(pts, validationPoint{name, c.source, false, "throughput", c.published, tol,
				trtllmBench(c.gpu, c.model, c.tp, r.in, r.out, r.n), miss})
		}
	}
	return pts
}

// The v0.15 rows run offline (trtllm-bench: no API server).
func init() {
	offlineSources["trtllm-v0.15-l40s"] = true
	offlineSources["trtllm-v0.15-a100"] = true
}

// Two vLLM hosts of one publisher's benchmark, three engine runs (issue
// 28: an L4 and an A100-40GB serving a 7B dense model, at five and three
// loads), read from the per-run result files the harness commits. Source:
// github.com/ree2raz/inference-bench (the repository behind
// llm-bench.rituraj.info, rejected above from the page alone for its
// "≤256" prompts: the repository's workload file and per-request records
// settle the lengths, below). Harness (bench_lib.py, commits 2e426b1 and
// e15c947): Qwen/Qwen2.5-7B-Instruct, `--dtype auto` (BF16, the model's
// config), `--max-num-seqs 64 --gpu-memory-utilization 0.90`, every other
// setting vLLM's default (prefix caching on, CUDA graphs on, KV cache
// BF16). Load: its own asyncio client, a closed loop of C users (a
// semaphore of C over the 100 "short" prompts of prompts/workload.jsonl,
// each sent once, streaming /v1/chat/completions, temperature 0,
// max_tokens 128, no ignore_eos), after a warm-up batch of 2C of the same
// prompts. The answers ran to their limit: output_tokens_mean is 128.0
// in every A100 row, every record of raw/vllm_short_c16_r1.jsonl (the L4
// file read) is 128, and every L4 summary row's median latency is its
// median TTFT + 127 median TPOTs within 0.3%. Prompts: one-line
// questions ("How does a Bloom filter work and what are its
// limitations?": 11 words) under Qwen2.5's chat template
// with its default system prompt; the token counts are not recorded, so
// 44 tokens a prompt is assumed (about 24 of template and system prompt,
// 15 of question, 5 closing the turn); at 128 answer tokens the decode
// dominates every figure but the TTFT. The warm-up and the prefix cache
// let repeated prompts skip a prefill of ~44 tokens (not modelled).
// Metrics, as bench_lib.py computes them: ttft_p50 (median TTFT, first
// content chunk), tpot_p50 (median over requests of (E2E − TTFT) / 127)
// and throughput_tokens_per_sec (answer tokens over the measured batch's
// wall time). Three sources by host and engine version:
//   - [ree2raz-l4-vllm-0.8.5] Modal's L4 (24 GB), image
//     vllm/vllm-openai:v0.8.5 (V1, synchronous scheduling: async came
//     later), C = 1, 4, 16, 32 and 64, three repeats each:
//     results/summary.csv (commit 3f89896), the median of the three
//     runs of each figure.
//   - [ree2raz-a100-vllm-0.20] Modal's A100 40GB (the harness's
//     "A100", named A100-40GB in the result rows), image
//     vllm/vllm-openai:v0.20.1 (async scheduling on by default), C = 1, 16
//     and 64, one run each: results/v2_a100_vllm_fp16.jsonl (commit
//     e15c947).
//   - [ree2raz-a100-vllm-0.8.5] the same harness's first A100 run
//     (modal_a100_check.py: Modal's "A100", the 40GB part, with the L4
//     runs' image vllm/vllm-openai:v0.8.5 and server flags), FP16 rows at
//     C = 1, 16 and 64, one run each: results/a100_results.jsonl (commit
//     a73690e). The host of the source above, so not independent of it in
//     hardware: a source of its own by engine version.
//
// Not used from the same repository: the "long" regime (its ~2,000-token
// prompts repeat document excerpts under different questions, ten domain
// pairs each with ten questions per the project page, so under prefix
// caching most prompts reuse a cached excerpt: TTFT 76 ms at C=1 on the
// L4, where a cold prefill of 2,000 tokens would take several times that;
// knee's fixed-length generator has no such sharing), the
// SGLang rows (--disable-cuda-graph on v0.4.6; the A100 runs use
// lmsysorg/sglang:latest, version not stated), the AWQ / Marlin rows and
// the Qwen3 rows (no knee preset for AWQ-quantized or reasoning-parsed
// runs; AWQ ran --enforce-eager on the L4), and that file's AWQ
// rows.
//
// Searched for this pass and not used (why):
//   - dennislee22/vLLM-benchmarking (A100 80GB, Qwen2 7B-72B, vLLM through
//     Ray on Cloudera pods): vLLM installed unpinned (`pip install vllm`),
//     repeated runs against one server with the prefix cache hitting
//     39-54% (its own logs), answers not held to length (69,058 of
//     71,680 tokens), and its first test splits a 7B over two A100 40GB
//     pods on two nodes (43 ms a token at 10 users): pods joined over the
//     network, not a typical host.
//   - varad-more/inference-engine-benchmark-system (vLLM and SGLang on an
//     A10G g5.2xlarge, 16 models): its throughput ramp cycles four
//     prompts (long_001-004) under prefix caching, its reports aggregate
//     the whole ramp (no per-concurrency figure found; the per-request
//     JSON of ~400 KB a run was not split by level here), and the vLLM
//     image is set by an environment variable whose value per run is not
//     recorded (default v0.18.0 in the compose file of one commit).
//   - BBuf/AI-Infra-Auto-Driven-SKILLS PR 18 (H100, Qwen2.5-7B, vLLM /
//     SGLang / TensorRT-LLM): only p99 TTFT and TPOT of 20-prompt runs.
//   - vllm-project/vllm PR 33743 (gemma-3-27b) and the ROCm fork's PRs:
//     no knee preset for the model / AMD consumer GPUs.
//   - vllm-project/vllm issue 7567 (Llama-3.1-70B TP8, "extremely slow"):
//     a slow-host report (enforce-eager first), not a typical host.
//   - sgl-project/sglang issue 1137 (Llama-3-70B TP4 on A100 PCIe, runs
//     stuck past 10 prompts), issue 7151 (Qwen3-32B-FP8 on an L20, two
//     very different results) and triton-inference-server/
//     tensorrtllm_backend issue 453 ("extremely low" Llama-3-8B serving):
//     bug threads, and no knee preset for the L20.
//   - pavlokhmel.com (vLLM on RTX 4090 / A100 / H100 / H200): still only
//     the setup in the copy at hand (rejected above).

// ree2razBench is one run of ree2raz/inference-bench's client: a closed
// loop of users over n requests of in / out tokens.
type ree2razBench struct {
	source   string
	cfg      func(*testing.T) simengine.Config
	users, n int
	in, out  int
}

// measure returns the run's median TTFT, its median TPOT ((E2E − TTFT) /
// (out − 1) of each request, bench_lib.py's tpot_p50, interpolated as its
// pct is) and the output tokens a second over the run.
func (b ree2razBench) measure(t *testing.T) measured {
	t.Helper()
	return medianRun(t, Config{Engine: b.cfg(t), Gen: fixed{b.in, b.out}, Concurrency: b.users, Requests: int64(b.n)}, b.out)
}

func (b ree2razBench) rows(name string, metrics ...burstMetric) []validationPoint {
	label := map[string]string{"throughput": "output tok/s", "ttft": "median TTFT", "tpot": "median TPOT"}
	return sharedRunRows(name, b.source, label, b.measure, checkOnly(metrics))
}

// ree2razRow is one summary row: users, then median TTFT (s),
// median TPOT (s) and output tok/s as the files give them.
type ree2razRow struct {
	users               int
	ttftS, tpotS, tokPS float64
}

// missRee2razTTFT is why the L4's first token at 64 users reads
// low (in-source -41% when added; the bound about a quarter above it).
// Not tuned, not investigated further.
const missRee2razTTFT = "in this table (the defaults before the refit) knee's median TTFT reads low on both hosts from 16 users up, more the more users (L4 -22%, -28%, -41% at 16, 32, 64; A100 -21% at 1 and 16, -26% at 64) while its TPOT at the same loads is within 16%: the first token of these short prompts waits on something knee does not price, assumed on the client's side (bench_lib.py opens a new httpx client, so a new connection, for every request, and parses every chunk in one Python event loop) or in vLLM's front end streaming 64 answers at once. Held out, under the refit's serial admission (8 ms a request), the sign turns at the bursts: the A100's 64 users read +103% and the L4's 16 users +31%, its 64 users -21% (which of knee's front-end terms gives the A100's +103% was not investigated)"

// missRee2razV085 is why vLLM 0.8.5 on the A100 misses at 16 and
// 64 users (in-source -52% and -72% on TTFT, +43% on throughput when
// added; each bound about a quarter above). Not tuned.
const missRee2razV085 = "on the same A100 host, model and client, vLLM 0.8.5 decodes 64 users at 17.5 ms a token against vLLM 0.20.1's 15.2 ms, delivers 2,564 tok/s against 3,114, and its median first token at 16 and 64 users waits 1.3x and 2.4x as long (93.6 and 410 ms against 73.2 and 173), while at one user the two agree within 10%: the older engine pays a cost that grows with the batch (assumed its host-side work between steps, not verified), which knee's defaults (0 µs a sequence) do not carry, and knee's synchronous-scheduling switch does not move its figures here (12.87 ms a token at 64 users either way). Held out: 16 users' TTFT -58%, 64 users' TTFT -18%, TPOT -23%, output tok/s +24%"

func ree2razPoints() []validationPoint {
	l4 := func(t *testing.T) simengine.Config {
		c := syncScheduling(engineConfig(t, "l4", "qwen2.5-7b", 1))
		c.MaxNumSeqs = 64
		return c
	}
	a100 := func(t *testing.T) simengine.Config {
		c := engineConfig(t, "a100-40gb", "qwen2.5-7b", 1)
		c.MaxNumSeqs = 64
		return c
	}
	a100v085 := func(t *testing.T) simengine.Config { return syncScheduling(a100(t)) }
	var pts []validationPoint
	for _, h := range []struct {
		source, label string
		cfg           func(*testing.T) simengine.Config
		rows          []ree2razRow
	}{
		{"ree2raz-l4-vllm-0.8.5", "Qwen2.5-7B, L4, vLLM 0.8.5", l4, []ree2razRow{
			{1, 0.0695, 0.0583, 17.11}, {4, 0.1226, 0.0600, 66.16}, {16, 0.1956, 0.0619, 254.33},
			{32, 0.3446, 0.0679, 460.71}, {64, 0.5815, 0.0757, 831.3}}},
		{"ree2raz-a100-vllm-0.20", "Qwen2.5-7B, A100-40GB, vLLM 0.20.1", a100, []ree2razRow{
			{1, 0.0251, 0.0124, 79.92}, {16, 0.0732, 0.0126, 1096.07}, {64, 0.1732, 0.0152, 3114.2}}},
		{"ree2raz-a100-vllm-0.8.5", "Qwen2.5-7B, A100-40GB, vLLM 0.8.5", a100v085, []ree2razRow{
			{1, 0.024, 0.0136, 72.11}, {16, 0.0936, 0.0146, 950.13}, {64, 0.4101, 0.0175, 2563.65}}},
	} {
		for _, r := range h.rows {
			run := ree2razBench{source: h.source, cfg: h.cfg, users: r.users, n: 100, in: 44, out: 128}
			ttft, tput := check("ttft", r.ttftS*1000), check("throughput", r.tokPS)
			switch {
			case h.source == "ree2raz-l4-vllm-0.8.5" && r.users == 64:
				ttft = missing("ttft", r.ttftS*1000, 0.50, missRee2razTTFT)
			case h.source == "ree2raz-a100-vllm-0.8.5" && r.users == 16:
				ttft = missing("ttft", r.ttftS*1000, 0.65, missRee2razV085)
			case h.source == "ree2raz-a100-vllm-0.8.5" && r.users == 64:
				ttft = missing("ttft", r.ttftS*1000, 0.90, missRee2razV085)
				tput = missing("throughput", r.tokPS, 0.55, missRee2razV085)
			}
			pts = append(pts, run.rows(fmt.Sprintf("%s, C=%d, 100 of 44/128", h.label, r.users),
				ttft, check("tpot", r.tpotS*1000), tput)...)
		}
	}
	return pts
}
