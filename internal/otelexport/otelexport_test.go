package otelexport

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
)

// collector is the OpenTelemetry Collector's own OTLP receiver, started
// in-process on one loopback port with only the given protocol enabled, and
// feeding consumertest sinks.
type collector struct {
	metrics consumertest.MetricsSink
	traces  consumertest.TracesSink
}

// freeLoopbackAddr asks the kernel for a free loopback port: the receiver
// binds its own listener and does not report the port it got for ":0".
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCollector returns the collector and the endpoint URL knee exports to.
func startCollector(t *testing.T, protocol string) (*collector, string) {
	t.Helper()
	factory := otlpreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig().(*otlpreceiver.Config)
	addr := freeLoopbackAddr(t)
	if protocol == ProtocolHTTP {
		cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	} else {
		cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = addr
	}
	col := &collector{}
	settings := receivertest.NewNopSettings(component.MustNewType("otlp"))
	ctx := context.Background()
	// Both signals on one config share one receiver (and one listener), as in
	// a collector pipeline; starting either starts it.
	metricsRcv, err := factory.CreateMetrics(ctx, settings, cfg, &col.metrics)
	if err != nil {
		t.Fatal(err)
	}
	tracesRcv, err := factory.CreateTraces(ctx, settings, cfg, &col.traces)
	if err != nil {
		t.Fatal(err)
	}
	host := componenttest.NewNopHost()
	if err := metricsRcv.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	if err := tracesRcv.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := metricsRcv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := tracesRcv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return col, "http://" + addr
}

// totals sums, over attribute sets, the last cumulative point the
// collector received for a histogram, optionally only the points whose
// attribute key has the given string value.
func (c *collector) totals(name, key, value string) (count, sum float64) {
	last := map[string][2]float64{} // attributes → {count, sum}
	for _, md := range c.metrics.AllMetrics() {
		rms := md.ResourceMetrics()
		for i := range rms.Len() {
			sms := rms.At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					m := ms.At(k)
					if m.Name() != name || m.Type() != pmetric.MetricTypeHistogram {
						continue
					}
					dps := m.Histogram().DataPoints()
					for p := range dps.Len() {
						dp := dps.At(p)
						if key != "" {
							if v, ok := dp.Attributes().Get(key); !ok || v.Str() != value {
								continue
							}
						}
						last[fmt.Sprint(dp.Attributes().AsRaw())] = [2]float64{float64(dp.Count()), dp.Sum()}
					}
				}
			}
		}
	}
	for _, p := range last {
		count += p[0]
		sum += p[1]
	}
	return count, sum
}

// spans counts the spans received and their events by name.
func (c *collector) spans() (n int, events map[string]int) {
	events = map[string]int{}
	for _, td := range c.traces.AllTraces() {
		rss := td.ResourceSpans()
		for i := range rss.Len() {
			sss := rss.At(i).ScopeSpans()
			for j := range sss.Len() {
				sps := sss.At(j).Spans()
				for k := range sps.Len() {
					n++
					evs := sps.At(k).Events()
					for e := range evs.Len() {
						events[evs.At(e).Name()]++
					}
				}
			}
		}
	}
	return n, events
}

// streamer answers chat completions with six chunks; every fifth request
// gets a 500.
type streamer struct{ n atomic.Int64 }

func (s *streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.n.Add(1)%5 == 0 {
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := range 6 {
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d \"},\"finish_reason\":null}]}\n\n", i)
		fl.Flush()
	}
	fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":6,\"total_tokens\":13}}\n\ndata: [DONE]\n\n")
	fl.Flush()
}

// load runs a small closed-loop load whose records also go to exp.
func load(t *testing.T, exp *Exporter) *loadgen.Result {
	t.Helper()
	target := httptest.NewServer(&streamer{})
	defer target.Close()
	cfg := loadgen.Config{BaseURL: target.URL, Model: "m", Concurrency: 4, Requests: 40, WarmupRequests: 3,
		RequestTimeout: time.Minute, OnRecord: func(r *record.Request) {
			if exp != nil {
				exp.Observe(r)
			}
		}}
	run, err := loadgen.Start(context.Background(), cfg, func(int64) loadgen.Request {
		return loadgen.Request{Prompt: "hello there", PromptTokens: 7, MaxTokens: 6}
	})
	if err != nil {
		t.Fatal(err)
	}
	if exp != nil {
		exp.Running(time.Now().Add(-run.Snapshot().Elapsed), 4)
	}
	return run.Wait()
}

// want is what the records say each exported histogram must hold.
type want struct{ count, sum float64 }

func expected(recs []record.Request) map[string]want {
	w := map[string]want{}
	add := func(name string, v float64) {
		x := w[name]
		x.count++
		x.sum += v
		w[name] = x
	}
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		add(MetricSendLag, r.Lag().Seconds())
		if !r.OK() {
			add(MetricDuration, max(r.StreamEnd-r.Sent, 0).Seconds())
			continue
		}
		if ttft, ok := r.TTFT(); ok {
			add(MetricTimeToFirst, ttft.Seconds())
			e2e, _ := r.E2E()
			add(MetricDuration, e2e.Seconds())
		}
		if tpot, ok := r.TPOT(); ok {
			add(MetricTimePerToken, tpot.Seconds())
		}
		for k := 1; k < len(r.TokenTimes); k++ {
			add(MetricTimePerChunk, (r.TokenTimes[k] - r.TokenTimes[k-1]).Seconds())
		}
		add(MetricTokenUsage+" output", float64(r.OutputTokens))
	}
	return w
}

func checkExported(t *testing.T, col *collector, recs []record.Request) {
	t.Helper()
	for name, w := range expected(recs) {
		metricName, key, value := name, "", ""
		if n, ok := strings.CutSuffix(name, " output"); ok {
			metricName, key, value = n, "gen_ai.token.type", "output"
		}
		count, sum := col.totals(metricName, key, value)
		if count != w.count || math.Abs(sum-w.sum) > 1e-9*math.Max(1, w.sum) {
			t.Errorf("%s: exported count %v sum %.9f, the records say %v and %.9f", name, count, sum, w.count, w.sum)
		}
	}
}

// TestExportOverHTTPAndGRPC exports a run to the Collector's own OTLP
// receiver and checks every histogram against the run's records.
func TestExportOverHTTPAndGRPC(t *testing.T) {
	for _, protocol := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			col, endpoint := startCollector(t, protocol)
			var reported atomic.Int64
			exp, err := Start(Config{Endpoint: endpoint, Protocol: protocol, Traces: true, Kind: "bench", Run: "9",
				Model: "m", Server: "http://127.0.0.1:8000", OnError: func(error) { reported.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			res := load(t, exp)
			if err := exp.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if reported.Load() != 0 {
				t.Errorf("%d export errors against a collector that is up", exp.ExportErrors())
			}
			if len(col.metrics.AllMetrics()) == 0 {
				t.Fatal("the collector received no metrics")
			}
			checkExported(t, col, res.Records)
			measured := 0
			for _, r := range res.Records {
				if !r.Warmup {
					measured++
				}
			}
			spans, events := col.spans()
			if spans != measured || events["sent"] != measured || events["first_token"] == 0 || events["done"] != events["first_token"] {
				t.Errorf("spans %d, events %v: want one span per measured request (%d) with sent, first_token and done", spans, events, measured)
			}
		})
	}
}

func TestDownCollectorLeavesTheRunAlone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	var reported atomic.Int64
	exp, err := Start(Config{Endpoint: down, Protocol: ProtocolHTTP, Traces: true, Interval: 50 * time.Millisecond,
		FlushTimeout: 500 * time.Millisecond, Model: "m", OnError: func(error) { reported.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	with := load(t, exp)
	t0 := time.Now()
	closeErr := exp.Close()
	closing := time.Since(t0)
	without := load(t, nil)
	if len(with.Records) != len(without.Records) || len(with.Records) != 40 {
		t.Errorf("records: %d with a down collector, %d without; want 40 both", len(with.Records), len(without.Records))
	}
	if closeErr == nil || reported.Load() != 1 {
		t.Errorf("close error %v, reported %d times: want the failure reported once", closeErr, reported.Load())
	}
	// Bounded: the metric and the span flush each give up at FlushTimeout.
	if closing > 2*time.Second+2*500*time.Millisecond {
		t.Errorf("closing took %v against a down collector, want at most about two flush timeouts", closing)
	}
}

func TestParseProtocolAndEndpoint(t *testing.T) {
	for in, want := range map[string]string{"": ProtocolHTTP, "http/protobuf": ProtocolHTTP, "GRPC": ProtocolGRPC} {
		if got, err := ParseProtocol(in); err != nil || got != want {
			t.Errorf("ParseProtocol(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseProtocol("http/json"); err == nil {
		t.Error("http/json must be refused (knee sends protobuf)")
	}
	if err := CheckEndpoint("localhost:4318"); err == nil {
		t.Error("an endpoint without a scheme must be refused")
	}
	if got := signalURL("http://c:4318", "/v1/metrics"); got != "http://c:4318/v1/metrics" {
		t.Errorf("signalURL = %q", got)
	}
}
