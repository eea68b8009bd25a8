package otelexport

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
)

// receiver is a small OTLP receiver over HTTP and gRPC built on the OTLP
// protobuf types the exporters themselves use. The collector's own
// otlpreceiver v0.165.0 was measured too heavy for a unit test here: a
// program importing it took 433 s (63 s of CPU) to build on the shared
// 2-core machine, and it would move grpc to v1.85. It keeps, per metric and
// attribute set, the last cumulative histogram point, and every span.
type receiver struct {
	colmetrics.UnimplementedMetricsServiceServer
	coltrace.UnimplementedTraceServiceServer
	mu     sync.Mutex
	points map[string]map[string][2]float64 // metric → attributes → {count, sum}
	spans  int
	events map[string]int
}

func newReceiver() *receiver {
	return &receiver{points: map[string]map[string][2]float64{}, events: map[string]int{}}
}

func attrKey(kvs []*commonpb.KeyValue) string {
	var parts []string
	for _, kv := range kvs {
		parts = append(parts, kv.GetKey()+"="+fmt.Sprint(kv.GetValue()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (rc *receiver) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				h := m.GetHistogram()
				if h == nil {
					continue
				}
				if rc.points[m.GetName()] == nil {
					rc.points[m.GetName()] = map[string][2]float64{}
				}
				for _, dp := range h.GetDataPoints() {
					rc.points[m.GetName()][attrKey(dp.GetAttributes())] = [2]float64{float64(dp.GetCount()), dp.GetSum()}
				}
			}
		}
	}
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

type traceService struct{ rc *receiver }

func (ts traceService) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	ts.rc.mu.Lock()
	defer ts.rc.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				ts.rc.spans++
				for _, ev := range sp.GetEvents() {
					ts.rc.events[ev.GetName()]++
				}
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type grpcTrace struct {
	coltrace.UnimplementedTraceServiceServer
	traceService
}

func (g grpcTrace) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	return g.traceService.Export(ctx, req)
}

// ServeHTTP is OTLP/HTTP with protobuf bodies.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var resp proto.Message
	switch r.URL.Path {
	case "/v1/metrics":
		var req colmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		resp, _ = rc.Export(r.Context(), &req)
	case "/v1/traces":
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		resp, _ = traceService{rc}.Export(r.Context(), &req)
	default:
		http.NotFound(w, r)
		return
	}
	b, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

// totals sums a metric's points over attribute sets, optionally only those
// whose attributes contain match.
func (rc *receiver) totals(name, match string) (count, sum float64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for k, p := range rc.points[name] {
		if strings.Contains(k, match) {
			count += p[0]
			sum += p[1]
		}
	}
	return count, sum
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

func checkExported(t *testing.T, rc *receiver, recs []record.Request) {
	t.Helper()
	for name, w := range expected(recs) {
		metricName, match := name, ""
		if n, ok := strings.CutSuffix(name, " output"); ok {
			metricName, match = n, "gen_ai.token.type=string_value:\"output\""
		}
		count, sum := rc.totals(metricName, match)
		if count != w.count || math.Abs(sum-w.sum) > 1e-9*math.Max(1, w.sum) {
			t.Errorf("%s: exported count %v sum %.9f, the records say %v and %.9f", name, count, sum, w.count, w.sum)
		}
	}
}

func TestExportOverHTTPAndGRPC(t *testing.T) {
	for _, protocol := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			rc := newReceiver()
			var endpoint string
			if protocol == ProtocolHTTP {
				srv := httptest.NewServer(rc)
				defer srv.Close()
				endpoint = srv.URL
			} else {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				gs := grpc.NewServer()
				colmetrics.RegisterMetricsServiceServer(gs, rc)
				coltrace.RegisterTraceServiceServer(gs, grpcTrace{traceService: traceService{rc}})
				go gs.Serve(ln)
				defer gs.Stop()
				endpoint = "http://" + ln.Addr().String()
			}
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
			checkExported(t, rc, res.Records)
			measured := 0
			for _, r := range res.Records {
				if !r.Warmup {
					measured++
				}
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if rc.spans != measured || rc.events["sent"] != measured || rc.events["first_token"] == 0 || rc.events["done"] != rc.events["first_token"] {
				t.Errorf("spans %d, events %v: want one span per measured request (%d) with sent, first_token and done", rc.spans, rc.events, measured)
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
