package cli

import (
	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/spf13/pflag"
)

// gpuPriceFlag is --gpu-price: what one GPU-hour costs, for the energy
// figures' dollars per million output tokens.
type gpuPriceFlag struct {
	usdPerHour float64
}

func (g *gpuPriceFlag) register(fs *pflag.FlagSet) { registerGPUPrice(fs, &g.usdPerHour) }

func registerGPUPrice(fs *pflag.FlagSet, usdPerHour *float64) {
	fs.Float64Var(usdPerHour, "gpu-price", 0, "USD per GPU-hour: the energy figures add $ per million output tokens (GPU time, not electricity)")
}

func (g *gpuPriceFlag) check() error { return runlife.CheckGPUPrice(g.usdPerHour) }

// simEnergy is a simulated run's energy figures, from the power model
// over the whole run (nil: the GPU preset has no power model).
func simEnergy(gpus int, spanS, energyJ float64, outputTokens, requests int64, price gpuPriceFlag) *energy.Figures {
	return energy.New(energy.SourceModel, gpus, spanS, energyJ, outputTokens, requests, price.usdPerHour)
}

// gpuMetricsFlags declare --gpu-metrics-url (repeatable: one dcgm-exporter
// per node) and --gpu-price on a measuring command (runlife.GPUMetrics).
type gpuMetricsFlags struct{ runlife.GPUMetrics }

func (g *gpuMetricsFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&g.URLs, "gpu-metrics-url", nil, "an NVIDIA dcgm-exporter's metrics URL (e.g. http://node:9400/metrics; knee serve: /dcgm/metrics), repeatable, one per node: GPU power, activity, memory, clocks and energy per token in the report")
	registerGPUPrice(fs, &g.USDPerHour)
}
