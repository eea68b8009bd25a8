package cli

import (
	"strings"
	"testing"
)

// --step-per-seq adds its time to every step once per sequence the step
// runs: 16 streams decoding together take 16 × 200 µs = 3.2 ms more a
// token, one stream 0.2 ms more, and the run's config says so.
func TestStepPerSeqFlag(t *testing.T) {
	tpot := func(c string, args ...string) float64 {
		t.Helper()
		var s struct {
			TPOT struct{ P50 float64 } `json:"tpot_ms"`
			Run  struct {
				Config map[string]string `json:"config"`
			} `json:"run"`
		}
		simJSON(t, &s, append([]string{"--concurrency", c, "--requests", "64", "--input-tokens", "64", "--output-tokens", "64"}, args...)...)
		if len(args) > 0 && s.Run.Config["step_per_seq"] != "200µs" {
			t.Errorf("run config step_per_seq = %q, want 200µs", s.Run.Config["step_per_seq"])
		}
		return s.TPOT.P50
	}
	for _, c := range []struct {
		users string
		want  float64 // ms a token more
	}{{"1", 0.2}, {"16", 3.2}} {
		with, without := tpot(c.users, "--step-per-seq", "200us"), tpot(c.users)
		t.Logf("%s users: TPOT p50 %.3f ms with --step-per-seq 200us, %.3f without", c.users, with, without)
		if d := with - without; d < c.want*0.9 || d > c.want*1.1 {
			t.Errorf("%s users: --step-per-seq 200us added %.3f ms a token, want about %.1f", c.users, d, c.want)
		}
	}
	for _, cmd := range [][]string{{"sim"}, {"sim", "sweep"}, {"serve"}} {
		code, _, errs := kneeCmd(t, append(cmd, "--step-per-seq", "-1us")...)
		if code != ExitUsage || !strings.Contains(errs, "--step-per-seq") {
			t.Errorf("%v --step-per-seq -1us: exit %d: %s", cmd, code, errs)
		}
	}
}
