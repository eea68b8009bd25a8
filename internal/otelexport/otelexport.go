// Package otelexport sends a load's measurements to an OpenTelemetry
// collector over OTLP (HTTP or gRPC), with the official Go SDK, under the
// GenAI semantic conventions where they name the measurement.
//
// Reading order: Config and Start (exporters, protocol and endpoint, the
// SDK's own OTEL_EXPORTER_OTLP_* variables), Observe and the consumer loop
// (each record becomes histogram points and, with Traces, a span with its
// phase events), then Close (a bounded final flush).
//
// Off the hot path: Observe, called from the load generator's workers, only
// hands a copy of the record to one goroutine; the SDK aggregates in memory
// and its periodic reader and batch span processor send from their own
// goroutines. A collector that is down costs retries on those goroutines,
// is reported once through Config.OnError, and never stops the run.
package otelexport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/knee-dev/knee/internal/record"
)

// Metric names: the GenAI client conventions, and knee's own under knee.
const (
	MetricDuration      = "gen_ai.client.operation.duration"              // s, every measured request (error.type on failures)
	MetricTokenUsage    = "gen_ai.client.token.usage"                     // {token}, gen_ai.token.type input|output
	MetricTimeToFirst   = "gen_ai.client.operation.time_to_first_chunk"   // s, TTFT
	MetricTimePerChunk  = "gen_ai.client.operation.time_per_output_chunk" // s, each gap between content chunks (ITL)
	MetricTimePerToken  = "knee.client.time_per_output_token"             // s, TPOT: (e2e − ttft)/(output − 1)
	MetricSendLag       = "knee.client.send_lag"                          // s, sent − scheduled
	MetricExcluded      = "knee.client.requests.excluded"                 // warm-up, cool-down, interrupted
	defaultInterval     = 10 * time.Second
	defaultFlushTimeout = 5 * time.Second
)

// Protocols --otlp-protocol takes.
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
)

// Config says where and what to export.
type Config struct {
	// Endpoint is the collector's base URL (http://host:4318 for HTTP,
	// http://host:4317 for gRPC); "" leaves it to OTEL_EXPORTER_OTLP_ENDPOINT
	// and the signal-specific variables, which the SDK reads itself.
	Endpoint string
	Protocol string // ProtocolHTTP or ProtocolGRPC
	Traces   bool   // one span per request
	// Interval between exports during the run (0: 10 s); the last one is
	// at Close.
	Interval time.Duration
	// FlushTimeout bounds Close (0: 5 s): a collector that is down cannot
	// hold the command longer than this.
	FlushTimeout time.Duration
	// What the load is: attributes of every point and span.
	Kind, Run, Model, Server, API string
	// OnError hears the first export error (and only the first).
	OnError func(error)
}

// ParseProtocol reads --otlp-protocol or OTEL_EXPORTER_OTLP_PROTOCOL's
// values ("http/protobuf" is HTTP).
func ParseProtocol(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "http", "http/protobuf":
		return ProtocolHTTP, nil
	case "grpc":
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("%q: want http (OTLP/HTTP protobuf) or grpc", s)
}

// CheckEndpoint refuses what is not a collector URL.
func CheckEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want a URL such as http://localhost:4318 (HTTP) or http://localhost:4317 (gRPC)", s)
	}
	return nil
}

// Exporter is a running export.
type Exporter struct {
	cfg    Config
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	recs   chan *record.Request
	done   chan struct{}

	duration, tokens, ttft, perChunk, tpot, lag metric.Float64Histogram
	excluded                                    metric.Int64Counter

	mu    sync.Mutex
	start time.Time // the run's time origin: record times are offsets from it
	step  float64

	errOnce sync.Once
	errs    int64 // export errors seen (reported once)
	errMu   sync.Mutex
}

// errorHandler routes the SDK's export errors (which it reports through
// otel.Handle) to the exporter that is running.
var (
	handlerMu sync.Mutex
	active    = map[*Exporter]bool{}
)

func init() {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		handlerMu.Lock()
		defer handlerMu.Unlock()
		for e := range active {
			e.exportFailed(err)
		}
	}))
}

func (e *Exporter) exportFailed(err error) {
	e.errMu.Lock()
	e.errs++
	e.errMu.Unlock()
	e.errOnce.Do(func() {
		if e.cfg.OnError != nil {
			e.cfg.OnError(err)
		}
	})
}

// ExportErrors is how many export errors the SDK reported.
func (e *Exporter) ExportErrors() int64 {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.errs
}

// signalURL is the base endpoint with an OTLP/HTTP signal path, unless the
// URL already names a path.
func signalURL(base, path string) string {
	u, _ := url.Parse(base)
	if u.Path == "" || u.Path == "/" {
		u.Path = path
	}
	return u.String()
}

// Start builds the exporters and the SDK providers. It does not dial:
// a collector that is down shows at the first export.
func Start(cfg Config) (*Exporter, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = defaultInterval
	}
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = defaultFlushTimeout
	}
	ctx := context.Background()
	// Retries stop within the flush bound: past it the data is reported lost.
	var mexp sdkmetric.Exporter
	var texp sdktrace.SpanExporter
	var err error
	switch cfg.Protocol {
	case ProtocolGRPC:
		mopts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true,
			InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: cfg.FlushTimeout})}
		topts := []otlptracegrpc.Option{otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true,
			InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: cfg.FlushTimeout})}
		if cfg.Endpoint != "" {
			mopts = append(mopts, otlpmetricgrpc.WithEndpointURL(cfg.Endpoint))
			topts = append(topts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
		}
		if mexp, err = otlpmetricgrpc.New(ctx, mopts...); err != nil {
			return nil, err
		}
		if cfg.Traces {
			if texp, err = otlptracegrpc.New(ctx, topts...); err != nil {
				return nil, err
			}
		}
	case ProtocolHTTP, "":
		mopts := []otlpmetrichttp.Option{otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true,
			InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: cfg.FlushTimeout})}
		topts := []otlptracehttp.Option{otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true,
			InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: cfg.FlushTimeout})}
		if cfg.Endpoint != "" {
			mopts = append(mopts, otlpmetrichttp.WithEndpointURL(signalURL(cfg.Endpoint, "/v1/metrics")))
			topts = append(topts, otlptracehttp.WithEndpointURL(signalURL(cfg.Endpoint, "/v1/traces")))
		}
		if mexp, err = otlpmetrichttp.New(ctx, mopts...); err != nil {
			return nil, err
		}
		if cfg.Traces {
			if texp, err = otlptracehttp.New(ctx, topts...); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("protocol %q: want http or grpc", cfg.Protocol)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "knee"))
	e := &Exporter{cfg: cfg, recs: make(chan *record.Request, 4096), done: make(chan struct{})}
	e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(cfg.Interval), sdkmetric.WithTimeout(cfg.FlushTimeout))))
	if texp != nil {
		e.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
			sdktrace.WithBatcher(texp, sdktrace.WithExportTimeout(cfg.FlushTimeout), sdktrace.WithMaxQueueSize(8192)))
		e.tracer = e.tp.Tracer("github.com/knee-dev/knee")
	}
	if err := e.instruments(); err != nil {
		return nil, err
	}
	handlerMu.Lock()
	active[e] = true
	handlerMu.Unlock()
	go e.loop()
	return e, nil
}

func (e *Exporter) instruments() error {
	m := e.mp.Meter("github.com/knee-dev/knee")
	var err error
	hist := func(name, unit, desc string, bounds ...float64) metric.Float64Histogram {
		if err != nil {
			return nil
		}
		var h metric.Float64Histogram
		h, err = m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
		return h
	}
	// Bucket boundaries are the ones the GenAI conventions advise.
	e.duration = hist(MetricDuration, "s", "GenAI operation duration: sent to last content chunk (to the end for failures).",
		0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
	e.tokens = hist(MetricTokenUsage, "{token}", "Input and output tokens of completed requests.",
		1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
	e.ttft = hist(MetricTimeToFirst, "s", "Time from sending a request to its first content chunk.",
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)
	e.perChunk = hist(MetricTimePerChunk, "s", "Gap before each content chunk after the first.",
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5)
	e.tpot = hist(MetricTimePerToken, "s", "Time per output token after the first: (e2e - ttft) / (output tokens - 1).",
		0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1)
	e.lag = hist(MetricSendLag, "s", "How late the client sent a request against its schedule.",
		0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5)
	if err != nil {
		return err
	}
	e.excluded, err = m.Int64Counter(MetricExcluded, metric.WithUnit("{request}"),
		metric.WithDescription("Requests left out of the statistics: warm-up, cool-down, canceled by an interrupt."))
	return err
}

// Running says which run the records that follow belong to: its time origin
// (record times are offsets from it) and load level (a sweep's step).
func (e *Exporter) Running(start time.Time, load float64) {
	e.mu.Lock()
	e.start, e.step = start, load
	e.mu.Unlock()
}

// Observe is for loadgen's OnRecord: it copies the record for the export
// goroutine and returns.
func (e *Exporter) Observe(r *record.Request) {
	c := r.Clone()
	e.recs <- &c
}

func (e *Exporter) loop() {
	defer close(e.done)
	for r := range e.recs {
		e.export(r)
	}
}

func secs(d time.Duration) float64 { return d.Seconds() }

// attrs are the conventions' request attributes and knee's run ones.
func (e *Exporter) attrs(step float64) []attribute.KeyValue {
	op := "chat"
	if e.cfg.API == "completions" {
		op = "text_completion"
	}
	kv := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", op),
		attribute.String("gen_ai.provider.name", "openai"), // the API knee speaks, whatever serves it
		attribute.String("gen_ai.request.model", e.cfg.Model),
		attribute.String("knee.run.kind", e.cfg.Kind),
		attribute.Float64("knee.step.load", step),
	}
	if e.cfg.Run != "" {
		kv = append(kv, attribute.String("knee.run.id", e.cfg.Run))
	}
	if host, port, ok := hostPort(e.cfg.Server); ok {
		kv = append(kv, attribute.String("server.address", host), attribute.Int("server.port", port))
	} else if e.cfg.Server != "" {
		kv = append(kv, attribute.String("server.address", e.cfg.Server))
	}
	return kv
}

func hostPort(server string) (string, int, bool) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", 0, false
	}
	host, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		return u.Host, 0, false
	}
	port, err := strconv.Atoi(p)
	return host, port, err == nil
}

func (e *Exporter) export(r *record.Request) {
	e.mu.Lock()
	start, step := e.start, e.step
	e.mu.Unlock()
	ctx := context.Background()
	base := e.attrs(step)
	if r.Warmup {
		e.excluded.Add(ctx, 1, metric.WithAttributes(base...))
		return
	}
	if e.tracer != nil {
		e.span(r, start, base)
	}
	e.lag.Record(ctx, secs(r.Lag()), metric.WithAttributes(base...))
	if !r.OK() {
		end := r.StreamEnd
		if end < r.Sent {
			end = r.Sent
		}
		e.duration.Record(ctx, secs(end-r.Sent), metric.WithAttributes(append(base, attribute.String("error.type", string(r.Error)))...))
		return
	}
	set := metric.WithAttributes(base...)
	if ttft, ok := r.TTFT(); ok {
		e.ttft.Record(ctx, secs(ttft), set)
		e2e, _ := r.E2E()
		e.duration.Record(ctx, secs(e2e), set)
	}
	if tpot, ok := r.TPOT(); ok {
		e.tpot.Record(ctx, secs(tpot), set)
	}
	for i := 1; i < len(r.TokenTimes); i++ {
		e.perChunk.Record(ctx, secs(r.TokenTimes[i]-r.TokenTimes[i-1]), set)
	}
	e.tokens.Record(ctx, float64(r.InputTokens), metric.WithAttributes(append(base, attribute.String("gen_ai.token.type", "input"))...))
	e.tokens.Record(ctx, float64(r.OutputTokens), metric.WithAttributes(append(base, attribute.String("gen_ai.token.type", "output"))...))
}

// span is one request: from send to the end of its stream, with its
// phases as events.
func (e *Exporter) span(r *record.Request, start time.Time, base []attribute.KeyValue) {
	at := func(d time.Duration) time.Time { return start.Add(d) }
	end := max(r.StreamEnd, r.Done, r.Sent)
	_, sp := e.tracer.Start(context.Background(), "chat "+e.cfg.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(at(r.Sent)), trace.WithAttributes(base...),
		trace.WithAttributes(attribute.Int64("knee.request.id", r.ID),
			attribute.Int("gen_ai.usage.input_tokens", r.InputTokens), attribute.Int("gen_ai.usage.output_tokens", r.OutputTokens)))
	sp.AddEvent("scheduled", trace.WithTimestamp(at(r.Scheduled)))
	sp.AddEvent("sent", trace.WithTimestamp(at(r.Sent)))
	if r.HasFirstToken() {
		sp.AddEvent("first_token", trace.WithTimestamp(at(r.FirstToken)))
		sp.AddEvent("done", trace.WithTimestamp(at(r.Done)))
	}
	if !r.OK() {
		sp.SetAttributes(attribute.String("error.type", string(r.Error)))
		sp.SetStatus(codes.Error, string(r.Error))
	}
	sp.End(trace.WithTimestamp(at(end)))
}

// Close exports what is left and stops, within FlushTimeout for each
// signal; it reports an error when the last export failed.
func (e *Exporter) Close() error {
	close(e.recs)
	<-e.done
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.FlushTimeout)
	defer cancel()
	err := e.mp.Shutdown(ctx)
	if e.tp != nil {
		tctx, tcancel := context.WithTimeout(context.Background(), e.cfg.FlushTimeout)
		err = errors.Join(err, e.tp.Shutdown(tctx))
		tcancel()
	}
	handlerMu.Lock()
	delete(active, e)
	handlerMu.Unlock()
	if err != nil {
		e.exportFailed(err)
	}
	return err
}
