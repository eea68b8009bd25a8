package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/knee-dev/knee/internal/diagnose"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
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
// count from runStart) and joins them with recs over the summary's window.
func serverView(sc *scrape.Scraper, runStart time.Time, recs []record.Request, sum *stats.Summary) (*scrape.Series, *scrape.View) {
	if sc == nil {
		return nil, nil
	}
	s := sc.Stop()
	s.Rebase(runStart)
	return s, scrape.BuildView(s, recs, sum.Window.StartMS, sum.Window.EndMS)
}

// saveServerSeries stores a run's (or a sweep step's) series and writes it
// to --out as server_metrics.json (whole run only).
func saveServerSeries(st *storedRun, out string, step int, s *scrape.Series) error {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if out != "" && step == store.WholeRun {
		if err := os.WriteFile(filepath.Join(out, "server_metrics.json"), b, 0o644); err != nil {
			return err
		}
	}
	if st == nil {
		return nil
	}
	if err := st.st.SaveServerSeries(st.w.ID(), step, b); err != nil {
		return fmt.Errorf("storing the server metrics: %w", err)
	}
	return nil
}

// watchSaturation stops an automatic sweep's step early once the server's
// waiting queue has grown through the step without draining: more load
// cannot tell anything new. The channel yields why ("" when it did not).
func watchSaturation(ctx context.Context, sc *scrape.Scraper, run *loadgen.Run, every time.Duration, done <-chan struct{}) <-chan string {
	out := make(chan string, 1)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				out <- ""
				return
			case <-done:
				out <- ""
				return
			case <-t.C:
				snap := sc.Snapshot()
				var waiting []float64
				for _, s := range snap.Samples {
					if v, ok := s.Values[scrape.Waiting]; ok {
						waiting = append(waiting, v)
					}
				}
				if len(waiting) >= minSaturationScrapes && scrape.WaitingGrows(waiting) {
					run.Stop()
					out <- fmt.Sprintf("step stopped early after %d scrapes: the server's waiting queue grew without bound (%.0f → %.0f requests), saturation seen directly",
						len(waiting), waiting[0], waiting[len(waiting)-1])
					return
				}
			}
		}
	}()
	return out
}

// minSaturationScrapes: readings of the waiting queue before a step may be
// cut short (at 1 s, six seconds of growth).
const minSaturationScrapes = 6

// readServerSeries reads a server_metrics.json that knee bench wrote.
func readServerSeries(path, flag string) (*scrape.Series, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Usagef("%s: %v", flag, err)
	}
	var s scrape.Series
	if err := json.Unmarshal(b, &s); err != nil || s.Samples == nil {
		return nil, Usagef("%s %s: not a server_metrics.json written by knee bench --out (%v)", flag, path, err)
	}
	return &s, nil
}

// serverFacts is the server's view over the span recs were sent and done in
// (nil when the series gives no window there).
func serverFacts(s *scrape.Series, recs []record.Request) *diagnose.ServerFacts {
	from, to := math.Inf(1), math.Inf(-1)
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		from = math.Min(from, float64(r.Sent)/1e6)
		to = math.Max(to, float64(max(r.Done, r.StreamEnd))/1e6)
	}
	if from > to || s.Server == "" {
		return nil
	}
	v := serverStep(&scrape.View{Server: s.Server, Window: s.Window(from, to)})
	if v == nil {
		return nil
	}
	return &diagnose.ServerFacts{Source: scrape.ServerLabel(s.Server) + " /metrics at " + s.URL,
		QueueMS: v.QueueMeanMS, PrefillMS: v.PrefillMeanMS, QueueP95MS: v.QueueP95MS, QueueP95Bound: v.QueueP95Bound, PrefillP95MS: v.PrefillP95MS,
		RunningMax: v.RunningMax, WaitingMax: v.WaitingMax, WaitingGrowing: v.WaitingGrowing, KVUsageMax: v.KVUsageMax, Preemptions: v.Preemptions}
}

// serverStep is a sweep step's share of the server view (sweep.ServerStepOf).
var serverStep = sweep.ServerStepOf
