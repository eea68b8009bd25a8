package cli

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// gpuPriceFlag is --gpu-price: what one GPU-hour costs, for the energy
// figures' dollars per million output tokens.
type gpuPriceFlag struct {
	usdPerHour float64
}

func (g *gpuPriceFlag) register(fs *pflag.FlagSet) {
	fs.Float64Var(&g.usdPerHour, "gpu-price", 0, "USD per GPU-hour: the energy figures add $ per million output tokens (GPU time, not electricity)")
}

func (g *gpuPriceFlag) check() error {
	if g.usdPerHour < 0 || math.IsNaN(g.usdPerHour) || math.IsInf(g.usdPerHour, 0) || g.usdPerHour > 1e4 {
		return Usagef("--gpu-price %v: want USD per GPU-hour, from 0 to 10000 (e.g. 2.5)", g.usdPerHour)
	}
	return nil
}

// simEnergy is a simulated run's energy figures, from the power model
// over the whole run (nil: the GPU preset has no power model).
func simEnergy(gpus int, spanS, energyJ float64, outputTokens, requests int64, price gpuPriceFlag) *energy.Figures {
	return energy.New(energy.SourceModel, gpus, spanS, energyJ, outputTokens, requests, price.usdPerHour)
}

// maxGPUExporters bounds --gpu-metrics-url (one per node is the use).
const maxGPUExporters = 64

// gpuMetricsFlags are --gpu-metrics-url (repeatable: one dcgm-exporter per
// node) and --gpu-price on a measuring command.
type gpuMetricsFlags struct {
	urls  []string
	price gpuPriceFlag
}

func (g *gpuMetricsFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&g.urls, "gpu-metrics-url", nil, "an NVIDIA dcgm-exporter's metrics URL (e.g. http://node:9400/metrics; knee serve: /dcgm/metrics), repeatable, one per node: GPU power, activity, memory, clocks and energy per token in the report")
	g.price.register(fs)
}

func (g *gpuMetricsFlags) validate() error {
	if len(g.urls) > maxGPUExporters {
		return Usagef("--gpu-metrics-url given %d times: at most %d exporters", len(g.urls), maxGPUExporters)
	}
	seen := map[string]bool{}
	for _, u := range g.urls {
		if _, err := scrape.MetricsURL(u); err != nil {
			return Usagef("--gpu-metrics-url: %v (want http://host:9400/metrics)", err)
		}
		if seen[u] {
			return Usagef("--gpu-metrics-url %s given twice: its GPUs would count twice", redactURL(u))
		}
		seen[u] = true
	}
	return g.price.check()
}

// start begins scraping every exporter, each on its own goroutine at
// interval; a bad exporter shows in the GPU notes, never fails the run.
func (g *gpuMetricsFlags) start(ctx context.Context, interval time.Duration) []*scrape.Scraper {
	if interval <= 0 {
		interval = time.Second
	}
	var out []*scrape.Scraper
	for _, u := range g.urls {
		out = append(out, scrape.Start(ctx, scrape.Config{URL: u, Interval: interval, GPU: true}))
	}
	return out
}

func stopAll(scs []*scrape.Scraper) {
	for _, s := range scs {
		s.Stop()
	}
}

// gpuEnergy stops the exporters' scrapers, lines their samples up with the
// run's clock and joins them: the GPU view, the run's energy figures over
// every record (warm-up included: the GPUs drew power for it too) and the
// series, for --out.
func (g *gpuMetricsFlags) gpuEnergy(scs []*scrape.Scraper, runStart time.Time, work sweep.GPUWork) (*scrape.GPUView, *energy.Figures, []*scrape.Series) {
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
	return v, energy.New(v.EnergySource, gpus, spanS, v.EnergyJ, tokens, done, g.price.usdPerHour), series
}

// saveGPUSeries writes the exporters' scrapes to --out as
// gpu_metrics.json.
func saveGPUSeries(out string, series []*scrape.Series) error {
	if out == "" || len(series) == 0 {
		return nil
	}
	b, err := json.Marshal(series)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "gpu_metrics.json"), b, 0o644)
}

// stepHook is a sweep step's GPU reading (sweep.TargetRunner.GPUMetrics):
// nil without --gpu-metrics-url.
func (g *gpuMetricsFlags) stepHook(interval time.Duration) func(ctx context.Context) func(time.Time, sweep.GPUWork) (*energy.Figures, []string) {
	if len(g.urls) == 0 {
		return nil
	}
	return func(ctx context.Context) func(time.Time, sweep.GPUWork) (*energy.Figures, []string) {
		scs := g.start(ctx, interval)
		return func(runStart time.Time, work sweep.GPUWork) (*energy.Figures, []string) {
			v, e, _ := g.gpuEnergy(scs, runStart, work)
			if v == nil {
				return e, nil
			}
			return e, v.Notes
		}
	}
}

func (g *gpuMetricsFlags) config() [][2]string {
	var c [][2]string
	for _, u := range g.urls {
		c = append(c, [2]string{"gpu_metrics_url", redactURL(u)})
	}
	if g.price.usdPerHour > 0 {
		c = append(c, [2]string{"gpu_price_usd_per_hour", strconv.FormatFloat(g.price.usdPerHour, 'g', -1, 64)})
	}
	return c
}
