package browsertest

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// startServe runs knee serve on a free loopback port and returns its base
// URL once /health answers.
func startServe(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := knee(t, "serve", "--addr", addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		res, err := http.Get(base + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("knee serve on %s did not answer /health: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The GPU panel on a run's report page (issue 45 item 5): a bench against
// knee serve with its dcgm-exporter endpoint and a GPU price shows energy
// per output token, tokens per joule, power, $ per million output tokens
// and each GPU's power and activity — the figures knee report --format json
// gives for the same stored run.
func TestGPUPanelInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "knee.db")
	serve := startServe(t)
	if out, err := knee(t, "bench", "--db", db, "--url", serve, "--model", "llama-3.1-8b", "--concurrency", "8", "--requests", "60", "--seed", "3", "--quiet",
		"--gpu-metrics-url", serve+"/dcgm/metrics", "--gpu-price", "2.5").Output(); err != nil {
		t.Fatalf("knee bench: %v\n%s", err, out)
	}
	out, err := knee(t, "report", "1", "--db", db, "--format", "json").Output()
	if err != nil {
		t.Fatalf("knee report: %v", err)
	}
	var rep struct {
		Energy struct {
			Source          string  `json:"source"`
			JPerOutputToken float64 `json:"j_per_output_token"`
			TokensPerJ      float64 `json:"output_tokens_per_j"`
			PowerW          float64 `json:"avg_power_w_per_gpu"`
			USDPerM         float64 `json:"usd_per_m_output_tokens"`
		} `json:"energy"`
		GPU struct {
			Exporters []struct {
				Timeline []json.RawMessage `json:"timeline"`
			} `json:"exporters"`
		} `json:"gpu"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || rep.Energy.JPerOutputToken == 0 {
		t.Fatalf("knee report --format json has no energy (%v): %.400s", err, out)
	}
	base := startUI(t, db)
	b := newBrowser(t, exe, dir)
	b.do(chromedp.Navigate(base + "/#runs/report/1"))
	b.waitFor(`!!document.querySelector('#gpu-table tbody tr') && !!document.getElementById('gpu-mj-per-token')`)
	v := eval[map[string]any](b, `(() => { const v = id => Number(document.getElementById(id)?.dataset.value);
	  const rows = [...document.querySelectorAll('#gpu-table tbody tr')].map(r => ({gpu: r.dataset.gpu, power: Number(r.dataset.powerMean), energy: Number(r.dataset.energyJ)}));
	  return {mj: v('gpu-mj-per-token'), perj: v('gpu-tokens-per-j'), w: v('gpu-power'), usd: v('gpu-usd-per-m'),
	    source: document.getElementById('gpu-energy').dataset.source, rows, text: document.getElementById('gpu-panel').innerText}; })()`)
	t.Logf("GPU panel: %.1f mJ per output token, %.2f tok/J, %.0f W per GPU, $%.3f per M tokens, from the %v; GPUs %v", v["mj"], v["perj"], v["w"], v["usd"], v["source"], v["rows"])
	t.Logf("knee report: %+v", rep.Energy)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	if !near(num(v["mj"]), 1000*rep.Energy.JPerOutputToken) || !near(num(v["perj"]), rep.Energy.TokensPerJ) ||
		!near(num(v["w"]), rep.Energy.PowerW) || !near(num(v["usd"]), rep.Energy.USDPerM) || v["source"] != rep.Energy.Source {
		t.Errorf("the panel's figures %v are not knee report's %+v", v, rep.Energy)
	}
	rows, _ := v["rows"].([]any)
	if len(rows) == 0 {
		t.Fatal("no GPU rows")
	}
	for _, r := range rows {
		m := r.(map[string]any)
		if !(num(m["power"]) > 0) || !(num(m["energy"]) > 0) {
			t.Errorf("GPU %v: power %v W, energy %v J: want both above 0", m["gpu"], m["power"], m["energy"])
		}
	}
	// The run database keeps the exporter's timeline (thinned), and the
	// panel draws it: one point a kept scrape.
	if len(rep.GPU.Exporters) != 1 || len(rep.GPU.Exporters[0].Timeline) < 2 {
		t.Fatalf("the stored run keeps no GPU timeline: %d exporters", len(rep.GPU.Exporters))
	}
	b.waitFor(`document.querySelectorAll('#gpu-panel canvas').length === 4`)
	if pts := eval[string](b, `document.getElementById('gpu-power-0').dataset.points`); pts != fmt.Sprint(len(rep.GPU.Exporters[0].Timeline)) {
		t.Errorf("the power chart has %s points; the stored timeline %d", pts, len(rep.GPU.Exporters[0].Timeline))
	}
	b.shotOf("#gpu-panel", "runs-report-gpu")
	// Nothing overlaps or leaves the page at 1400×1000 and 390×844 (the
	// table stacks a card a GPU on a phone).
	checkLayout(t, b, "runs-report-gpu")
	b.do(chromedp.EmulateViewport(390, 844))
	b.do(chromedp.Sleep(300 * time.Millisecond)) // the layout settles
	b.shotOf("#gpu-panel", "runs-report-gpu-panel-phone")
	b.checkClean()
}

// A stored GPU view that keeps its exporter's timeline is drawn over the
// run: power, SM and DRAM activity, memory and SM clock, one point a
// scrape (a run stored by hand, so that the drawn values are known;
// TestGPUPanelInBrowser has knee bench's own stored timeline drawn).
func TestGPUTimelineInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "knee.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	const points = 20
	view := scrape.GPUView{GPUs: []scrape.GPUStats{{Host: "node-1", GPU: "0", Model: "NVIDIA H100 80GB HBM3", Scrapes: points, ToMS: 19000, EnergyJ: 9000, EnergySource: "energy counter",
		Fields: map[scrape.GPUField]scrape.GaugeStats{scrape.GPUPowerW: {Mean: 450, Max: 600, N: points}}}},
		Exporters: []scrape.GPUExporter{{URL: "http://node-1:9400/metrics", Scrapes: points}}, EnergyJ: 9000, EnergySource: "energy counter", SpanS: 19}
	for i := 0; i < points; i++ {
		w, sm, dram, mem, clk := 300+15*float64(i), 0.5+0.02*float64(i), 0.4+0.02*float64(i), 60000+100*float64(i), 1980-5*float64(i)
		view.Exporters[0].Timeline = append(view.Exporters[0].Timeline, scrape.GPUPoint{TMS: 1000 * float64(i), GPUs: 1,
			PowerW: &w, SMActive: &sm, DRAMActive: &dram, FBUsedMiB: &mem, SMClockMHz: &clk})
	}
	b, _ := json.Marshal(view)
	sum := stats.Summary{}
	if _, err := st.ImportRun(store.RunMeta{Kind: store.KindImport, Target: "timeline.json", Config: map[string]string{runs.GPUKey: string(b)}}, nil, &sum, ""); err != nil {
		t.Fatal(err)
	}
	st.Close()
	base := startUI(t, db)
	br := newBrowser(t, exe, dir)
	br.do(chromedp.Navigate(base + "/#runs/report/1"))
	br.waitFor(`document.querySelectorAll('#gpu-panel canvas').length === 4`)
	got := eval[map[string]string](br, `Object.fromEntries(['power', 'activity', 'memory', 'clock'].map(k => [k, document.getElementById('gpu-' + k + '-0').dataset.points]))`)
	t.Logf("timeline charts' points: %v", got)
	for k, v := range got {
		if v != fmt.Sprint(points) {
			t.Errorf("the %s chart has %s points: want one a scrape, %d", k, v, points)
		}
	}
	if eval[bool](br, `!!document.getElementById('gpu-timeline-note')`) {
		t.Error("the panel says the timeline is not kept, beside the timeline")
	}
	br.shotOf("#gpu-panel", "runs-report-gpu-timeline")
	br.checkClean()
}
