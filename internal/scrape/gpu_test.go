package scrape

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func dcgmPayload(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "dcgm", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parseDCGM(t *testing.T, text, host string) []GPUReading {
	t.Helper()
	gpus, _, bad, err := ParseDCGM(strings.NewReader(text), Limits{}, host)
	if err != nil || len(bad) > 0 {
		t.Fatalf("ParseDCGM: %v (malformed %q)", err, bad)
	}
	return gpus
}

// TestParseDCGMRealPayloads reads what dcgm-exporter wrote (testdata/dcgm
// names the sources): one GPU of an old exporter without Hostname, two
// GPUs of the GPU Operator's exporter, the README's blank value.
func TestParseDCGMRealPayloads(t *testing.T) {
	t.Parallel()
	one := parseDCGM(t, dcgmPayload(t, "v2.0.13-one-gpu.txt"), "node-a:9400")
	if len(one) != 1 {
		t.Fatalf("%d GPUs, want 1: %+v", len(one), one)
	}
	g := one[0]
	if g.Host != "node-a:9400" || g.GPU != "0" || g.UUID != "GPU-8c16e996-bd76-aa91-17e7-b48bcd0208ba" || g.Model != "" {
		t.Errorf("labels %+v", g)
	}
	want := map[GPUField]float64{GPUPowerW: 23.528, GPUEnergyMJ: 31035686671, GPUFBUsedMiB: 1057, GPUFBFreeMiB: 7064, GPUSMClockMHz: 885,
		GPUMemClockMHz: 2999, GPUTempC: 41, GPUUtilPct: 0, GPUPowerThrottle: 0, GPUThermThrottle: 0}
	for f, v := range want {
		if got, ok := g.Values[f]; !ok || got != v {
			t.Errorf("%s = %v (%v), want %v", f, got, ok, v)
		}
	}
	if len(g.Values) != len(want) {
		t.Errorf("fields %v, want exactly %d", g.Values, len(want))
	}

	two := parseDCGM(t, dcgmPayload(t, "gpu-operator-two-l40s.txt"), "10.107.142.195:9400")
	if len(two) != 2 || two[0].GPU != "0" || two[1].GPU != "1" {
		t.Fatalf("GPUs %+v, want 0 and 1", two)
	}
	for i, w := range []float64{34.156, 34.164} {
		if two[i].Host != "ubuntu-sv16" || two[i].Model != "NVIDIA L40S" || two[i].Values[GPUPowerW] != w || two[i].Values[GPUSMClockMHz] != 210 {
			t.Errorf("GPU %d: %+v", i, two[i])
		}
		if _, has := two[i].Values[GPUEnergyMJ]; has {
			t.Errorf("GPU %d: an energy counter the payload does not have", i)
		}
	}

	// DCGM's blank (a field the GPU does not support) is no reading.
	blank := strings.ReplaceAll(dcgmPayload(t, "readme-quickstart.txt"), "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP")
	r := parseDCGM(t, blank, "h")
	if len(r) != 1 || r[0].Values[GPUSMClockMHz] != 139 {
		t.Fatalf("readme sample: %+v", r)
	}
	if v, has := r[0].Values[GPUTempC]; has {
		t.Errorf("the blank value read as a temperature of %v", v)
	}
}

// MIG instances of one GPU (dcgm-exporter's GPU_I_ID label) stay apart.
func TestParseDCGMMIGInstances(t *testing.T) {
	t.Parallel()
	text := `DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a",GPU_I_PROFILE="1g.10gb",GPU_I_ID="1",Hostname="n"} 0.25
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a",GPU_I_PROFILE="1g.10gb",GPU_I_ID="2",Hostname="n"} 0.75
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",Hostname="n"} 300
`
	g := parseDCGM(t, text, "h")
	if len(g) != 3 {
		t.Fatalf("%d readings, want the GPU and its two instances: %+v", len(g), g)
	}
	got := map[string]float64{}
	for _, r := range g {
		got[r.GPU] = r.Values[GPUSMActive] + r.Values[GPUPowerW]
	}
	if got["0/mig1"] != 0.25 || got["0/mig2"] != 0.75 || got["0"] != 300 {
		t.Errorf("readings %v", got)
	}
}

// A label carrying terminal controls or of any length is kept escaped and
// bounded.
func TestParseDCGMHostileLabels(t *testing.T) {
	t.Parallel()
	text := `DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-x",modelName="\u001b[2J` + strings.Repeat("A", 5000) + `",Hostname="evil\rhost"} 100` + "\n"
	text = strings.NewReplacer(`\u001b`, "\x1b", `\r`, "\r").Replace(text)
	g := parseDCGM(t, text, "h")
	if len(g) != 1 || strings.ContainsAny(g[0].Model+g[0].Host, "\x1b\r") || len(g[0].Model) > 2*maxLabelBytes {
		t.Errorf("labels kept raw: %q %q", g[0].Host, g[0].Model)
	}
}

// gpuSeries is a series of readings of text at the given times (ms), each
// through edit(i, text) first; a time < 0 is a failed scrape at -t.
func gpuSeries(t *testing.T, url, text, host string, times []float64, edit func(i int, s string) string) *Series {
	t.Helper()
	s := &Series{URL: url, GPU: true}
	for i, tm := range times {
		if tm < 0 {
			s.Samples = append(s.Samples, Sample{TMS: -tm, Err: "HTTP 503"})
			continue
		}
		s.Samples = append(s.Samples, Sample{TMS: tm, GPUs: parseDCGM(t, edit(i, text), host)})
	}
	return s
}

// TestGPUViewMultiHostResetsAndAnExporterThatDies joins two exporters over
// a 5 s run: two L40S without an energy counter (power integrated) on one
// host; on another, one GPU whose energy counter falls once and whose
// exporter stops answering after 3 s (the rest extrapolated, said so).
func TestGPUViewMultiHostResetsAndAnExporterThatDies(t *testing.T) {
	t.Parallel()
	l40s := gpuSeries(t, "http://a:9400/metrics", dcgmPayload(t, "gpu-operator-two-l40s.txt"), "a:9400", []float64{0, 1000, 2000, 3000, 4000, 5000},
		func(_ int, s string) string {
			return strings.NewReplacer("} 34.156000", "} 100", "} 34.164000", "} 200").Replace(s)
		})
	base := 31035686671.0
	counter := []float64{base, base + 100e3, base + 200e3, 50e3} // mJ: +100 J, +100 J, then a fall (reboot) to 50 J
	old := gpuSeries(t, "http://b:9400/metrics", dcgmPayload(t, "v2.0.13-one-gpu.txt"), "b:9400", []float64{0, 1000, 2000, 3000, -4000, -5000},
		func(i int, s string) string {
			return strings.Replace(s, "} 31035686671", "} "+strconv.FormatFloat(counter[i], 'f', 0, 64), 1)
		})
	v := NewGPUView([]*Series{l40s, old}, 5000)
	if v == nil || len(v.GPUs) != 3 {
		t.Fatalf("view %+v", v)
	}
	byHost := map[string][]GPUStats{}
	for _, g := range v.GPUs {
		byHost[g.Host] = append(byHost[g.Host], g)
	}
	a, b := byHost["ubuntu-sv16"], byHost["b:9400"]
	if len(a) != 2 || len(b) != 1 {
		t.Fatalf("GPUs by host %v", byHost)
	}
	for i, w := range []float64{500, 1000} { // 100 W and 200 W for 5 s
		if a[i].EnergySource != powerIntegral || math.Abs(a[i].EnergyJ-w) > 1e-9 {
			t.Errorf("L40S %d: %v J from %q, want %v J from the power integral", i, a[i].EnergyJ, a[i].EnergySource, w)
		}
		if p := a[i].Fields[GPUPowerW]; p.Mean != w/5 || p.N != 6 {
			t.Errorf("L40S %d power %+v", i, p)
		}
	}
	if g := b[0]; g.EnergySource != energyCounter || g.CounterResets != 1 || math.Abs(g.EnergyJ-250) > 1e-9 || g.ToMS != 3000 {
		t.Errorf("the counter GPU: %+v; want 250 J (100 + 100 + 50 after the fall) to 3 s, one reset", g)
	}
	extra := 250.0 / 3000 * 2000
	if math.Abs(v.ExtrapolatedJ-extra) > 1e-6 || math.Abs(v.EnergyJ-(1500+250+extra)) > 1e-6 {
		t.Errorf("energy %v J with %v extrapolated; want %v with %v", v.EnergyJ, v.ExtrapolatedJ, 1750+extra, extra)
	}
	if v.EnergySource != energyBoth {
		t.Errorf("source %q", v.EnergySource)
	}
	if v.Exporters[1].Failed != 2 || v.Exporters[1].Scrapes != 4 || len(v.Exporters[0].Timeline) != 6 {
		t.Errorf("exporters %+v", v.Exporters)
	}
	notes := strings.Join(v.Notes, "\n")
	for _, want := range []string{"fell 1 time", "cover 3.0 of the run's 5.0 s", "no energy_mj, sm_active, dram_active readings"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if p := v.Exporters[0].Timeline[0]; p.GPUs != 2 || *p.PowerW != 300 || p.SMActive != nil {
		t.Errorf("timeline point %+v", p)
	}
}

func TestGPUViewOfNoGPUs(t *testing.T) {
	t.Parallel()
	if NewGPUView(nil, 1000) != nil {
		t.Error("a view of no exporters")
	}
	s := &Series{URL: "http://vllm:8000/metrics", GPU: true, Samples: []Sample{{TMS: 0}, {TMS: 1000}}}
	v := NewGPUView([]*Series{s}, 1000)
	if v == nil || len(v.GPUs) != 0 || !strings.Contains(strings.Join(v.Notes, " "), "no dcgm-exporter GPU fields") {
		t.Errorf("an exporter without DCGM fields: %+v", v)
	}
}

// TestScrapeAnExporterThatDies scrapes a test server serving a real
// payload, then failing: the scrapes are kept, the failures recorded, the
// run never stopped. Scrapes are asked for (Kick), not timed.
func TestScrapeAnExporterThatDies(t *testing.T) {
	t.Parallel()
	payload := dcgmPayload(t, "gpu-operator-two-l40s.txt")
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1) > 2 {
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(payload))
	}))
	defer srv.Close()
	sc := Start(context.Background(), Config{URL: srv.URL + "/metrics", Interval: time.Hour, FirstWait: time.Minute, GPU: true})
	for n := 2; n <= 3; n++ {
		sc.Kick()
		deadline := time.Now().Add(30 * time.Second)
		for len(sc.Snapshot().Samples) < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	s := sc.Stop()
	if len(s.Samples) != 4 || !s.GPU {
		t.Fatalf("%d samples (gpu %v), want 4: %+v", len(s.Samples), s.GPU, s.Samples)
	}
	for i, smp := range s.Samples {
		if ok := i < 2; smp.OK() != ok || (ok && len(smp.GPUs) != 2) {
			t.Errorf("sample %d: %+v", i, smp)
		}
	}
	if s.Server != "dcgm" || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "2 of 4 scrapes") {
		t.Errorf("server %q notes %q", s.Server, s.Notes)
	}
}

// A GPU scrape's samples stay bounded: halving keeps the first and the
// last, so a counter's delta over the run is unchanged.
func TestHalveSamplesKeepsTheEnds(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3, 4, 7, 8} {
		s := make([]Sample, n)
		for i := range s {
			s[i].TMS = float64(i)
		}
		h := halveSamples(s)
		if h[0].TMS != 0 || h[len(h)-1].TMS != float64(n-1) || len(h) != n/2+1 {
			t.Errorf("%d samples halved to %d: first %v last %v", n, len(h), h[0].TMS, h[len(h)-1].TMS)
		}
		for i := 1; i < len(h); i++ {
			if h[i].TMS <= h[i-1].TMS {
				t.Errorf("%d samples: out of order at %d", n, i)
			}
		}
	}
}
