package simserver

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/knee-dev/knee/internal/simengine"
)

// Bucket edges as vLLM V1 uses them (seconds), so dashboards built for vLLM
// read this server unchanged.
var (
	ttftBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, ... up to max.
func buckets125(maxV int) []float64 {
	var out []float64
	for m := 1; ; m *= 10 {
		for _, k := range []int{1, 2, 5} {
			if k*m > maxV {
				return out
			}
			out = append(out, float64(k*m))
		}
	}
}

// metrics is the /metrics registry, with vLLM's names, types and the
// model_name label. Gauges and the preemption counter are read from the
// engine at scrape time, so steps pay nothing for them.
type metrics struct {
	reg *prometheus.Registry

	promptTokens, generationTokens prometheus.Counter
	success                        *prometheus.CounterVec
	ttft, itl                      prometheus.Histogram
	e2e, queue, prefill, decode    prometheus.Histogram
	inference, tpot                prometheus.Histogram
	reqPrompt, reqGeneration       prometheus.Histogram
	rejected                       prometheus.Counter
}

func newMetrics(model string, maxModelLen int, stats func() simengine.EngineStats) *metrics {
	reg := prometheus.NewRegistry()
	lbl := prometheus.Labels{"model_name": model}
	m := &metrics{reg: reg}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: lbl})
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, b []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b, ConstLabels: lbl})
		reg.MustRegister(h)
		return h
	}
	gauge := func(name, help string, f func(simengine.EngineStats) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: lbl},
			func() float64 { return f(stats()) }))
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func(s simengine.EngineStats) float64 { return float64(s.Running) })
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func(s simengine.EngineStats) float64 { return float64(s.Waiting) })
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func(s simengine.EngineStats) float64 { return s.KVUsage })
	gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage (the older name of vllm:kv_cache_usage_perc).", func(s simengine.EngineStats) float64 { return s.KVUsage })
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vllm:num_preemptions_total", Help: "Cumulative number of preemptions from the engine.", ConstLabels: lbl},
		func() float64 { return float64(stats().Preemptions) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vllm:prefix_cache_queries_total", Help: "Prefix cache queries, in terms of number of queried tokens.", ConstLabels: lbl},
		func() float64 { return float64(stats().PrefixCacheQueries) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vllm:prefix_cache_hits_total", Help: "Prefix cache hits, in terms of number of cached tokens.", ConstLabels: lbl},
		func() float64 { return float64(stats().PrefixCacheHits) }))
	m.promptTokens = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	m.generationTokens = counter("vllm:generation_tokens_total", "Number of generation tokens processed.")
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total", Help: "Count of successfully processed requests.", ConstLabels: lbl}, []string{"finished_reason"})
	reg.MustRegister(m.success)
	m.rejected = counter("knee:requests_rejected_total", "Requests answered 429 because the waiting queue was full (knee extension).")
	m.ttft = hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	m.itl = hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestBuckets)
	m.queue = hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestBuckets)
	m.prefill = hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestBuckets)
	m.decode = hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestBuckets)
	m.inference = hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", requestBuckets)
	m.tpot = hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlBuckets)
	m.reqPrompt = hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", buckets125(maxModelLen))
	m.reqGeneration = hist("vllm:request_generation_tokens", "Number of generation tokens processed.", buckets125(maxModelLen))
	reg.MustRegister(collectors.NewGoCollector())
	for _, r := range []string{"stop", "length"} {
		m.success.WithLabelValues(r) // expose zeros before the first request
	}
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func sec(ns int64) float64 { return float64(ns) / 1e9 }
