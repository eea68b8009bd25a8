package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every real config.json of internal/hfconfig/testdata runs end to end
// through knee sim --model-config, on a GPU and TP it fits.
func TestSimModelConfigEndToEnd(t *testing.T) {
	for _, c := range []struct {
		file, gpu, tp string
	}{
		{"llama-3.3-70b-instruct.json", "h100", "4"},
		{"llama-4-scout-17b-16e-instruct.json", "h100", "4"},
		{"deepseek-v3.json", "h200", "8"},
		{"gpt-oss-120b.json", "h100", "1"},
		{"mistral-7b-instruct-v0.3.json", "l40s", "1"},
		{"qwen2.5-7b-instruct.json", "a10g", "1"},
		{"qwen3-32b.json", "h100", "1"},
		{"phi-4.json", "h100", "1"},
	} {
		t.Run(c.file, func(t *testing.T) {
			var s struct {
				Completed int                   `json:"completed"`
				TPOT      struct{ P50 float64 } `json:"tpot_ms"`
			}
			simJSON(t, &s, "--model-config", filepath.Join("..", "hfconfig", "testdata", c.file), "--gpu", c.gpu, "--tp", c.tp,
				"--concurrency", "2", "--requests", "4", "--input-tokens", "256", "--output-tokens", "32", "--max-model-len", "4096")
			if s.Completed != 4 || !(s.TPOT.P50 > 0) {
				t.Errorf("%d completed, TPOT p50 %v ms; want 4 and a positive TPOT", s.Completed, s.TPOT.P50)
			}
		})
	}
}

// A malformed or unsupported config, or an unknown KV dtype, is a usage
// error (exit 2) naming the flag and the field, in sim, serve and plan.
func TestModelConfigRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	malformed := write("malformed.json", `{"model_type": "llama", "hidden_size": 4096,`)
	mamba := write("mamba.json", `{"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24}`)
	noLayers := write("config.json", `{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "max_position_embeddings": 64, "intermediate_size": 128}`)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"sim", "--model-config", malformed}, []string{"--model-config", "not a JSON config"}},
		{[]string{"sim", "--model-config", mamba}, []string{"--model-config", `"model_type"`, "mamba"}},
		{[]string{"sim", "--model-config", noLayers}, []string{"--model-config", `"num_hidden_layers"`, "missing"}},
		{[]string{"sim", "--model-config", filepath.Join(dir, "absent.json")}, []string{"--model-config", "absent.json"}},
		{[]string{"sim", "--kv-cache-dtype", "int3"}, []string{"--kv-cache-dtype", `"int3"`, "fp8"}},
		{[]string{"sim", "sweep", "--model-config", mamba}, []string{"--model-config", `"model_type"`}},
		{[]string{"serve", "--model-config", mamba}, []string{"--model-config", `"model_type"`}},
		{[]string{"plan", "--model-config", mamba, "--rate", "1", "--slo", "p95(ttft)<2s"}, []string{"--model-config", `"model_type"`}},
		{[]string{"plan", "--kv-cache-dtype", "fp4", "--rate", "1", "--slo", "p95(ttft)<2s"}, []string{"--kv-cache-dtype", `"fp4"`}},
	} {
		code, _, errs := kneeCmd(t, c.args...)
		if code != 2 {
			t.Errorf("knee %v: exit %d, want 2 (stderr %q)", c.args, code, errs)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("knee %v: stderr %q does not name %q", c.args, errs, w)
			}
		}
	}
}

// --kv-cache-dtype fp8 doubles the KV cache's tokens against bf16, and
// auto is bf16 for the FP8-weight 70B preset (vLLM's default).
func TestSimKVCacheDtypeFlag(t *testing.T) {
	re := regexp.MustCompile(`KV cache (\d+) tokens`)
	capacity := func(dtype string) int {
		t.Helper()
		code, out, errs := kneeCmd(t, "sim", "--model", "llama-3.1-70b-fp8", "--tp", "2", "--kv-cache-dtype", dtype,
			"--requests", "2", "--concurrency", "1", "--input-tokens", "64", "--output-tokens", "8", "--seed", "1", "--no-store", "--detail")
		if code != 0 {
			t.Fatalf("knee sim --kv-cache-dtype %s: exit %d: %s", dtype, code, errs)
		}
		m := re.FindStringSubmatch(out + errs)
		if m == nil {
			t.Fatalf("knee sim --kv-cache-dtype %s: no KV capacity in the report:\n%s", dtype, out)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	auto, bf16, fp8 := capacity("auto"), capacity("bf16"), capacity("fp8")
	t.Logf("KV capacity: auto %d, bf16 %d, fp8 %d tokens", auto, bf16, fp8)
	if auto != bf16 {
		t.Errorf("auto %d tokens, bf16 %d: auto should cache in BF16", auto, bf16)
	}
	if r := float64(fp8) / float64(bf16); r < 1.99 || r > 2.01 {
		t.Errorf("fp8/bf16 = %.4f, want 2", r)
	}
}
