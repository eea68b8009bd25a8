package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/workload"
)

// The validation table: published measurements of real serving engines, each
// with the configuration it was measured under, and what knee sim predicts
// for that configuration. Points marked fit are the ones the fitted
// constants of simengine.DefaultCost were fitted to; the others only check.
// docs/simulator.md shows this table (run with -v to print it).
//
// Sources:
//   - [yobitel] yobitelcomm.github.io/bench/recipes/concurrency-sweep: vLLM 0.21, H100-80GB-HBM3, Llama-3.1-8B-Instruct fp16.
//   - [musgrave] johnmusgrave.com/p/vllm-throughput-latency-sweep-on: vLLM 0.23, A100 40GB, Llama-3.1-8B-Instruct, 1024 in / 128 out (ignore_eos), closed loop C, C×20 requests.
//   - [splitwise] github.com/Mutinifni/splitwise-sim data/perf_model.csv: Llama-2-70B at TP2 on DGX-H100 and DGX-A100 (80GB); prompt_time (one prefill) and token_time (one decode step) at batch 1..32, mean of the five repetitions.
//   - [blis] github.com/inference-sim/training default_args/*/results/stage_N_lifecycle_metrics.json: vLLM on H100 SXM measured with inference-perf, constant-rate arrivals, ignore_eos, max_num_batched_tokens 2048, max_num_seqs 128 (exp-config.yaml); prompts ~575 tokens (a 100-token shared system prompt + question), 248 output tokens. TPOT here is (mean E2E − mean TTFT) / 247: the files' own time_per_output_token divides by re-tokenized output and reads half the real step time.
//   - [vllm-nightly] vLLM's performance benchmarks, latency tests latency_llama8B_tp1 and latency_llama70B_tp4 (.buildkite/nightly-benchmarks/tests/latency-tests.json: batch 8, 32 in / 128 out, offline llm.generate), H200 results as quoted in knee issue 15: 833 ms and 2,077 ms per batch.
type validationPoint struct {
	name   string
	source string
	fit    bool
	metric string // "ttft", "tpot" (ms) or "throughput" (output tok/s, or a ratio)
	// published is the measured value; tol the bound the test holds knee to.
	published, tol float64
	predict        func(t *testing.T) float64
	// miss says why a check-only point is beyond 30% (its tol then only
	// guards against the error growing).
	miss string
}

// splitwiseProfile models the engine SplitwiseSim profiled (not vLLM: no
// CUDA graphs, so a step's fixed cost is ~14× vLLM's), as knee calibrate
// would fit it: T0 fitted to the H100 batch-1 decode step (37.0 ms), the
// compute efficiency to the H100 512-token prefill (83.9 ms), memory
// efficiency kept at the default; no HTTP front end (the profile times
// engine steps). Every other Splitwise row checks this profile.
var splitwiseProfile = func() simengine.CostParams {
	p := simengine.DefaultCost
	p.StepOverheadNS = 8_600_000
	p.ComputeEfficiency = 0.486
	p.KVMemEfficiency = 0
	p.FrontEndNS, p.FrontEndPerTokenNS = 0, 0
	return p
}()

func validationPoints() []validationPoint {
	// Splitwise's profile is of one engine step in isolation: no HTTP
	// front end, an unchunked prompt.
	splitPrefill := func(gpu string, in int) func(*testing.T) float64 {
		return func(t *testing.T) float64 {
			return isolatedBatch(t, gpu, "llama-2-70b", 2, 1, in, 1, &splitwiseProfile).ttftMS
		}
	}
	splitDecode := func(gpu string, batch int) func(*testing.T) float64 {
		return func(t *testing.T) float64 {
			return isolatedBatch(t, gpu, "llama-2-70b", 2, batch, 512, 128, &splitwiseProfile).tpotMS
		}
	}
	blis := func(model string, tp int, rate float64, in, out int, metric string) func(*testing.T) float64 {
		return func(t *testing.T) float64 {
			s := serving(t, "h100", model, tp, func(c *simengine.Config) { c.MaxNumBatchedTokens, c.MaxNumSeqs = 2048, 128 },
				rate, in, out)
			if metric == "ttft" {
				return s.ttftMS
			}
			return s.tpotMS
		}
	}
	const (
		missA100     = "compute efficiency is one constant for every GPU, fitted on H100; the A100 reaches a larger share of its datasheet peak (Splitwise: A100/H100 prefill time 2.2x at 8192 tokens against a 3.2x peak ratio)"
		missLoadTTFT = "at 20 req/s vLLM's TTFT doubles while knee's grows by half: queueing behind mixed prefill steps is longer on the real engine"
		missCapacity = "knee puts this load near or past capacity; the real engine kept TPOT close to a pure decode step, which the roofline cannot do with 20 × 574-token prefills a second unless most prompt tokens were cached (the workload ran inference-perf's shared-prefix multi-turn mode; knee's run has no prefix cache)"
		missMoE      = "MoE prefill overheads (routing, token permutation, small per-expert GEMMs) are not in the model; its decode (memory-bound) is within 6%"
		missOffline  = "vLLM's offline latency benchmark has a larger fixed cost per step than the OpenAI server the step overhead was fitted to (8B: 6.5 ms per step on an H200, as slow as on an H100)"
	)
	return []validationPoint{
		{"Llama-3.1-8B, H100, 1 in flight, 256/256: TPOT", "yobitel", true, "tpot", 6.48, 0.15,
			func(t *testing.T) float64 {
				return isolatedBatch(t, "h100", "llama-3.1-8b", 1, 1, 256, 256, nil).tpotMS
			}, ""},
		{"Llama-3.1-8B, A100-40GB, 1 in flight, 1024/128: TPOT", "musgrave", true, "tpot", 1000.0 / 75, 0.15,
			func(t *testing.T) float64 {
				return isolatedBatch(t, "a100-40gb", "llama-3.1-8b", 1, 1, 1024, 128, nil).tpotMS
			}, ""},
		{"Llama-2-70B TP2, H100, prefill 512", "splitwise", true, "ttft", 83.9, 0.20, splitPrefill("h100", 512), ""},
		{"Llama-2-70B TP2, H100, decode batch 1", "splitwise", true, "tpot", 37.0, 0.05, splitDecode("h100", 1), ""},
		{"Llama-2-7B, H100, 5 req/s, 591/247: TTFT", "blis", true, "ttft", 25.0, 0.15, blis("llama-2-7b", 1, 5, 591, 247, "ttft"), ""},

		// Check-only points.
		{"Llama-2-70B TP2, H100, prefill 1024", "splitwise", false, "ttft", 157.8, 0.30, splitPrefill("h100", 1024), ""},
		{"Llama-2-70B TP2, H100, prefill 2048", "splitwise", false, "ttft", 308.2, 0.30, splitPrefill("h100", 2048), ""},
		{"Llama-2-70B TP2, H100, prefill 8192", "splitwise", false, "ttft", 1339.1, 0.30, splitPrefill("h100", 8192), ""},
		{"Llama-2-70B TP2, H100, prefill 4096", "splitwise", false, "ttft", 642.0, 0.30, splitPrefill("h100", 4096), ""},
		{"Llama-2-70B TP2, A100-80GB, prefill 512", "splitwise", false, "ttft", 196.7, 0.35, splitPrefill("a100-80gb", 512), ""},
		{"Llama-2-70B TP2, A100-80GB, prefill 2048", "splitwise", false, "ttft", 687.3, 0.50, splitPrefill("a100-80gb", 2048), missA100},
		{"Llama-2-70B TP2, A100-80GB, prefill 8192", "splitwise", false, "ttft", 2990.3, 0.45, splitPrefill("a100-80gb", 8192), missA100},
		{"Llama-2-7B, H100, 8 req/s, 575/248: TTFT", "blis", false, "ttft", 27.1, 0.30, blis("llama-2-7b", 1, 8, 575, 248, "ttft"), ""},
		{"Llama-2-7B, H100, 20 req/s, 575/248: TTFT", "blis", false, "ttft", 51.9, 0.40, blis("llama-2-7b", 1, 20, 575, 248, "ttft"), missLoadTTFT},
		{"CodeLlama-34B TP2, H100, 8 req/s, 574/248: TTFT", "blis", true, "ttft", 46.0, 0.15, blis("codellama-34b", 2, 8, 574, 248, "ttft"), ""},
		{"CodeLlama-34B TP2, H100, 20 req/s, 574/248: TTFT", "blis", false, "ttft", 53.8, 25, blis("codellama-34b", 2, 20, 574, 248, "ttft"), missCapacity},
		{"Llama-2-70B TP4, H100, 8 req/s, 575/248: TTFT", "blis", false, "ttft", 57.4, 0.30, blis("llama-2-70b", 4, 8, 575, 248, "ttft"), ""},
		{"Mixtral-8x7B TP2, H100, 8 req/s, 571/248: TTFT", "blis", false, "ttft", 63.9, 0.45, blis("mixtral-8x7b", 2, 8, 571, 248, "ttft"), missMoE},
		{"Mixtral-8x7B TP2, H100, 20 req/s, 571/248: TTFT", "blis", false, "ttft", 71.0, 0.45, blis("mixtral-8x7b", 2, 20, 571, 248, "ttft"), missMoE},

		{"Llama-2-70B TP2, H100, decode batch 16", "splitwise", false, "tpot", 42.0, 0.30, splitDecode("h100", 16), ""},
		{"Llama-2-70B TP2, A100-80GB, decode batch 1", "splitwise", false, "tpot", 54.8, 0.30, splitDecode("a100-80gb", 1), ""},
		{"Llama-2-70B TP2, A100-80GB, decode batch 16", "splitwise", false, "tpot", 65.7, 0.30, splitDecode("a100-80gb", 16), ""},
		{"Llama-2-7B, H100, 5 req/s, 591/247: TPOT", "blis", false, "tpot", 7.26, 0.30, blis("llama-2-7b", 1, 5, 591, 247, "tpot"), ""},
		{"Llama-2-7B, H100, 8 req/s, 575/248: TPOT", "blis", false, "tpot", 8.22, 0.30, blis("llama-2-7b", 1, 8, 575, 248, "tpot"), ""},
		{"Llama-2-7B, H100, 20 req/s, 575/248: TPOT", "blis", true, "tpot", 16.6, 0.15, blis("llama-2-7b", 1, 20, 575, 248, "tpot"), ""},
		{"CodeLlama-34B TP2, H100, 8 req/s, 574/248: TPOT", "blis", false, "tpot", 14.77, 0.30, blis("codellama-34b", 2, 8, 574, 248, "tpot"), ""},
		{"CodeLlama-34B TP2, H100, 20 req/s, 574/248: TPOT", "blis", false, "tpot", 17.0, 0.65, blis("codellama-34b", 2, 20, 574, 248, "tpot"), missCapacity},
		{"Llama-2-70B TP4, H100, 8 req/s, 575/248: TPOT", "blis", false, "tpot", 18.71, 0.30, blis("llama-2-70b", 4, 8, 575, 248, "tpot"), ""},
		{"Llama-2-70B TP4, H100, 20 req/s, 575/248: TPOT", "blis", false, "tpot", 22.1, 0.45, blis("llama-2-70b", 4, 20, 575, 248, "tpot"), missCapacity},
		{"Mixtral-8x7B TP2, H100, 8 req/s, 571/248: TPOT", "blis", false, "tpot", 19.16, 0.30, blis("mixtral-8x7b", 2, 8, 571, 248, "tpot"), ""},
		{"Mixtral-8x7B TP2, H100, 20 req/s, 571/248: TPOT", "blis", false, "tpot", 20.5, 0.30, blis("mixtral-8x7b", 2, 20, 571, 248, "tpot"), ""},

		{"Llama-3.1-8B, A100-40GB, 1024/128: output rate C=8 / C=1", "musgrave", false, "throughput", 6.6, 0.30,
			func(t *testing.T) float64 {
				return closedLoop(t, "a100-40gb", "llama-3.1-8b", 1, 8, 1024, 128) / closedLoop(t, "a100-40gb", "llama-3.1-8b", 1, 1, 1024, 128)
			}, ""},
		{"Llama-3.1-8B, H200, batch 8, 32/128 offline: output tok/s", "vllm-nightly", false, "throughput", 8 * 128 / 0.833, 0.45,
			func(t *testing.T) float64 {
				return isolatedBatch(t, "h200", "llama-3.1-8b", 1, 8, 32, 128, nil).outputTPS
			}, missOffline},
		{"Llama-3.1-70B TP4, H200, batch 8, 32/128 offline: output tok/s", "vllm-nightly", false, "throughput", 8 * 128 / 2.077, 0.50,
			func(t *testing.T) float64 {
				return isolatedBatch(t, "h200", "llama-3.1-70b", 4, 8, 32, 128, nil).outputTPS
			}, missOffline},
	}
}

type measured struct{ ttftMS, tpotMS, outputTPS float64 }

// isolatedBatch submits batch identical requests at once straight to the
// engine (no front end: an offline batch or a profiled step) and runs them
// to completion.
func isolatedBatch(t *testing.T, gpu, model string, tp, batch, in, out int, cost *simengine.CostParams) measured {
	t.Helper()
	cfg := engineConfig(t, gpu, model, tp)
	cfg.Cost = cost
	// Long single prefills (8192 tokens on Llama-2's 4096 context) as the
	// profiles measured them: unchunked, context extended.
	cfg.MaxModelLen = max(in+out, 4096)
	cfg.MaxNumBatchedTokens = max(cfg.MaxModelLen, 8192)
	e, err := simengine.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		if err := e.Submit(int64(i), in, out); err != nil {
			t.Fatal(err)
		}
	}
	first := make([]int64, batch)
	var last int64
	var ttftSum, tpotSum float64
	for e.HasWork() {
		e.Step(func(em simengine.Emission) {
			if em.Index == 0 {
				first[em.ID] = em.Time
				ttftSum += float64(em.Time) / 1e6
			}
			if em.Finished {
				last = max(last, em.Time)
				if out > 1 {
					tpotSum += float64(em.Time-first[em.ID]) / 1e6 / float64(out-1)
				}
			}
		})
	}
	return measured{ttftMS: ttftSum / float64(batch), tpotMS: tpotSum / float64(batch), outputTPS: float64(batch*out) / (float64(last) / 1e9)}
}

// serving runs an open loop at a constant rate (inference-perf's "constant"
// load) for long enough to reach steady state and returns the mean TTFT and
// mean TPOT of the requests after the first 20 s.
func serving(t *testing.T, gpu, model string, tp int, mod func(*simengine.Config), rate float64, in, out int) measured {
	t.Helper()
	cfg := engineConfig(t, gpu, model, tp)
	mod(&cfg)
	arr, err := workload.NewArrivals("constant", rate, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ttft, tpot float64
	_, err = Run(context.Background(), Config{Engine: cfg, Gen: fixed{in, out}, Arrivals: arr, Duration: 80 * time.Second, Warmup: 20 * time.Second},
		func(r *record.Request) {
			if r.Warmup || r.Error != "" {
				return
			}
			n++
			ttft += float64(r.FirstToken-r.Sent) / 1e6
			tpot += float64(r.Done-r.FirstToken) / 1e6 / float64(out-1)
		})
	if err != nil || n == 0 {
		t.Fatalf("serving run: %v (%d records)", err, n)
	}
	return measured{ttftMS: ttft / float64(n), tpotMS: tpot / float64(n)}
}

// closedLoop runs c users, c×20 requests, and returns the output token
// throughput over the run, as vllm bench serve --max-concurrency reports it.
func closedLoop(t *testing.T, gpu, model string, tp, c, in, out int) float64 {
	t.Helper()
	cfg := engineConfig(t, gpu, model, tp)
	res, err := Run(context.Background(), Config{Engine: cfg, Gen: fixed{in, out}, Concurrency: c, Requests: int64(c * 20)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return float64(res.Tokens) / res.End.Seconds()
}

// TestValidationTable holds knee sim to every published point within its
// pinned tolerance, and requires a stated reason for every check-only point
// beyond 30%. It logs the table docs/simulator.md shows and each metric's
// median and largest error over the check-only points (the aim is at most
// 15% and 30%; the doc says where that is not met).
func TestValidationTable(t *testing.T) {
	if testing.Short() {
		t.Skip("the validation table simulates ~20 serving runs")
	}
	byMetric := map[string][]float64{}
	var tbl, notes strings.Builder
	fmt.Fprintf(&tbl, "| case | source | published | knee sim | error | use |\n|---|---|---|---|---|---|\n")
	for _, p := range validationPoints() {
		got := p.predict(t)
		rel := (got - p.published) / p.published
		use := "check"
		if p.fit {
			use = "fit"
		} else {
			byMetric[p.metric] = append(byMetric[p.metric], math.Abs(rel))
		}
		if p.miss != "" {
			use += " (miss, below)"
			fmt.Fprintf(&notes, "- %s: %s\n", p.name, p.miss)
		}
		unit := " ms"
		if p.metric == "throughput" {
			unit = ""
		}
		fmt.Fprintf(&tbl, "| %s | %s | %.4g%s | %.4g%s | %+.1f%% | %s |\n", p.name, p.source, p.published, unit, got, unit, rel*100, use)
		if math.Abs(rel) > p.tol {
			t.Errorf("%s: knee sim %.4g, published %.4g (%s): error %+.1f%%, tolerance ±%.0f%%", p.name, got, p.published, p.source, rel*100, p.tol*100)
		}
		if !p.fit && math.Abs(rel) > 0.30 && p.miss == "" {
			t.Errorf("%s: check-only point off by %+.1f%% with no stated reason (validationPoint.miss)", p.name, rel*100)
		}
	}
	t.Logf("validation table:\n%s\n%s", tbl.String(), notes.String())
	for _, m := range []string{"ttft", "tpot", "throughput"} {
		errs := byMetric[m]
		slices.Sort(errs)
		med := errs[len(errs)/2]
		if len(errs)%2 == 0 {
			med = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
		}
		t.Logf("%s: %d check-only points, median |error| %.1f%%, max %.1f%%", m, len(errs), med*100, errs[len(errs)-1]*100)
	}
}
