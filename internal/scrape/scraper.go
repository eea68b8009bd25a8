package scrape

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Config says what to scrape and how often.
type Config struct {
	URL      string        // the /metrics URL
	Interval time.Duration // between scrapes (0: 1 s)
	// Timeout bounds one scrape, connection to last byte (0: the interval,
	// at least 500 ms and at most 5 s).
	Timeout time.Duration
	Limits  Limits
	// Client, when set, does the requests; by default the scraper has its
	// own transport, so it never shares a connection pool with the load.
	Client *http.Client
	// Origin is the run's start: Sample.TMS counts from it (zero: Start).
	Origin time.Time
	// FirstWait is how long Start waits for the first scrape, so the
	// baseline is taken before the load begins (0: 250 ms; a slower
	// endpoint's first scrape simply lands later).
	FirstWait time.Duration
	// GPU: the URL is NVIDIA's dcgm-exporter (--gpu-metrics-url); each
	// scrape keeps its GPUs' fields (ParseDCGM) instead of a server's.
	GPU bool
}

// Scraper scrapes on its own goroutine until Stop. A slow or dead endpoint
// costs it missed scrapes, never the load: each scrape has a timeout and a
// bounded read, and ticks that come while one is in flight are dropped.
type Scraper struct {
	cfg    Config
	client *http.Client
	stop   chan struct{}
	done   chan struct{}
	kick   chan struct{}

	mu     sync.Mutex
	series Series
	host   string // a GPU scrape's name for GPUs without a Hostname label
}

// MetricsURL is the /metrics URL of an OpenAI-compatible base URL: the
// same scheme and host, path /metrics (a trailing /v1 is not part of it).
func MetricsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", base)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path, u.RawQuery, u.Fragment, u.User = p+"/metrics", "", "", nil
	return u.String(), nil
}

// Start begins scraping at once and then every cfg.Interval.
func Start(ctx context.Context, cfg Config) *Scraper {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = min(max(cfg.Interval, 500*time.Millisecond), 5*time.Second)
	}
	if cfg.Origin.IsZero() {
		cfg.Origin = time.Now()
	}
	s := &Scraper{cfg: cfg, client: cfg.Client, stop: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1)}
	if s.client == nil {
		s.client = &http.Client{Transport: &http.Transport{MaxIdleConns: 1, IdleConnTimeout: 30 * time.Second, DisableCompression: false}}
	}
	s.series = Series{URL: redact(cfg.URL), IntervalMS: float64(cfg.Interval) / 1e6, OriginUnixNS: cfg.Origin.UnixNano(), GPU: cfg.GPU}
	if cfg.GPU {
		s.host = hostOf(cfg.URL)
	}
	if cfg.FirstWait <= 0 {
		cfg.FirstWait = 250 * time.Millisecond
	}
	first := make(chan struct{})
	go s.loop(ctx, first)
	select {
	case <-first:
	case <-time.After(cfg.FirstWait):
	}
	return s
}

func (s *Scraper) loop(ctx context.Context, first chan<- struct{}) {
	defer close(s.done)
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	s.scrapeOnce(ctx)
	close(first)
	for {
		select {
		case <-s.stop:
			s.scrapeOnce(context.WithoutCancel(ctx)) // the end of the run
			return
		case <-ctx.Done():
			return
		case <-t.C:
			s.scrapeOnce(ctx)
		case <-s.kick:
			s.scrapeOnce(ctx)
		}
	}
}

// Kick asks for one extra scrape now (at a sweep step's boundary) without
// waiting for it.
func (s *Scraper) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Snapshot is a copy of what was scraped so far.
func (s *Scraper) Snapshot() Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.series
	c.Samples = append([]Sample(nil), s.series.Samples...)
	c.Notes = append([]string(nil), s.series.Notes...)
	return c
}

// Stop takes a last scrape (bounded by the timeout), stops, and returns the
// series with its notes.
func (s *Scraper) Stop() *Series {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	if s.cfg.Client == nil {
		s.client.CloseIdleConnections() // its own transport: nothing else uses it
	}
	c := s.Snapshot()
	c.Summarize()
	return &c
}

func (s *Scraper) scrapeOnce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	sent := time.Now()
	p, err := s.fetch(ctx)
	at := sent.Add(time.Since(sent) / 2)
	smp := Sample{TMS: float64(at.Sub(s.cfg.Origin)) / 1e6}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		smp.Err = err.Error()
		s.series.Samples = append(s.series.Samples, smp)
		return
	}
	smp.Values, smp.Hists, smp.GPUs = p.Sample.Values, p.Sample.Hists, p.Sample.GPUs
	s.series.Samples = append(s.series.Samples, smp)
	if s.cfg.GPU && len(s.series.Samples) >= MaxGPUSamples {
		s.series.Samples = halveSamples(s.series.Samples)
		s.series.IntervalMS *= 2
	}
	if s.series.Server == "" && p.Server != "" {
		s.series.Server = p.Server
	}
	for _, m := range p.Malformed {
		if len(s.series.Notes) < 20 && !contains(s.series.Notes, "malformed line dropped: "+m) {
			s.series.Notes = append(s.series.Notes, "malformed line dropped: "+m)
		}
	}
}

func (s *Scraper) fetch(ctx context.Context) (*Parsed, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, cleanErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var p *Parsed
	if s.cfg.GPU {
		var gpus []GPUReading
		p = &Parsed{}
		gpus, p.Families, p.Malformed, err = ParseDCGM(resp.Body, s.cfg.Limits, s.host)
		p.Sample.GPUs = gpus
		if len(gpus) > 0 {
			p.Server = "dcgm"
		}
	} else {
		p, err = Parse(resp.Body, s.cfg.Limits)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("no complete response within %v", s.cfg.Timeout)
		}
		return nil, cleanErr(err)
	}
	return p, nil
}

// cleanErr drops the URL net/http puts in its errors (it may hold user
// info), keeping the cause.
func cleanErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if errors.Is(ue.Err, context.DeadlineExceeded) {
			return errors.New("timed out")
		}
		return ue.Err
	}
	return err
}

// redact drops user info and query from a URL for notes and storage.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}
