package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// knee sim gives its headline figures the held-out range (text and JSON);
// a host's server profile is a fit and gets none; --server-profile names
// a built-in or a file, and a bad one is a usage error naming the flag.
func TestSimPredictionRangesAndServerProfile(t *testing.T) {
	type out struct {
		Ranges *struct {
			Share   float64 `json:"share"`
			Figures []struct {
				Metric           string
				Value, Low, High float64
			} `json:"figures"`
		} `json:"prediction_ranges"`
		Run struct {
			Config map[string]string `json:"config"`
		} `json:"run"`
	}
	args := []string{"--concurrency", "8", "--requests", "64", "--input-tokens", "512", "--output-tokens", "64"}
	var def out
	simJSON(t, &def, args...)
	if def.Ranges == nil || def.Ranges.Share != 0.8 {
		t.Fatalf("no prediction_ranges in knee sim --json: %+v", def.Ranges)
	}
	seen := map[string]bool{}
	for _, f := range def.Ranges.Figures {
		seen[f.Metric] = true
		if !(f.Low < f.Value && f.Value < f.High) {
			t.Errorf("%s: %v not inside its range %v–%v", f.Metric, f.Value, f.Low, f.High)
		}
	}
	for _, m := range []string{"ttft_ms.p95", "tpot_ms.p50", "output_token_throughput_tps"} {
		if !seen[m] {
			t.Errorf("prediction_ranges lacks %s: %+v", m, def.Ranges.Figures)
		}
	}
	code, text, errs := kneeCmd(t, append([]string{"sim", "--seed", "1", "--quiet", "--no-store"}, args...)...)
	if code != 0 || !strings.Contains(text, "on hosts knee has not seen, 80% of held-out errors") || !strings.Contains(text, "p95 TTFT") {
		t.Errorf("text report lacks the ranges (exit %d, %s):\n%s", code, errs, text)
	}

	var host out
	simJSON(t, &host, append(args, "--server-profile", "kvcached-h100")...)
	if host.Ranges != nil || host.Run.Config["server_profile"] != "kvcached-h100" {
		t.Errorf("kvcached-h100: ranges %+v (want none: a host's fit), config server_profile %q", host.Ranges, host.Run.Config["server_profile"])
	}
	for _, bad := range [][]string{{"--server-profile", "no-such-host"}, {"--server-profile", "vllm", "--profile", "x.yaml"}} {
		code, _, errs := kneeCmd(t, append([]string{"sim", "--requests", "2"}, bad...)...)
		if code != ExitUsage || !strings.Contains(errs, "--server-profile") {
			t.Errorf("%v: exit %d, %s; want 2 naming --server-profile", bad, code, errs)
		}
	}
}

// knee plan says the headroom it planned with; --confidence 0 plans on
// the point estimate; a confidence outside [0, 1) is a usage error.
func TestPlanConfidence(t *testing.T) {
	// One replica's p95 TTFT on the point estimate is ~100 ms, inside the
	// objective by half again, and outside it with the TTFT headroom
	// (×2.3): the headroom buys the replica. (At 500 ms only the capacity
	// factor decided, on an edge: ×0.76 bought a second replica at 40
	// req/s, ×0.77 did not.)
	base := []string{"plan", "--model", "llama-3.1-8b", "--gpus", "h100", "--tp", "1", "--max-replicas", "8",
		"--max-num-seqs", "0", "--max-num-batched-tokens", "0", "--routers", "round-robin",
		"--rate", "40", "--input-tokens", "512", "--output-tokens", "128", "--requests", "400", "--validate-requests", "400",
		"--slo", "p95(ttft)<150ms", "--seed", "2", "--json", "--no-store"}
	replicas := func(conf string) (int, float64) {
		code, js, errs := kneeCmd(t, append(base, "--confidence", conf)...)
		if code != 0 {
			t.Fatalf("--confidence %s: exit %d: %s", conf, code, errs)
		}
		var a struct {
			Winner   *struct{ Replicas int } `json:"winner"`
			Headroom struct {
				TTFTFactor float64 `json:"ttft_factor"`
			} `json:"headroom"`
		}
		if err := json.Unmarshal([]byte(js), &a); err != nil || a.Winner == nil {
			t.Fatalf("--confidence %s: %v\n%s", conf, err, js)
		}
		return a.Winner.Replicas, a.Headroom.TTFTFactor
	}
	point, f0 := replicas("0")
	safe, f8 := replicas("0.8")
	t.Logf("replicas: %d on the point estimate, %d at confidence 0.8 (TTFT ×%.2f)", point, safe, f8)
	if f0 != 1 || f8 <= 1 || safe <= point {
		t.Errorf("confidence 0: %d replicas, TTFT ×%v; 0.8: %d, ×%v; want more replicas with the headroom", point, f0, safe, f8)
	}
	if code, _, errs := kneeCmd(t, append(base, "--confidence", "1.5")...); code != ExitUsage || !strings.Contains(errs, "--confidence") {
		t.Errorf("--confidence 1.5: exit %d, %s", code, errs)
	}
}

// Every built-in server profile runs knee sim's defaults as given (the
// TensorRT-LLM ones without chunked prefill refused to start on a model
// whose context exceeds their 8,192-token step), and names its engine
// family; a prompt over TensorRT-LLM's step is a usage error naming the
// flag that raises it, in sim and sim sweep.
func TestSimBuiltinServerProfilesRun(t *testing.T) {
	for profile, like := range map[string]string{"vllm": "vLLM-like", "sglang": "SGLang-like", "tensorrt-llm": "TensorRT-LLM-like", "nim-h100": "TensorRT-LLM-like"} {
		code, text, errs := kneeCmd(t, "sim", "--server-profile", profile, "--requests", "16", "--concurrency", "4", "--seed", "1", "--quiet", "--no-store")
		if code != 0 || !strings.Contains(text, "simulated "+like+" engine") {
			t.Errorf("--server-profile %s: exit %d, %s; want a report on a simulated %s engine:\n%s", profile, code, errs, like, text)
		}
	}
	long := []string{"--server-profile", "tensorrt-llm", "--requests", "4", "--input-tokens", "9000", "--output-tokens", "8", "--no-store"}
	for _, cmd := range [][]string{{"sim"}, {"sim", "sweep", "--concurrency", "1,2"}} {
		code, _, errs := kneeCmd(t, append(cmd, long...)...)
		if code != ExitUsage || !strings.Contains(errs, "--max-num-batched-tokens") || strings.Contains(errs, "--max-model-len") {
			t.Errorf("knee %v, 9,000-token prompts on tensorrt-llm: exit %d, %s; want 2 naming --max-num-batched-tokens (not --max-model-len)", cmd, code, errs)
		}
	}
}

// A prediction on a GPU (or of a model) no validated source ran on widens
// its ranges and says so beside them (text and JSON), in knee sim and at
// sim sweep's SLO-safe point; on a validated GPU it neither widens nor
// says so.
func TestSimRangesWidenOnUnvalidatedGPU(t *testing.T) {
	args := []string{"--model", "llama-3.1-8b", "--concurrency", "8", "--requests", "64", "--input-tokens", "512", "--output-tokens", "64"}
	type figs struct {
		Ranges *struct {
			Basis   string `json:"basis"`
			Figures []struct {
				Metric           string
				Value, Low, High float64
			} `json:"figures"`
		} `json:"prediction_ranges"`
	}
	factors := map[string]map[string][2]float64{}
	for _, gpu := range []string{"h100", "b200"} {
		var o figs
		simJSON(t, &o, append(args, "--gpu", gpu)...)
		if o.Ranges == nil {
			t.Fatalf("%s: no prediction_ranges", gpu)
		}
		widened := strings.Contains(o.Ranges.Basis, "no source on B200: range widened")
		if widened != (gpu == "b200") {
			t.Errorf("--gpu %s: basis %q (want the widening only on B200)", gpu, o.Ranges.Basis)
		}
		factors[gpu] = map[string][2]float64{}
		for _, f := range o.Ranges.Figures {
			factors[gpu][f.Metric] = [2]float64{f.Low / f.Value, f.High / f.Value}
		}
	}
	for m, h := range factors["h100"] {
		b, ok := factors["b200"][m]
		if !ok {
			continue
		}
		if b[0] > h[0]+1e-9 || b[1] < h[1]-1e-9 {
			t.Errorf("%s: B200's range ×%.2f–×%.2f is narrower on a side than H100's ×%.2f–×%.2f", m, b[0], b[1], h[0], h[1])
		}
	}
	code, text, errs := kneeCmd(t, append([]string{"sim", "--gpu", "b200", "--seed", "1", "--quiet", "--no-store"}, args...)...)
	if code != 0 || !strings.Contains(text, "no source on B200: range widened") {
		t.Errorf("knee sim --gpu b200: exit %d, %s; the text report lacks the widening:\n%s", code, errs, text)
	}
	// A model without a source is widened too, on a validated GPU.
	code, text, errs = kneeCmd(t, "sim", "--gpu", "h100", "--model", "qwen3-30b-a3b", "--concurrency", "8", "--requests", "32",
		"--input-tokens", "256", "--output-tokens", "32", "--seed", "1", "--quiet", "--no-store")
	if code != 0 || !strings.Contains(text, "no source on Qwen3-30B-A3B: range widened") || strings.Contains(text, "no source on H100") {
		t.Errorf("knee sim --model qwen3-30b-a3b: exit %d, %s; want the model's widening only:\n%s", code, errs, text)
	}
	code, text, errs = kneeCmd(t, "sim", "sweep", "--gpu", "b200", "--model", "llama-3.1-8b", "--concurrency", "1,4,16", "--requests", "48",
		"--input-tokens", "256", "--output-tokens", "32", "--slo", "p95(ttft)<100ms", "--seed", "1", "--quiet", "--no-store")
	// The sweep's report wraps its lines by width: the reason may break
	// across lines.
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(text), " "), "no source on B200: range widened") {
		t.Errorf("knee sim sweep --gpu b200: exit %d, %s; lacks the widening:\n%s", code, errs, text)
	}
}
