package simserver

import (
	"net/http"
	"strings"
	"testing"

	kscrape "github.com/knee-dev/knee/internal/scrape"
)

func readDCGM(t *testing.T, url string) []kscrape.GPUReading {
	t.Helper()
	resp, err := http.Get(url + DCGMPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	gpus, _, bad, err := kscrape.ParseDCGM(resp.Body, kscrape.Limits{}, "unused")
	if err != nil || len(bad) > 0 {
		t.Fatalf("knee's reader refused the endpoint: %v %q", err, bad)
	}
	return gpus
}

// TestDCGMEndpointFollowsTheEngine: the simulated exporter has one GPU per
// TP rank with the real exporter's labels, an energy counter that grows by
// at least the idle draw and by the engine's own energy over a request,
// and activity while steps ran.
func TestDCGMEndpointFollowsTheEngine(t *testing.T) {
	url, srv := startTest(t, func(c *Config) { c.Engine.TP = 2 })
	e0, st0 := srv.GPUEnergyJ(), srv.EngineStats()
	before := readDCGM(t, url)
	if len(before) != 2 || before[0].UUID == before[1].UUID || before[0].Host != dcgmHost || !strings.Contains(before[0].Model, "H100") {
		t.Fatalf("GPUs %+v", before)
	}
	resp, b := post(t, url, "/v1/completions", `{"prompt":"`+strings.Repeat("word ", 400)+`","max_tokens":64,"stream":true,"ignore_eos":true}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	after := readDCGM(t, url)
	e1, st1 := srv.GPUEnergyJ(), srv.EngineStats()
	var sum float64
	for i, g := range after {
		d := (g.Values[kscrape.GPUEnergyMJ] - before[i].Values[kscrape.GPUEnergyMJ]) / 1000
		sum += d
		if !(g.Values[kscrape.GPUSMActive] > 0 && g.Values[kscrape.GPUDRAMActive] > 0 && g.Values[kscrape.GPUUtilPct] > 0) {
			t.Errorf("GPU %d idle after a request: %v", i, g.Values)
		}
		if g.Values[kscrape.GPUPowerW] <= srv.Config().Engine.GPU.IdleWatts || g.Values[kscrape.GPUSMClockMHz] != srv.Config().Engine.GPU.BoostClockMHz {
			t.Errorf("GPU %d after a request: power %v W, clock %v MHz", i, g.Values[kscrape.GPUPowerW], g.Values[kscrape.GPUSMClockMHz])
		}
		if g.Values[kscrape.GPUFBUsedMiB] <= 0 {
			t.Errorf("GPU %d: no memory used", i)
		}
	}
	// The counters moved by no more than the engine spent around the two
	// reads, and by at least what its steps spent between them.
	steps := float64(st1.GPUs) * (st1.StepEnergyJ - st0.StepEnergyJ)
	if d := e1 - e0; !(steps > 0 && sum >= steps && sum <= d*1.0001) {
		t.Errorf("counters rose %.3f J; the engine spent %.3f J around the reads, its steps %.3f J between them", sum, d, steps)
	}
}
