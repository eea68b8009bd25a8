package serverprofile

import "github.com/knee-dev/knee/internal/simengine"

func f(v float64) *float64 { return &v }

// beforeRefit are the defaults' fitted constants before the
// leave-one-source-out refit (T0 0.6 ms, no cost per sequence, a 7.3 ms
// front end, no serial admission, compute efficiency 1, an all-reduce
// latency that did not grow with tp, no expert compute penalty): the base
// every host profile below was fitted on, so each names them where it
// keeps them.
func beforeRefit(p Profile) Profile {
	for _, c := range []struct {
		dst **float64
		v   float64
	}{{&p.StepOverheadMS, 0.6}, {&p.StepPerSeqUS, 0}, {&p.FrontEndMS, 7.3}, {&p.FrontEndSerialMS, 0}, {&p.FrontEndSerialSplit, 0}, {&p.ComputeEfficiency, 1}, {&p.AllReducePerPeerUS, 0}, {&p.ExpertComputeEfficiency, 1}} {
		if *c.dst == nil {
			*c.dst = f(c.v)
		}
	}
	return p
}

// tensorRTLLM is TensorRT-LLM's scheduling: no chunked context, so a
// step's budget holds a whole prompt (max_num_tokens 8192 by default),
// and a longer prompt is refused (NVIDIA/TensorRT-LLM issues 6539 and
// 9277: its input limit is min(max_seq_len - 1, max_num_tokens)).
// Its KV cache is sized without vLLM's start-up sampler run.
// T0 and the compute efficiency are calibrated on NIM's run at one user
// of 5,000 in / 500 out (its ITL and TTFT).
func tensorRTLLM(p Profile) Profile {
	p.Engine, p.NoChunkedPrefill, p.MinBatchedTokens, p.RefuseLongPrompts = FamilyTRTLLM, true, 8192, true
	p.StepOverheadMS, p.ComputeEfficiency = f(3.5), f(0.765)
	return beforeRefit(p)
}

// builtin are the named profiles: engine-family defaults, and each host of
// the validation table with the constants fitted on its own rows
// (docs/validation.md, "In-source fit"; internal/sim's validation test
// runs every row from one of these).
var builtin = func() map[string]Profile {
	m := map[string]Profile{}
	for _, p := range []Profile{
		{Name: "vllm", Engine: FamilyVLLM, Version: "V1 (0.10 and later)",
			Description: "knee's defaults: constants fitted across every source of the validation table at once (leave one source out)",
			Source:      "docs/validation.md"},
		{Name: "sglang", Engine: FamilySGLang, Version: "0.4 and later",
			Description:     "the vLLM defaults with SGLang's scheduling: prefill batches run on their own, before decodes (no mixed chunks), a request admitted only when its whole prompt fits, up to max_running_requests sized from the KV cache; its KV cache is sized by its static memory fraction, without vLLM's start-up sampler run",
			Source:          "sgl-project/sglang server_args.py (enable_mixed_chunk off by default); no constant fitted to SGLang",
			SeparatePrefill: true, RunningCapFromKV: true,
			// SGLang's chunked_prefill_size on GPUs of 40 GB and more (the
			// vLLM default on A100s would be 2,048).
			MinBatchedTokens: 8192},
		tensorRTLLM(Profile{Name: "tensorrt-llm", Version: "v1.0 (PyTorch backend)",
			Description: "TensorRT-LLM: no chunked context, overlap scheduling; T0 and compute efficiency calibrated on NIM",
			Source:      "docs.nvidia.com/nim/benchmarking/llm (Llama-3.3-70B FP8 TP2 on H100s, one user)"}),
		tensorRTLLM(Profile{Name: "nim-h100", Version: "NIM 1.8.0",
			Description:       "NVIDIA NIM's TensorRT-LLM C++ executor: synchronous steps",
			Source:            "docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance",
			NoAsyncScheduling: true}),
		beforeRefit(Profile{Name: "vllm-before-refit", Engine: FamilyVLLM, Version: "V1",
			Description: "knee's defaults before the leave-one-source-out refit, fitted on single-stream decodes and BLIS's TTFT at 5 req/s",
			Source:      "docs/validation.md (in-source fit)"}),
		// T0 refitted to the same row with V0's work per sequence
		// (simengine.VLLMV0StepPerSeqNS, fitted leave one source out on the
		// V0 sources): 2.37 ms a step at batch 8 is 1.57 + 8 × 0.1.
		beforeRefit(Profile{Name: "vllm-v0", Engine: FamilyVLLM, Version: "V0 (2024 nightly benchmarks)",
			Description:    "vLLM's V0 engine: scheduling, input preparation, sampling and detokenization between steps (0.97 ms a step and 0.1 ms a sequence more)",
			Source:         "T0 fitted on the nightly latency test of Llama-3-8B on H200 (833 ms a batch); the cost per sequence leave one source out on the V0 sources (docs/validation.md)",
			StepOverheadMS: f(0.6 + 1.77 - 8*simengine.VLLMV0StepPerSeqNS/1e6), StepPerSeqUS: f(simengine.VLLMV0StepPerSeqNS / 1e3)}),
		beforeRefit(Profile{Name: "kvcached-h100", Engine: FamilyVLLM, Version: "0.19",
			Description:    "the kvcached benchmark's H100 host: a front end that admits one request at a time",
			Source:         "github.com/ovg-project/kvcached benchmarks/bench_layout; fitted on its rows",
			StepOverheadMS: f(1.4), StepPerSeqUS: f(16), FrontEndMS: f(23.5), FrontEndSerialMS: f(9), FrontEndSerialSplit: f(0.2)}),
		beforeRefit(Profile{Name: "wmx-l4", Engine: FamilyVLLM, Version: "0.23",
			Description:  "an L4 on a 4-vCPU GKE node: the API server slows as it streams",
			Source:       "ai.wmx.dev/benchmarks; fitted on its rows",
			StepPerSeqUS: f(52), FrontEndMS: f(17.3), FrontEndLoadMS: f(22)}),
		beforeRefit(Profile{Name: "gpustack-a100", Engine: FamilyVLLM, Version: "0.11",
			Description:      "GPUStack's A100 machine (Qwen3-14B): slow prefill, an all-reduce at PCIe bandwidth",
			Source:           "github.com/gpustack/gpustack docs/performance-lab; fitted on its bursts",
			FrontEndSerialMS: f(9.5), FrontEndSerialSplit: f(0.6), ComputeEfficiency: f(0.62), AllReduceEfficiency: f(0.133)}),
		beforeRefit(Profile{Name: "gpustack-a100-235b", Engine: FamilyVLLM, Version: "0.11",
			Description:      "GPUStack's A100 machine serving Qwen3-235B-A22B at TP8",
			Source:           "github.com/gpustack/gpustack docs/performance-lab; fitted on its bursts",
			FrontEndSerialMS: f(8), FrontEndSerialSplit: f(0.6), ComputeEfficiency: f(0.62), AllReduceEfficiency: f(0.133)}),
		beforeRefit(Profile{Name: "gpustack-h100", Engine: FamilyVLLM, Version: "0.11",
			Description:      "GPUStack's H100 machine (Qwen3-8B/14B): slow prefill",
			Source:           "github.com/gpustack/gpustack docs/performance-lab; fitted on its bursts",
			FrontEndSerialMS: f(20), FrontEndSerialSplit: f(0.6), ComputeEfficiency: f(0.41)}),
		beforeRefit(Profile{Name: "gpustack-h100-235b", Engine: FamilyVLLM, Version: "0.11",
			Description:      "GPUStack's H100 machine serving Qwen3-235B-A22B at TP8",
			Source:           "github.com/gpustack/gpustack docs/performance-lab; fitted on its bursts",
			FrontEndSerialMS: f(8.8), FrontEndSerialSplit: f(0.6), ComputeEfficiency: f(0.41)}),
		beforeRefit(Profile{Name: "splitwise-h100", Engine: FamilyOther, Version: "SplitwiseSim's profiled engine",
			Description:    "an engine without CUDA graphs, step times profiled offline (no API server)",
			Source:         "github.com/Mutinifni/splitwise-sim data/perf_model.csv; fitted on its H100 rows",
			StepOverheadMS: f(8.4), StepPerSeqUS: f(288), ComputeEfficiency: f(0.605), KVMemEfficiency: f(0), NoFrontEnd: true}),
		beforeRefit(Profile{Name: "splitwise-a100", Engine: FamilyOther, Version: "SplitwiseSim's profiled engine",
			Description:    "an engine without CUDA graphs, step times profiled offline (no API server)",
			Source:         "github.com/Mutinifni/splitwise-sim data/perf_model.csv; fitted on its A100 rows",
			StepOverheadMS: f(8.4), StepPerSeqUS: f(654), ComputeEfficiency: f(0.72), KVMemEfficiency: f(0), NoFrontEnd: true}),
	} {
		m[p.Name] = p
	}
	return m
}()
