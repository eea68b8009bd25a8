package cli

import (
	"math"

	"github.com/spf13/pflag"

	"github.com/knee-dev/knee/internal/energy"
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
