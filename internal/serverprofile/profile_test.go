package serverprofile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
)

// A profile written and read back is the same profile, and prices the
// same cost; an explicit zero survives (it replaces the default).
func TestWriteLoadRoundTrip(t *testing.T) {
	for _, name := range Names() {
		p, _ := Lookup(name)
		var b bytes.Buffer
		if err := p.Write(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		q, err := Resolve(path)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b.String())
		}
		if got, want := q.Cost(simengine.DefaultCost), p.Cost(simengine.DefaultCost); got != want {
			t.Errorf("%s: read back prices %+v, want %+v", name, got, want)
		}
	}
	p, _ := Lookup("kvcached-h100")
	c := p.Cost(simengine.DefaultCost)
	if c.StepOverheadNS != 1_400_000 || c.FrontEndSerialNS != 9_000_000 || c.ComputeEfficiency != 1 {
		t.Errorf("kvcached-h100: %+v", c)
	}
	w, _ := Lookup("wmx-l4")
	if c := w.Cost(simengine.DefaultCost); c.FrontEndSerialNS != 0 || c.StepPerSeqNS != 52_000 {
		t.Errorf("wmx-l4: serial %d (want an explicit 0 over the defaults' %d), per seq %d", c.FrontEndSerialNS, simengine.DefaultCost.FrontEndSerialNS, c.StepPerSeqNS)
	}
}

// Bad profiles are refused naming the field.
func TestLoadRefusesBadProfiles(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{"name: x\nengine: vllm\nversion: '1'\nstep_overhead_msec: 2\n", "step_overhead_msec"},
		{"name: x\nengine: triton\n", "engine"},
		{"name: x\nengine: vllm\ncompute_efficiency: 1.5\n", "compute_efficiency"},
		{"name: x\nengine: vllm\nfront_end_ms: -1\n", "front_end"},
		{"engine: vllm\n", "name"},
		{"", "empty"},
	} {
		path := filepath.Join(dir, "p.yaml")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.body, err, c.want)
		}
	}
	if _, err := Resolve("no-such-profile"); err == nil || !strings.Contains(err.Error(), "vllm") {
		t.Errorf("unknown name: %v, want the built-in names listed", err)
	}
}

// The TensorRT-LLM profile schedules as that engine does: whole prompts
// in an 8,192-token step, a longer prompt refused, and the model's whole
// context served (TensorRT-LLM limits the input, not max_seq_len).
func TestTensorRTLLMProfileSchedules(t *testing.T) {
	cfg := enginetest.H100Llama8B(t, 1)
	cfg.MaxNumBatchedTokens = 2048
	m := cfg.Model
	p, _ := Lookup("tensorrt-llm")
	p.Apply(&cfg)
	if cfg.ChunkedPrefill || !cfg.RefuseLongPrompts || cfg.MaxNumBatchedTokens != 8192 || cfg.Cost.StepOverheadNS != 3_500_000 {
		t.Errorf("tensorrt-llm: chunked %v, refuses long prompts %v, budget %d, T0 %d", cfg.ChunkedPrefill, cfg.RefuseLongPrompts, cfg.MaxNumBatchedTokens, cfg.Cost.StepOverheadNS)
	}
	eng, err := simengine.NewEngine(cfg)
	if err != nil {
		t.Fatalf("tensorrt-llm on %s: %v", m.Name, err)
	}
	if got := eng.Config().MaxModelLen; got != m.MaxContext {
		t.Errorf("max model len %d, want the model's %d", got, m.MaxContext)
	}
	if err := eng.SubmitAt(1, 8193, 16, 0); !errors.Is(err, simengine.ErrPromptOverBudget) {
		t.Errorf("an 8,193-token prompt: %v, want ErrPromptOverBudget", err)
	}
}

// The host profiles were fitted before the all-reduce latency grew with
// tp and before the expert compute efficiency was a term, so they keep
// the flat latency and the full expert rate they were fitted with; a
// profile file can set the per-peer latency and the MoE expert
// efficiencies, and an efficiency out of (0, 1] is refused naming the
// field.
func TestProfilePhysicsTerms(t *testing.T) {
	g, _ := Lookup("gpustack-a100-235b")
	if c := g.Cost(simengine.DefaultCost); c.AllReducePerPeerNS != 0 {
		t.Errorf("gpustack-a100-235b: all-reduce per peer %d ns; fitted with none", c.AllReducePerPeerNS)
	}
	if c := g.Cost(simengine.DefaultCost); c.ExpertComputeEfficiency != 1 {
		t.Errorf("gpustack-a100-235b: expert compute efficiency %v; fitted with none (1)", c.ExpertComputeEfficiency)
	}
	path := filepath.Join(t.TempDir(), "moe.yaml")
	if err := os.WriteFile(path, []byte("name: moe-host\nengine: vllm\nall_reduce_per_peer_us: 5\nexpert_small_batch_efficiency: 0.4\nexpert_compute_efficiency: 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c := q.Cost(simengine.DefaultCost); c.AllReducePerPeerNS != 5000 || c.ExpertSmallBatchEfficiency != 0.4 || c.ExpertComputeEfficiency != 0.5 {
		t.Errorf("per peer %d ns, expert efficiencies %v and %v; want 5000, 0.4 and 0.5", c.AllReducePerPeerNS, c.ExpertSmallBatchEfficiency, c.ExpertComputeEfficiency)
	}
	if err := os.WriteFile(path, []byte("name: moe-host\nengine: vllm\nexpert_compute_efficiency: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "expert_compute_efficiency") {
		t.Errorf("an expert compute efficiency of 0 loaded: %v", err)
	}
	if err := os.WriteFile(path, []byte("name: moe-host\nengine: vllm\nexpert_small_batch_efficiency: 1.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "expert_small_batch_efficiency") {
		t.Errorf("an expert efficiency of 1.5 loaded: %v", err)
	}
}

// vLLM's start-up sampler run is vLLM's: a profile's engine says whether
// its KV cache is sized after it (vLLM's profiles) or without it
// (SGLang's, TensorRT-LLM's and other engines').
func TestSamplerWarmupByEngine(t *testing.T) {
	for _, name := range Names() {
		p, _ := Lookup(name)
		var cfg simengine.Config
		p.Apply(&cfg)
		want := map[string]bool{FamilyVLLM: false, FamilySGLang: true, FamilyTRTLLM: true, FamilyOther: true}[p.Engine]
		if cfg.NoSamplerWarmup != want {
			t.Errorf("%s (%s): NoSamplerWarmup %v, want %v", name, p.Engine, cfg.NoSamplerWarmup, want)
		}
	}
	// So does a profile file's engine.
	for engine, want := range map[string]bool{"vllm": false, "sglang": true, "other": true} {
		path := filepath.Join(t.TempDir(), "p.yaml")
		if err := os.WriteFile(path, []byte("name: p\nengine: "+engine+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Resolve(path)
		if err != nil {
			t.Fatal(err)
		}
		var cfg simengine.Config
		p.Apply(&cfg)
		if cfg.NoSamplerWarmup != want {
			t.Errorf("engine %s: NoSamplerWarmup %v, want %v", engine, cfg.NoSamplerWarmup, want)
		}
	}
	// A profile file switches the charge on, and a negative one is refused.
	dir := t.TempDir()
	on := filepath.Join(dir, "on.yaml")
	if err := os.WriteFile(on, []byte("name: on\nengine: vllm\nsampler_warmup_bytes_per_logit: 31\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(on)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Cost(simengine.DefaultCost); c.SamplerWarmupBytesPerLogit != simengine.VLLMSamplerWarmupBytesPerLogit {
		t.Errorf("sampler_warmup_bytes_per_logit 31: cost has %v", c.SamplerWarmupBytesPerLogit)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\nengine: vllm\nsampler_warmup_bytes_per_logit: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(bad); err == nil || !strings.Contains(err.Error(), "sampler_warmup_bytes_per_logit") {
		t.Errorf("a negative sampler_warmup_bytes_per_logit: %v, want it named", err)
	}
}

// A report names the engine a profile resembles: knee's defaults and the
// vLLM hosts vLLM, the SGLang and TensorRT-LLM families theirs, another
// engine (Splitwise's profiled one) none.
func TestProfileLike(t *testing.T) {
	var none *Profile
	if got := none.Like(); got != "vLLM-like" {
		t.Errorf("no profile: %q", got)
	}
	for name, want := range map[string]string{"vllm": "vLLM-like", "kvcached-h100": "vLLM-like", "sglang": "SGLang-like", "nim-h100": "TensorRT-LLM-like", "splitwise-h100": ""} {
		p, ok := Lookup(name)
		if !ok {
			t.Fatalf("no built-in %s", name)
		}
		if got := p.Like(); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
