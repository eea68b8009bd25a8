package cli

import (
	"context"
	"encoding/json"
	"github.com/knee-dev/knee/internal/enginesetup"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// --front-end-serial makes the simulated front end take whole requests one
// at a time: knee sim admits a burst of 40 requests sent together one per
// 20 ms, so their TTFTs spread over ~0.8 s where without it they all come
// within the front end's ~15 ms, and request throughput stays under 50/s.
func TestFrontEndSerialFlagPacesSim(t *testing.T) {
	run := func(args ...string) (ttftMin, ttftMax, rps float64) {
		t.Helper()
		var s struct {
			TTFT struct{ P50, Max float64 } `json:"ttft_ms"`
			RPS  float64                    `json:"request_throughput_rps"`
			Run  struct {
				Config map[string]string `json:"config"`
			} `json:"run"`
		}
		simJSON(t, &s, append([]string{"--concurrency", "40", "--requests", "40", "--input-tokens", "64", "--output-tokens", "4"}, args...)...)
		if len(args) > 0 && s.Run.Config["front_end_serial"] != "20ms" {
			t.Errorf("run config front_end_serial = %q, want 20ms", s.Run.Config["front_end_serial"])
		}
		return s.TTFT.P50, s.TTFT.Max, s.RPS
	}
	p50, paced, rps := run("--front-end-serial", "20ms")
	_, free, _ := run()
	t.Logf("burst of 40: TTFT p50 %.0f ms, max %.0f ms, %.1f req/s with --front-end-serial 20ms; max %.0f ms without", p50, paced, rps, free)
	if paced < 39*20*0.9 || p50 < 20*20*0.8 {
		t.Errorf("TTFT max %.0f ms, p50 %.0f ms: want the 40th request about 780 ms and the 20th about 400 ms after the first", paced, p50)
	}
	if rps > 50 {
		t.Errorf("%.1f req/s through a front end that admits one request per 20 ms", rps)
	}
	// Without the flag, the default's 8 ms serial admission: the 40th
	// request about 320 ms after the first.
	if free > 450 {
		t.Errorf("without --front-end-serial the burst's TTFT max is %.0f ms, want the default's 8 ms a request (~320 ms)", free)
	}
	for _, cmd := range [][]string{{"sim"}, {"sim", "sweep"}, {"serve"}} {
		code, _, errs := kneeCmd(t, append(cmd, "--front-end-serial", "-1ms")...)
		if code != ExitUsage || !strings.Contains(errs, "--front-end-serial") {
			t.Errorf("%v --front-end-serial -1ms: exit %d: %s", cmd, code, errs)
		}
	}
}

// --front-end-serial-split holds a burst's first tokens back: with half of
// the 20 ms done before each request's handler yields, every request's
// second half queues behind the first halves of all 40, so the k-th first
// token comes ~400 + 10k ms in rather than ~20k: the median ~200 ms later,
// the last at the same ~800 ms. A share outside [0, 1] exits 2 on every
// command that takes it.
func TestFrontEndSerialSplitHoldsTheBurstsFirstTokens(t *testing.T) {
	run := func(args ...string) (ttftP50, ttftMax float64, config map[string]string) {
		t.Helper()
		var s struct {
			TTFT struct{ P50, Max float64 } `json:"ttft_ms"`
			Run  struct {
				Config map[string]string `json:"config"`
			} `json:"run"`
		}
		simJSON(t, &s, append([]string{"--concurrency", "40", "--requests", "40", "--input-tokens", "64", "--output-tokens", "4", "--front-end-serial", "20ms"}, args...)...)
		return s.TTFT.P50, s.TTFT.Max, s.Run.Config
	}
	splitP50, splitMax, cfg := run("--front-end-serial-split", "0.5")
	oneP50, oneMax, _ := run("--front-end-serial-split", "0")
	t.Logf("burst of 40 at 20 ms a request: TTFT p50 %.0f ms, max %.0f ms with --front-end-serial-split 0.5; %.0f and %.0f ms without", splitP50, splitMax, oneP50, oneMax)
	if cfg["front_end_serial_split"] != "0.5" {
		t.Errorf("run config front_end_serial_split = %q, want 0.5", cfg["front_end_serial_split"])
	}
	if d := splitP50 - oneP50; d < 170 || d > 230 {
		t.Errorf("TTFT p50 %.0f ms with the split, %.0f ms without: want ~200 ms later (the 40 first halves of 10 ms, less the median's own 20 of them)", splitP50, oneP50)
	}
	if d := splitMax - oneMax; d > 50 || d < -50 {
		t.Errorf("latest TTFT %.0f ms with the split, %.0f ms without: the same work, so want them within 50 ms", splitMax, oneMax)
	}
}

// The share flags (--front-end-serial-split, --compute-efficiency,
// --all-reduce-efficiency) exit 2 outside [0, 1] on every command that
// takes them, and the efficiencies slow what they price: a 2,000-token
// prompt's prefill on Qwen3-235B-A22B at TP8 on A100s takes longer at half
// the matmul rate, and longer again with the all-reduce at 0.133 of the
// link; each shows in the run's config.
func TestCostShareFlags(t *testing.T) {
	for _, f := range enginesetup.CostShares {
		for _, cmd := range [][]string{{"sim"}, {"sim", "sweep"}, {"serve"}} {
			for _, v := range []string{"-0.1", "1.5"} {
				code, _, errs := kneeCmd(t, append(cmd, "--"+f.Name, v)...)
				if code != ExitUsage || !strings.Contains(errs, "--"+f.Name+" "+v+": want a share from 0 to 1") {
					t.Errorf("%v --%s %s: exit %d: %s", cmd, f.Name, v, code, errs)
				}
			}
		}
	}
	ttft := func(key string, args ...string) float64 {
		t.Helper()
		var s struct {
			TTFT struct{ Mean float64 } `json:"ttft_ms"`
			Run  struct {
				Config map[string]string `json:"config"`
			} `json:"run"`
		}
		simJSON(t, &s, append([]string{"--gpu", "a100-80gb", "--model", "qwen3-235b-a22b", "--tp", "8", "--concurrency", "1", "--requests", "3",
			"--input-tokens", "2000", "--output-tokens", "2"}, args...)...)
		if key != "" && s.Run.Config[key] != args[1] {
			t.Errorf("run config %s = %q, want %s", key, s.Run.Config[key], args[1])
		}
		return s.TTFT.Mean
	}
	base, slowGEMM, slowAR := ttft(""), ttft("compute_efficiency", "--compute-efficiency", "0.35"), ttft("all_reduce_efficiency", "--all-reduce-efficiency", "0.133")
	t.Logf("2,000-token prompt, 235B TP8 on A100s: TTFT %.1f ms; %.1f at --compute-efficiency 0.35; %.1f at --all-reduce-efficiency 0.133", base, slowGEMM, slowAR)
	if !(slowGEMM > base*1.3 && slowAR > base*1.3) {
		t.Errorf("TTFT %.1f ms by default, %.1f and %.1f with the slower GEMMs and all-reduce: want both well above the default", base, slowGEMM, slowAR)
	}
}

// knee serve paces its front end the same way in wall time: each request
// waits at least one serial cost, and the last of three sent together
// cannot finish before three serial costs have passed since the first was
// sent (request k is admitted no sooner than one serial cost after both its
// arrival and request k-1's admission: a lower bound however busy the
// machine). Without the serial cost the three finish within ~30 ms.
func TestFrontEndSerialFlagPacesServe(t *testing.T) {
	const serialMS = 150
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, done := startServe(t, ctx, "--model", "llama-3.1-8b", "--max-model-len", "4096", "--front-end-serial", "150ms")
	fe := make([]float64, 3)
	sent, ended := make([]time.Time, 3), make([]time.Time, 3)
	var wg sync.WaitGroup
	for i := range fe {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[i] = time.Now()
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"model":"llama-3.1-8b","prompt":"hi","max_tokens":2,"stream":true}`))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ended[i] = time.Now()
			m := regexp.MustCompile(`"front_end_ms":([0-9.]+)`).FindSubmatch(b)
			if m == nil {
				t.Errorf("no front_end_ms in %s", b)
				return
			}
			json.Unmarshal(m[1], &fe[i])
		}()
	}
	wg.Wait()
	first, last := slices.MinFunc(sent, time.Time.Compare), slices.MaxFunc(ended, time.Time.Compare)
	t.Logf("three requests sent together: front-end times %v ms, the last done %v after the first was sent", fe, last.Sub(first))
	if slices.Min(fe) < serialMS {
		t.Errorf("front-end times %v ms: want each at least the serial %d ms", fe, serialMS)
	}
	if last.Sub(first) < 3*serialMS*time.Millisecond {
		t.Errorf("all three done %v after the first was sent: the front end admitted more than one per %d ms", last.Sub(first), serialMS)
	}
	cancel()
	<-done
}
