package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSelftestJSON(t *testing.T) {
	// --slow-steps 0: on a busy machine (or under the race detector) the
	// 4-stream step misses 1 ms and would be repeated slower, changing the
	// number of steps this test reads; the repeat has its own test.
	code, out, errs := kneeCmd(t, "selftest", "--concurrency", "1,4", "--duration", "400ms", "--warmup", "100ms",
		"--input-tokens", "8", "--output-tokens", "6", "--max-model-len", "4096", "--slow-steps", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Server string `json:"server"`
		Steps  []struct {
			Concurrency  int                `json:"concurrency"`
			TokenRateTPS float64            `json:"token_rate_tps"`
			TTFTError    map[string]float64 `json:"ttft_error_ms"`
			ITLError     map[string]float64 `json:"itl_error_ms"`
			PacingLag    map[string]float64 `json:"pacing_lag_ms"`
			CPUPerToken  float64            `json:"cpu_per_token_us"`
			Requests     int                `json:"requests"`
			Truth        string             `json:"truth"`
			WithWrites   *int               `json:"requests_with_write_times"`
			TTFTIntended map[string]float64 `json:"ttft_error_vs_intended_ms"`
			ITLIntended  map[string]float64 `json:"itl_error_vs_intended_ms"`
			Kernel       *bool              `json:"client_kernel_timestamps"`
			UserStamped  *int64             `json:"user_stamped_streams"`
		} `json:"steps"`
		MaxRate *float64 `json:"max_token_rate_within_1ms_tps"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(res.Steps) != 2 || res.Steps[1].Concurrency != 4 || res.MaxRate == nil || !strings.Contains(res.Server, "step time ×0.5") {
		t.Fatalf("%s", out)
	}
	for _, s := range res.Steps {
		for _, k := range []string{"count", "mean", "p50", "p90", "p95", "p99", "p999", "max"} {
			if _, ok := s.TTFTError[k]; !ok {
				t.Errorf("ttft_error_ms lacks %s", k)
			}
			if _, ok := s.ITLError[k]; !ok {
				t.Errorf("itl_error_ms lacks %s", k)
			}
			if _, ok := s.TTFTIntended[k]; !ok {
				t.Errorf("ttft_error_vs_intended_ms lacks %s", k)
			}
			if _, ok := s.ITLIntended[k]; !ok {
				t.Errorf("itl_error_vs_intended_ms lacks %s", k)
			}
		}
		// What the errors were judged against, and how many records
		// carried the server's write times, agree.
		switch {
		case s.WithWrites == nil || *s.WithWrites < 0 || *s.WithWrites > s.Requests:
			t.Errorf("requests_with_write_times %v of %d requests", s.WithWrites, s.Requests)
		case s.Truth == "write_times" && *s.WithWrites != s.Requests,
			s.Truth == "intended_times" && *s.WithWrites != 0,
			s.Truth == "mixed" && (*s.WithWrites == 0 || *s.WithWrites == s.Requests),
			s.Truth != "write_times" && s.Truth != "intended_times" && s.Truth != "mixed":
			t.Errorf("truth %q with %d of %d requests carrying write times", s.Truth, *s.WithWrites, s.Requests)
		}
		if s.Kernel == nil || s.UserStamped == nil || (*s.Kernel && *s.UserStamped != 0) {
			t.Errorf("client_kernel_timestamps %v with %v user-stamped streams", s.Kernel, s.UserStamped)
		}
		if s.TTFTIntended["count"] != s.TTFTError["count"] {
			t.Errorf("%v TTFT errors vs intended, %v vs writes: want the same requests", s.TTFTIntended["count"], s.TTFTError["count"])
		}
		if s.TTFTError["count"] == 0 || s.TokenRateTPS <= 0 || s.CPUPerToken <= 0 || s.PacingLag["p99_ms"] < 0 {
			t.Errorf("step %+v", s)
		}
	}
}

func TestSelftestText(t *testing.T) {
	code, out, errs := kneeCmd(t, "selftest", "--concurrency", "2", "--duration", "300ms", "--warmup", "50ms", "--output-tokens", "4", "--max-model-len", "4096")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"TTFT error", "vs intended", "pacing lag", "CPU µs/token", "truth", "error = reported − true"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSelftestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"selftest", "--concurrency", "0"},
		{"selftest", "--concurrency", "a,b"},
		{"selftest", "--duration", "0s"},
		{"selftest", "--output-tokens", "1"},
		{"selftest", "--api", "grpc"},
		{"selftest", "--model", "nope"},
	} {
		code, _, errs := kneeCmd(t, args...)
		if code != ExitUsage || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with a message", args, code, errs)
		}
	}
}
