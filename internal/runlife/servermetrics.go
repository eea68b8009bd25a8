package runlife

import (
	"context"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
)

// ServerMetrics say how a run scrapes the target's Prometheus /metrics
// while it runs (bench, sweep, calibrate): the URL (default: /metrics on
// the target's host), how often, or not at all (Off). AlsoGiven names a
// metrics flag given beside --no-metrics, refused by Validate.
type ServerMetrics struct {
	URL       string
	Interval  time.Duration
	Off       bool
	AlsoGiven string
}

// Validate checks the settings together.
func (m *ServerMetrics) Validate() error {
	if m.AlsoGiven != "" {
		return badinput.Errorf("--%s does nothing with --no-metrics; drop one of them", m.AlsoGiven)
	}
	if m.Off {
		return nil
	}
	if m.Interval <= 0 {
		return badinput.Errorf("--metrics-interval %v: want a positive duration such as 1s", m.Interval)
	}
	if m.URL != "" {
		if _, err := scrape.MetricsURL(m.URL); err != nil {
			return badinput.Errorf("--metrics-url: %v (want http://host:port/metrics)", err)
		}
	}
	return nil
}

// Start begins scraping target's metrics (nil with --no-metrics). It never
// fails the run: a bad endpoint shows up in the series' notes.
func (m *ServerMetrics) Start(ctx context.Context, target string) *scrape.Scraper {
	if m.Off {
		return nil
	}
	u := m.URL
	if u == "" {
		var err error
		if u, err = scrape.MetricsURL(target); err != nil {
			return nil
		}
	}
	return scrape.Start(ctx, scrape.Config{URL: u, Interval: m.Interval})
}

// ConfigKV is what a stored run keeps of the settings.
func (m *ServerMetrics) ConfigKV() [][2]string {
	if m.Off {
		return [][2]string{{"metrics", "off"}}
	}
	c := [][2]string{{"metrics_interval", m.Interval.String()}}
	if m.URL != "" {
		c = append(c, [2]string{"metrics_url", redact.URL(m.URL)})
	}
	return c
}

// ServerView stops sc, lines its samples up with the run's clock (records
// count from runStart) and joins them with the run's records (join) over the summary's window.
func ServerView(sc *scrape.Scraper, runStart time.Time, join *scrape.JoinTally, sum *stats.Summary) (*scrape.Series, *scrape.View) {
	if sc == nil {
		return nil, nil
	}
	s := sc.Stop()
	s.Rebase(runStart)
	return s, scrape.BuildViewOf(s, join, sum.Window.StartMS, sum.Window.EndMS)
}
