package cli

import (
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/spf13/pflag"
)

// probeFlags declare --probe-rate and the probes' shape (loadsetup.Probes).
type probeFlags struct{ loadsetup.Probes }

func (p *probeFlags) register(fs *pflag.FlagSet) {
	fs.Float64Var(&p.RateRPS, "probe-rate", 0, "send short probe requests at this many per second beside the main load and report their latency apart (what the load does to an unrelated user); 0: none")
	fs.IntVar(&p.InputTokens, "probe-input-tokens", 16, "prompt tokens of each probe")
	fs.IntVar(&p.OutputTokens, "probe-output-tokens", 1, "output tokens (max_tokens) of each probe")
}
