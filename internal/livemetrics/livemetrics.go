// Package livemetrics exposes a running load (bench, sweep) as Prometheus
// metrics, so a dashboard watches it while it runs.
//
// Reading order: New and Observe (what is counted, and the rule that keeps
// it equal to the final summary: warm-up and cool-down records count only
// in their own counter, as the summary leaves them out), then Serve (the
// HTTP endpoint, loopback unless told otherwise).
//
// Observe is called once per finished request from the load generator's
// workers (loadgen.Config.OnRecord); it only does atomic adds on the
// client_golang collectors, so it never waits on a scrape.
package livemetrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/knee-dev/knee/internal/record"
)

// Namespace prefixes every metric: these are the client's view of a load,
// beside the server's own metrics (knee serve's are under knee:).
const Namespace = "knee_client"

// Metrics is one process's live metrics of the loads it runs.
type Metrics struct {
	reg       *prometheus.Registry
	finished  prometheus.Counter
	completed prometheus.Counter
	errors    *prometheus.CounterVec
	warmup    prometheus.Counter
	inTokens  prometheus.Counter
	outTokens prometheus.Counter
	ttft      prometheus.Histogram
	itl       prometheus.Histogram
	e2e       prometheus.Histogram
	lag       prometheus.Histogram
	stepLoad  prometheus.Gauge
	info      *prometheus.GaugeVec
	inFlight  atomic.Pointer[func() float64] // set once the run starts; read by scrapes
}

// Info labels the run_info metric: which run, model and target the load is.
type Info struct{ Kind, Run, Model, Target string }

// histogram is a classic histogram with the given buckets that is also a
// native one (scrapers that negotiate protobuf get ~10% buckets).
func histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: name, Help: help, Buckets: buckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour,
	})
}

// New registers the metrics; inFlight reads the requests in flight now (the
// load generator's snapshot), nil for none yet.
func New(info Info) *Metrics {
	// Latencies of LLM requests: 1 ms to 2 min for TTFT and E2E, 0.5 ms to
	// 5 s between chunks.
	latency := roundBuckets(prometheus.ExponentialBucketsRange(0.001, 120, 24))
	gaps := roundBuckets(prometheus.ExponentialBucketsRange(0.0005, 5, 20))
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		finished: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "requests_finished_total",
			Help: "Requests finished (completed or failed), warm-up and cool-down included."}),
		completed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "requests_completed_total",
			Help: "Measured requests that completed without error."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "request_errors_total",
			Help: "Measured requests that failed, by error kind."}, []string{"kind"}),
		warmup: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "requests_excluded_total",
			Help: "Requests left out of the statistics: warm-up, cool-down, canceled by an interrupt."}),
		inTokens: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "input_tokens_total",
			Help: "Prompt tokens of completed measured requests."}),
		outTokens: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "output_tokens_total",
			Help: "Output tokens of completed measured requests."}),
		ttft: histogram("time_to_first_token_seconds", "Time from sending a request to its first content chunk.", latency),
		itl:  histogram("inter_token_latency_seconds", "Gaps between consecutive content chunks of a response.", gaps),
		e2e:  histogram("e2e_request_latency_seconds", "Time from sending a request to its last content chunk.", latency),
		lag:  histogram("send_lag_seconds", "How late the client sent a request against its schedule.", gaps),
		stepLoad: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "step_load",
			Help: "The load level now running: concurrency, or requests per second for rate steps."}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "run_info",
			Help: "The run the load belongs to (value 1)."}, []string{"kind", "run", "model", "target"}),
	}
	for _, k := range record.ErrorKinds {
		m.errors.WithLabelValues(string(k)) // every kind from 0, so rate() sees the first error
	}
	m.info.WithLabelValues(info.Kind, info.Run, info.Model, info.Target).Set(1)
	m.reg.MustRegister(m.finished, m.completed, m.errors, m.warmup, m.inTokens, m.outTokens, m.ttft, m.itl, m.e2e, m.lag,
		m.stepLoad, m.info,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "requests_in_flight",
			Help: "Requests sent and not yet finished."}, func() float64 {
			if f := m.inFlight.Load(); f != nil {
				return (*f)()
			}
			return 0
		}))
	return m
}

// Registry is where the metrics live (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetInFlight sets what requests_in_flight reads (the run's snapshot); a
// scrape may come at any time, before or after.
func (m *Metrics) SetInFlight(f func() float64) { m.inFlight.Store(&f) }

// SetStep says which load step is running (sweeps).
func (m *Metrics) SetStep(load float64) { m.stepLoad.Set(load) }

func seconds(d time.Duration) float64 { return d.Seconds() }

// Observe counts one finished request the way stats.Summarize does, so the
// endpoint's counts equal the final summary's.
func (m *Metrics) Observe(r *record.Request) {
	m.finished.Inc()
	if r.Warmup {
		m.warmup.Inc()
		return
	}
	m.lag.Observe(seconds(r.Lag()))
	if !r.OK() {
		m.errors.WithLabelValues(string(r.Error)).Inc()
		return
	}
	m.completed.Inc()
	m.inTokens.Add(float64(r.InputTokens))
	m.outTokens.Add(float64(r.OutputTokens))
	if ttft, ok := r.TTFT(); ok {
		m.ttft.Observe(seconds(ttft))
		e2e, _ := r.E2E()
		m.e2e.Observe(seconds(e2e))
	}
	for i := 1; i < len(r.TokenTimes); i++ {
		m.itl.Observe(seconds(r.TokenTimes[i] - r.TokenTimes[i-1]))
	}
}

// Handler serves the metrics in the exposition format the scraper asks for.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Server is a running endpoint.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Addr is where it listens, e.g. 127.0.0.1:9464.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// roundBuckets rounds bucket bounds to 3 significant digits, so a scrape
// reads le="0.00166" rather than le="0.001662776841597282" (and 120, not
// 119.99999999999987); the ratio between bounds keeps them apart.
func roundBuckets(b []float64) []float64 {
	out := make([]float64, len(b))
	for i, v := range b {
		out[i], _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	}
	return out
}

// Linger keeps serving for d after the run ended, so a scraper on its own
// interval reads the final values, and returns when d has passed or ctx is
// done (Ctrl-C ends the wait).
func (s *Server) Linger(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Close stops serving; scrapes in progress get a second to finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}

// ResolveAddr checks --metrics-addr: HOST:PORT, or :PORT / PORT for the
// loopback address; public reports whether it listens beyond loopback.
func ResolveAddr(addr string) (resolved string, public bool, err error) {
	if addr != "" && !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, fmt.Errorf("%q: want HOST:PORT such as 127.0.0.1:9464, or :PORT for loopback", addr)
	}
	if host == "" {
		host = "127.0.0.1" // loopback unless a host is named
	}
	if ip := net.ParseIP(host); ip != nil {
		public = !ip.IsLoopback()
	} else if host != "localhost" {
		public = true
	}
	return net.JoinHostPort(host, port), public, nil
}

// Serve listens on addr (see ResolveAddr) and serves /metrics.
func (m *Metrics) Serve(addr string) (*Server, error) {
	resolved, _, err := ResolveAddr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", resolved)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}
