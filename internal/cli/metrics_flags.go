package cli

import (
	"time"

	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// metricsFlags declare how bench, sweep and calibrate scrape the target's
// Prometheus /metrics while they run (runlife.ServerMetrics).
type metricsFlags struct{ runlife.ServerMetrics }

// noteSet records, after parsing, whether --no-metrics came with a flag it
// makes pointless.
func (m *metricsFlags) noteSet(fs *pflag.FlagSet) {
	for _, name := range []string{"metrics-url", "metrics-interval"} {
		if m.Off && flagGiven(fs, name) && m.AlsoGiven == "" {
			m.AlsoGiven = name
		}
	}
}

func (m *metricsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&m.URL, "metrics-url", "", "the server's Prometheus metrics URL (default: /metrics on the --url host)")
	fs.DurationVar(&m.Interval, "metrics-interval", time.Second, "how often to scrape the server's metrics during the run")
	fs.BoolVar(&m.Off, "no-metrics", false, "do not scrape the server's metrics")
}

// The names bench.go, sweep_target.go and diagnose.go call.
var (
	readServerSeries = runs.ReadServerSeries
	serverFacts      = runs.ServerFacts
	serverStep       = sweep.ServerStepOf
)
