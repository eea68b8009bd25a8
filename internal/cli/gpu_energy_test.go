package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
)

// TestBenchGPUEnergyAgreesWithTheSimulator: a bench against knee serve
// with --gpu-metrics-url reads, from the simulated dcgm-exporter, the energy
// and tokens per joule the simulator's own accounting of the same steps
// gives, within 2%. The exporter is reached through a recorder that notes
// the engine's energy at each scrape, so both sides cover the same span.
func TestBenchGPUEnergyAgreesWithTheSimulator(t *testing.T) {
	url, srv := simservertest.Start(t, func(c *simserver.Config) { c.Engine.TP = 2 })
	var mu sync.Mutex
	var atScrape []float64
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		atScrape = append(atScrape, srv.GPUEnergyJ())
		mu.Unlock()
		r.URL.Path = simserver.DCGMPath
		srv.ServeHTTP(w, r)
	}))
	defer exporter.Close()
	tokens0 := srv.EngineStats().OutputTokens
	db := map[string]string{"KNEE_DB": filepath.Join(t.TempDir(), "knee.db")}
	code, out, errs := kneeEnv(t, db, "bench", "--url", url, "--model", srv.Model(), "--concurrency", "8", "--requests", "48",
		"--input-tokens", "256", "--output-tokens", "48", "--gpu-metrics-url", exporter.URL+"/metrics", "--gpu-price", "2",
		"--metrics-interval", "200ms", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("knee bench: exit %d: %s", code, errs)
	}
	tokens := srv.EngineStats().OutputTokens - tokens0
	var sum struct {
		Energy struct {
			Source           string  `json:"source"`
			GPUs             int     `json:"gpus"`
			EnergyJ          float64 `json:"energy_j"`
			OutputTokens     int64   `json:"output_tokens"`
			OutputTokensPerJ float64 `json:"output_tokens_per_j"`
			USDPerM          float64 `json:"usd_per_m_output_tokens"`
			AvgPowerW        float64 `json:"avg_power_w_per_gpu"`
		} `json:"energy"`
		GPU struct {
			GPUs []struct {
				Host   string `json:"host"`
				Fields map[string]struct {
					Mean float64 `json:"mean"`
				} `json:"fields"`
			} `json:"gpus"`
			ExtrapolatedJ float64 `json:"extrapolated_j"`
		} `json:"gpu"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	mu.Lock()
	engineJ := atScrape[len(atScrape)-1] - atScrape[0]
	n := len(atScrape)
	mu.Unlock()
	e := sum.Energy
	if e.Source != "energy counter" || e.GPUs != 2 || len(sum.GPU.GPUs) != 2 || sum.GPU.ExtrapolatedJ != 0 {
		t.Fatalf("energy %+v from %d GPUs (extrapolated %v J)", e, len(sum.GPU.GPUs), sum.GPU.ExtrapolatedJ)
	}
	if rel := math.Abs(e.EnergyJ-engineJ) / engineJ; rel > 0.02 {
		t.Errorf("bench read %.1f J, the simulator spent %.1f J over the same %d scrapes: %.1f%% apart", e.EnergyJ, engineJ, n, 100*rel)
	}
	// The engine also answers bench's preflight (a token or two beside
	// the measured requests): the counts agree to within that.
	if d := tokens - e.OutputTokens; d < 0 || d > 8 {
		t.Errorf("bench counted %d output tokens, the engine emitted %d", e.OutputTokens, tokens)
	}
	simTPJ := float64(tokens) / engineJ
	t.Logf("bench %.1f J, %.4f tok/J; simulator %.1f J, %.4f tok/J over %d scrapes", e.EnergyJ, e.OutputTokensPerJ, engineJ, simTPJ, n)
	if rel := math.Abs(e.OutputTokensPerJ-simTPJ) / simTPJ; rel > 0.02 {
		t.Errorf("bench %.4f tok/J, simulator %.4f: %.1f%% apart", e.OutputTokensPerJ, simTPJ, 100*rel)
	}
	g := srv.Config().Engine.GPU
	if !(e.AvgPowerW > g.IdleWatts && e.AvgPowerW < g.TDPWatts) || e.USDPerM <= 0 {
		t.Errorf("average power %v W (idle %v, TDP %v), $/M %v", e.AvgPowerW, g.IdleWatts, g.TDPWatts, e.USDPerM)
	}
	for _, gpu := range sum.GPU.GPUs {
		if gpu.Host != "knee-serve" || !(gpu.Fields["sm_active"].Mean > 0) || !(gpu.Fields["dram_active"].Mean > 0) || !(gpu.Fields["fb_used_mib"].Mean > 0) {
			t.Errorf("GPU view %+v", gpu)
		}
	}
	// The stored run's report shows the same energy and GPUs.
	code, rep, errs := kneeEnv(t, db, "report", "last")
	if code != 0 || !strings.Contains(rep, "GPUs (dcgm-exporter") || !strings.Contains(rep, "from the energy counter") {
		t.Errorf("knee report last: exit %d %s\n%s", code, errs, rep)
	}
}

func TestGPUFlagsRefuseBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--gpu-metrics-url", "not a url"},
		{"--gpu-metrics-url", "http://a:9400/metrics", "--gpu-metrics-url", "http://a:9400/metrics"},
		{"--gpu-price", "-1"},
	} {
		code, _, errs := kneeCmd(t, append([]string{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--requests", "1"}, args...)...)
		if code != 2 || !(strings.Contains(errs, "--gpu-metrics-url") || strings.Contains(errs, "--gpu-price")) {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
	if code, _, errs := kneeCmd(t, "sim", "--gpu-price", "NaN", "--requests", "1"); code != 2 || !strings.Contains(errs, "--gpu-price") {
		t.Errorf("sim --gpu-price NaN: exit %d, %s", code, errs)
	}
}

// knee sweep --gpu-metrics-url gives every step its energy from the
// exporter, the bigger batch the more tokens per joule.
func TestSweepGPUEnergyPerStep(t *testing.T) {
	url, srv := simservertest.Start(t, nil)
	code, out, errs := kneeCmd(t, "sweep", "--url", url, "--model", srv.Model(), "--concurrency", "1,16", "--requests", "32",
		"--input-tokens", "128", "--output-tokens", "32", "--gpu-metrics-url", url+simserver.DCGMPath, "--metrics-interval", "200ms", "--json", "--quiet", "--no-store")
	if code != 0 {
		t.Fatalf("knee sweep: exit %d: %s", code, errs)
	}
	var res struct {
		Steps []struct {
			Load             float64  `json:"load"`
			OutputTokensPerJ *float64 `json:"output_tokens_per_j"`
			Energy           *struct {
				Source string `json:"source"`
			} `json:"energy"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("%d steps", len(res.Steps))
	}
	for _, s := range res.Steps {
		if s.Energy == nil || s.Energy.Source != "energy counter" || s.OutputTokensPerJ == nil || *s.OutputTokensPerJ <= 0 {
			t.Fatalf("step %v without its energy: %+v", s.Load, s)
		}
	}
	if a, b := *res.Steps[0].OutputTokensPerJ, *res.Steps[1].OutputTokensPerJ; !(b > a) {
		t.Errorf("16 in flight %.3f tok/J, not above 1 in flight's %.3f", b, a)
	}
}

// knee sim and sim sweep give the power model's figures their ranges (the
// energy validation's held-out errors, docs/energy.md) in JSON and text, as
// the latency figures have theirs; a measured energy gets none (above).
func TestSimEnergyRanges(t *testing.T) {
	type rng struct{ Low, High float64 }
	type fig struct {
		Source          string   `json:"source"`
		JPerOutputToken *float64 `json:"j_per_output_token"`
		AvgPower        float64  `json:"avg_power_w_per_gpu"`
		USD             *float64 `json:"usd_per_m_output_tokens"`
		Ranges          *struct {
			Share float64 `json:"share"`
			J     *rng    `json:"j_per_output_token"`
			Power rng     `json:"avg_power_w_per_gpu"`
			USD   *rng    `json:"usd_per_m_output_tokens"`
		} `json:"ranges"`
	}
	check := func(name string, f *fig) {
		t.Helper()
		if f == nil || f.Ranges == nil || f.JPerOutputToken == nil || f.Ranges.J == nil || f.Ranges.USD == nil || f.USD == nil {
			t.Fatalf("%s: energy without ranges: %+v", name, f)
		}
		r := f.Ranges
		if r.Share != 0.8 || !(r.J.Low < *f.JPerOutputToken && *f.JPerOutputToken < r.J.High) || !(r.Power.Low < f.AvgPower && f.AvgPower <= r.Power.High && r.Power.High <= 700) ||
			!(r.USD.Low < *f.USD && *f.USD < r.USD.High) {
			t.Errorf("%s: ranges %+v do not bracket %+v", name, r, f)
		}
	}
	args := []string{"--gpu", "h100", "--model", "llama-3.1-8b", "--concurrency", "16", "--requests", "64", "--input-tokens", "256", "--output-tokens", "64", "--gpu-price", "2.5", "--no-store"}
	code, out, errs := kneeCmd(t, append([]string{"sim", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("knee sim: exit %d: %s", code, errs)
	}
	var sum struct {
		Energy *fig `json:"energy"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	check("sim", sum.Energy)
	code, out, errs = kneeCmd(t, append([]string{"sim"}, args...)...)
	if code != 0 || !strings.Contains(out, "(power model; 80% ranges)") || !regexp.MustCompile(`J per output token \([0-9.]+–[0-9.]+\)`).MatchString(out) {
		t.Errorf("knee sim's text lacks the energy ranges (exit %d, %s):\n%s", code, errs, out)
	}

	code, out, errs = kneeCmd(t, "sim", "sweep", "--gpu", "h100", "--model", "llama-3.1-8b", "--concurrency", "1,16", "--requests", "48",
		"--input-tokens", "256", "--output-tokens", "64", "--gpu-price", "2.5", "--json", "--quiet", "--no-store")
	if code != 0 {
		t.Fatalf("knee sim sweep: exit %d: %s", code, errs)
	}
	var sw struct {
		Steps []struct {
			Energy *fig `json:"energy"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &sw); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(sw.Steps) != 2 {
		t.Fatalf("%d steps", len(sw.Steps))
	}
	for i, s := range sw.Steps {
		check(fmt.Sprint("sweep step ", i), s.Energy)
	}
}
