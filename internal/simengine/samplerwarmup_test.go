package simengine

import "testing"

// vLLM V1 sizes its KV cache after a start-up run that samples
// max_num_seqs requests over the whole vocabulary: gpt-oss-120b on one
// H100 (1,024 sequences, 201,088 tokens) holds 31 bytes a logit at that
// run's peak. vLLM's own start-up logs for it leave 7.4–7.6 GiB of the
// usable memory beside the weights and the KV cache (vllm-project/vllm
// issue 23278: 65.97 GiB of weights, −2.14 GiB of KV at 0.9; issue 27508:
// 1.71 GiB at 0.95); knee's profile-run peak and reserve must land there.
func TestSamplerWarmupGptOss120bH100(t *testing.T) {
	e := mustEngine(t, "h100", "gpt-oss-120b", 1, withSamplerWarmup)
	if e.cfg.MaxNumSeqs != 1024 {
		t.Fatalf("max num seqs %d, want vLLM's 1024 on an H100", e.cfg.MaxNumSeqs)
	}
	beside := (e.mem.profilePeak() + e.mem.reserveBytes) / (1 << 30)
	t.Logf("%s; sampler run %.2f GiB", e.mem, e.mem.samplerBytes/(1<<30))
	if beside < 7.4 || beside > 7.6 {
		t.Errorf("profile-run peak + reserve = %.2f GiB, want 7.4–7.6 GiB (vLLM's start-up logs)", beside)
	}
	if e.mem.samplerBytes <= e.mem.activationBytes {
		t.Errorf("sampler run %.2f GiB does not exceed the forward pass's %.2f GiB", e.mem.samplerBytes/(1<<30), e.mem.activationBytes/(1<<30))
	}
}

// The charge follows the engine: an engine without the sampler run
// (TensorRT-LLM, SGLang) keeps the forward pass's peak only, and the KV
// cache grows by the difference; fewer sequences sample fewer rows.
func TestSamplerWarmupFollowsEngine(t *testing.T) {
	vllm := mustEngine(t, "h100", "gpt-oss-120b", 1, withSamplerWarmup)
	other := mustEngine(t, "h100", "gpt-oss-120b", 1, func(c *Config) { withSamplerWarmup(c); c.NoSamplerWarmup = true })
	if other.mem.samplerBytes != 0 {
		t.Errorf("NoSamplerWarmup: sampler run %.0f bytes, want 0", other.mem.samplerBytes)
	}
	got := other.mem.kvBytes - vllm.mem.kvBytes
	want := vllm.mem.samplerBytes - vllm.mem.activationBytes
	if got < want*0.999 || got > want*1.001 {
		t.Errorf("KV without the sampler run grows %.3f GiB, want %.3f GiB", got/(1<<30), want/(1<<30))
	}
	if other.st.KVCapacityTokens <= vllm.st.KVCapacityTokens {
		t.Errorf("KV tokens %d without the run, %d with it", other.st.KVCapacityTokens, vllm.st.KVCapacityTokens)
	}
	few := mustEngine(t, "h100", "gpt-oss-120b", 1, func(c *Config) { withSamplerWarmup(c); c.MaxNumSeqs = 256 })
	if r := few.mem.samplerBytes / vllm.mem.samplerBytes; r < 0.249 || r > 0.251 {
		t.Errorf("256 sequences: sampler run %.3f of 1,024's, want 0.25", r)
	}
	// The defaults do not charge it (tried, not shipped).
	def := mustEngine(t, "h100", "gpt-oss-120b", 1, nil)
	if def.mem.kvBytes != other.mem.kvBytes {
		t.Errorf("defaults: KV %.3f GiB, want the engine without the run's %.3f GiB", def.mem.kvBytes/(1<<30), other.mem.kvBytes/(1<<30))
	}
}

// withSamplerWarmup charges vLLM V1's start-up sampler run at the bytes a
// logit its code holds.
func withSamplerWarmup(c *Config) {
	p := DefaultCost
	p.SamplerWarmupBytesPerLogit = VLLMSamplerWarmupBytesPerLogit
	c.Cost = &p
}
