package cli

import (
	"context"
	"time"

	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// metricsFlags choose how bench, sweep and calibrate scrape the target's
// Prometheus /metrics while they run.
type metricsFlags struct {
	url      string
	interval time.Duration
	off      bool
	// alsoGiven is a metrics flag given beside --no-metrics (noteSet).
	alsoGiven string
}

// noteSet records, after parsing, whether --no-metrics came with a flag it
// makes pointless.
func (m *metricsFlags) noteSet(fs *pflag.FlagSet) {
	for _, name := range []string{"metrics-url", "metrics-interval"} {
		if m.off && flagGiven(fs, name) && m.alsoGiven == "" {
			m.alsoGiven = name
		}
	}
}

func (m *metricsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&m.url, "metrics-url", "", "the server's Prometheus metrics URL (default: /metrics on the --url host)")
	fs.DurationVar(&m.interval, "metrics-interval", time.Second, "how often to scrape the server's metrics during the run")
	fs.BoolVar(&m.off, "no-metrics", false, "do not scrape the server's metrics")
}

func (m *metricsFlags) validate() error {
	if m.alsoGiven != "" {
		return Usagef("--%s does nothing with --no-metrics; drop one of them", m.alsoGiven)
	}
	if m.off {
		return nil
	}
	if m.interval <= 0 {
		return Usagef("--metrics-interval %v: want a positive duration such as 1s", m.interval)
	}
	if m.url != "" {
		if _, err := scrape.MetricsURL(m.url); err != nil {
			return Usagef("--metrics-url: %v (want http://host:port/metrics)", err)
		}
	}
	return nil
}

// start begins scraping target's metrics (nil with --no-metrics). It never
// fails the run: a bad endpoint shows up in the series' notes.
func (m *metricsFlags) start(ctx context.Context, target string) *scrape.Scraper {
	if m.off {
		return nil
	}
	u := m.url
	if u == "" {
		var err error
		if u, err = scrape.MetricsURL(target); err != nil {
			return nil
		}
	}
	return scrape.Start(ctx, scrape.Config{URL: u, Interval: m.interval})
}

func (m *metricsFlags) config() [][2]string {
	if m.off {
		return [][2]string{{"metrics", "off"}}
	}
	c := [][2]string{{"metrics_interval", m.interval.String()}}
	if m.url != "" {
		c = append(c, [2]string{"metrics_url", redactURL(m.url)})
	}
	return c
}

// serverView stops sc, lines its samples up with the run's clock (records
// count from runStart) and joins them with the run's records (join) over the summary's window.
func serverView(sc *scrape.Scraper, runStart time.Time, join *scrape.JoinTally, sum *stats.Summary) (*scrape.Series, *scrape.View) {
	if sc == nil {
		return nil, nil
	}
	s := sc.Stop()
	s.Rebase(runStart)
	return s, scrape.BuildViewOf(s, join, sum.Window.StartMS, sum.Window.EndMS)
}

// The names bench.go, sweep_target.go and diagnose.go call.
var (
	readServerSeries = runs.ReadServerSeries
	serverFacts      = runs.ServerFacts
	serverStep       = sweep.ServerStepOf
)
