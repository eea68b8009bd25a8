package runlife

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/sweep"
)

// maxGPUExporters bounds --gpu-metrics-url (one per node is the use).
const maxGPUExporters = 64

// GPUMetrics are a measuring run's GPU readings: the dcgm-exporters
// scraped beside the load (--gpu-metrics-url, one per node) and what a
// GPU-hour costs (--gpu-price), for the energy figures.
type GPUMetrics struct {
	URLs       []string
	USDPerHour float64
}

// CheckGPUPrice checks --gpu-price, USD per GPU-hour.
func CheckGPUPrice(usdPerHour float64) error {
	if usdPerHour < 0 || math.IsNaN(usdPerHour) || math.IsInf(usdPerHour, 0) || usdPerHour > 1e4 {
		return badinput.Errorf("--gpu-price %v: want USD per GPU-hour, from 0 to 10000 (e.g. 2.5)", usdPerHour)
	}
	return nil
}

// Validate checks the exporters' URLs and the price.
func (g *GPUMetrics) Validate() error {
	if len(g.URLs) > maxGPUExporters {
		return badinput.Errorf("--gpu-metrics-url given %d times: at most %d exporters", len(g.URLs), maxGPUExporters)
	}
	seen := map[string]bool{}
	for _, u := range g.URLs {
		if _, err := scrape.MetricsURL(u); err != nil {
			return badinput.Errorf("--gpu-metrics-url: %v (want http://host:9400/metrics)", err)
		}
		if seen[u] {
			return badinput.Errorf("--gpu-metrics-url %s given twice: its GPUs would count twice", redact.URL(u))
		}
		seen[u] = true
	}
	return CheckGPUPrice(g.USDPerHour)
}

// Start begins scraping every exporter, each on its own goroutine at
// interval; a bad exporter shows in the GPU notes, never fails the run.
func (g *GPUMetrics) Start(ctx context.Context, interval time.Duration) []*scrape.Scraper {
	if interval <= 0 {
		interval = time.Second
	}
	var out []*scrape.Scraper
	for _, u := range g.URLs {
		out = append(out, scrape.Start(ctx, scrape.Config{URL: u, Interval: interval, GPU: true}))
	}
	return out
}

// StopAll stops the scrapers.
func StopAll(scs []*scrape.Scraper) {
	for _, s := range scs {
		s.Stop()
	}
}

// Energy stops the exporters' scrapers, lines their samples up with the
// run's clock and joins them: the GPU view, the run's energy figures over
// every record (warm-up included: the GPUs drew power for it too) and the
// series, for --out.
func (g *GPUMetrics) Energy(scs []*scrape.Scraper, runStart time.Time, work sweep.GPUWork) (*scrape.GPUView, *energy.Figures, []*scrape.Series) {
	if len(scs) == 0 {
		return nil, nil, nil
	}
	var series []*scrape.Series
	for _, sc := range scs {
		s := sc.Stop()
		s.Rebase(runStart)
		series = append(series, s)
	}
	endMS, tokens, done := float64(work.End)/1e6, work.OutputTokens, work.Completed
	v := scrape.NewGPUView(series, endMS)
	if v == nil || v.EnergySource == "" {
		return v, nil, series
	}
	gpus := 0
	spanS := endMS / 1000
	for _, st := range v.GPUs {
		if st.EnergySource != "" {
			gpus++
			spanS = max(spanS, (st.ToMS-st.FromMS)/1000)
		}
	}
	return v, energy.New(v.EnergySource, gpus, spanS, v.EnergyJ, tokens, done, g.USDPerHour), series
}

// SaveGPUSeries writes the exporters' scrapes to --out as
// gpu_metrics.json.
func SaveGPUSeries(out string, series []*scrape.Series) error {
	if out == "" || len(series) == 0 {
		return nil
	}
	b, err := json.Marshal(series)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "gpu_metrics.json"), b, 0o644)
}

// StepHook is a sweep step's GPU reading (sweep.TargetRunner.GPUMetrics):
// nil without --gpu-metrics-url.
func (g *GPUMetrics) StepHook(interval time.Duration) func(ctx context.Context) func(time.Time, sweep.GPUWork) (*energy.Figures, []string) {
	if len(g.URLs) == 0 {
		return nil
	}
	return func(ctx context.Context) func(time.Time, sweep.GPUWork) (*energy.Figures, []string) {
		scs := g.Start(ctx, interval)
		return func(runStart time.Time, work sweep.GPUWork) (*energy.Figures, []string) {
			v, e, _ := g.Energy(scs, runStart, work)
			if v == nil {
				return e, nil
			}
			return e, v.Notes
		}
	}
}

// ConfigKV is what a stored run keeps of the GPU metrics settings.
func (g *GPUMetrics) ConfigKV() [][2]string {
	var c [][2]string
	for _, u := range g.URLs {
		c = append(c, [2]string{"gpu_metrics_url", redact.URL(u)})
	}
	if g.USDPerHour > 0 {
		c = append(c, [2]string{"gpu_price_usd_per_hour", strconv.FormatFloat(g.USDPerHour, 'g', -1, 64)})
	}
	return c
}
