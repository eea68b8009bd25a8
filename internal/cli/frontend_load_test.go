package cli

import (
	"strings"
	"testing"
)

// --front-end-load makes the front end slower the more the server streams:
// a closed loop of 32 users of a small model on an L4 (about 4,000 tok/s)
// waits about 20 ms × 4 longer for its first tokens with 20 ms per 1,000
// tok/s, and the run's config says so. A negative value is refused.
func TestFrontEndLoadFlagSlowsAdmissionWithStreaming(t *testing.T) {
	run := func(args ...string) (p50, tps float64, cfg map[string]string) {
		t.Helper()
		var s struct {
			TTFT struct{ P50 float64 } `json:"ttft_ms"`
			TPS  float64               `json:"output_token_throughput_tps"`
			Run  struct {
				Config map[string]string `json:"config"`
			} `json:"run"`
		}
		simJSON(t, &s, append([]string{"--gpu", "l4", "--model", "qwen2.5-0.5b", "--gpu-memory-utilization", "0.6", "--max-model-len", "8192",
			"--concurrency", "32", "--requests", "320", "--input-tokens", "256", "--output-tokens", "128"}, args...)...)
		return s.TTFT.P50, s.TPS, s.Run.Config
	}
	loaded, tps, cfg := run("--front-end-load", "20ms")
	free, _, _ := run()
	t.Logf("32 users: TTFT p50 %.1f ms with --front-end-load 20ms at %.0f tok/s, %.1f ms without", loaded, tps, free)
	if want := 20 * tps / 1000; loaded-free < 0.7*want || loaded-free > 1.3*want {
		t.Errorf("TTFT p50 grew by %.1f ms at %.0f tok/s: want about %.1f (20 ms per 1,000 tok/s)", loaded-free, tps, want)
	}
	if cfg["front_end_load_per_ktok_s"] != "20ms" {
		t.Errorf("run config front_end_load_per_ktok_s = %q, want 20ms", cfg["front_end_load_per_ktok_s"])
	}
	for _, cmd := range [][]string{{"sim"}, {"sim", "sweep"}, {"serve"}} {
		code, _, errs := kneeCmd(t, append(cmd, "--front-end-load", "-1ms")...)
		if code != ExitUsage || !strings.Contains(errs, "--front-end-load") {
			t.Errorf("%v --front-end-load -1ms: exit %d: %s", cmd, code, errs)
		}
	}
}
