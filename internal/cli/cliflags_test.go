package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --front-end-serial 0 switches off the default's 8 ms serial admission:
// knee sim predicts exactly as with a server profile whose
// front_end_serial_ms is 0, and a burst of 40 no longer spreads over the
// ~320 ms of 40 admissions. Before, an explicit 0 read as "the default".
// An efficiency flag's explicit 0 exits 2 naming it.
func TestExplicitZeroCostFlagIsHonoured(t *testing.T) {
	type summary struct {
		TTFT struct{ P50, Max, Mean float64 } `json:"ttft_ms"`
		RPS  float64                          `json:"request_throughput_rps"`
		Run  struct {
			Config map[string]string `json:"config"`
		} `json:"run"`
	}
	burst := []string{"--concurrency", "40", "--requests", "40", "--input-tokens", "64", "--output-tokens", "4"}
	var def, zero, viaProfile summary
	simJSON(t, &def, burst...)
	simJSON(t, &zero, append(burst, "--front-end-serial", "0")...)
	profile := filepath.Join(t.TempDir(), "no-serial.yaml")
	if err := os.WriteFile(profile, []byte("name: no-serial\nengine: vllm\nversion: test\nfront_end_serial_ms: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	simJSON(t, &viaProfile, append(burst, "--server-profile", profile)...)
	t.Logf("burst of 40: TTFT max %.1f ms by default, %.1f with --front-end-serial 0, %.1f with a profile of no serial admission", def.TTFT.Max, zero.TTFT.Max, viaProfile.TTFT.Max)
	if zero.TTFT != viaProfile.TTFT || zero.RPS != viaProfile.RPS {
		t.Errorf("--front-end-serial 0: TTFT %+v, %.2f req/s; a profile without serial admission: %+v, %.2f req/s; want the same prediction",
			zero.TTFT, zero.RPS, viaProfile.TTFT, viaProfile.RPS)
	}
	// 39 admissions of 8 ms come to 312 ms; without them the burst's last
	// first token is the engine's prefill of the burst, well under that.
	if def.TTFT.Max-zero.TTFT.Max < 39*8*0.8 {
		t.Errorf("TTFT max %.1f ms by default, %.1f with --front-end-serial 0: want the default's ~312 ms of admission gone", def.TTFT.Max, zero.TTFT.Max)
	}
	if got := zero.Run.Config["front_end_serial"]; got != "0s" {
		t.Errorf("run config front_end_serial = %q, want 0s", got)
	}
	for _, cmd := range [][]string{{"sim"}, {"sim", "sweep"}} { // serve resolves through the same Choice
		for _, flag := range []string{"--compute-efficiency", "--all-reduce-efficiency"} {
			code, _, errs := kneeCmd(t, append(cmd, flag, "0")...)
			if code != ExitUsage || !strings.Contains(errs, flag+" 0: want a share above 0") {
				t.Errorf("%v %s 0: exit %d: %s", cmd, flag, code, errs)
			}
		}
	}
}
