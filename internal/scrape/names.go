package scrape

import (
	"bytes"
	"strings"
)

// Metric is knee's name for one thing a server measures. Each server table
// below maps its own names (and their older aliases) onto these.
type Metric string

// The metrics knee reads. Gauges are read as they are; counters and
// histograms as deltas over a window.
const (
	// Gauges.
	Running       Metric = "running"         // requests in the running batch (or busy slots)
	Waiting       Metric = "waiting"         // requests waiting for admission
	KVUsage       Metric = "kv_usage"        // KV-cache (token pool) usage, 0..1
	PrefixHitRate Metric = "prefix_hit_rate" // prefix-cache hit rate as a gauge, 0..1 (servers without hit/query counters)

	// Counters.
	Preemptions      Metric = "preemptions"       // preempted (vLLM) or retracted (SGLang) requests
	PrefixQueries    Metric = "prefix_queries"    // prefix-cache lookups (tokens for vLLM V1)
	PrefixHits       Metric = "prefix_hits"       // ... and hits
	PromptTokens     Metric = "prompt_tokens"     // prefill tokens processed
	GenerationTokens Metric = "generation_tokens" // output tokens generated
	RequestsDone     Metric = "requests_done"     // finished requests
	Rejected         Metric = "rejected"          // requests refused at admission (knee serve)
	PromptSeconds    Metric = "prompt_seconds"    // time spent in prompt processing (llama.cpp)
	DecodeSeconds    Metric = "decode_seconds"    // time spent generating (llama.cpp)

	// Histograms (seconds).
	TTFT      Metric = "ttft"      // arrival at the server → first token
	ITL       Metric = "itl"       // between output tokens
	Queue     Metric = "queue"     // waiting for admission
	Prefill   Metric = "prefill"   // admission → first token
	Decode    Metric = "decode"    // first token → last token
	Inference Metric = "inference" // admission → last token (prefill + decode)
	E2E       Metric = "e2e"       // arrival → last token

	// A knee client's own endpoint (knee bench --metrics-addr).
	InFlight Metric = "in_flight" // requests sent and not finished
	Failed   Metric = "failed"    // measured requests that failed, all kinds
	SendLag  Metric = "send_lag"  // histogram: sent − scheduled
)

// HistMetrics are the histograms in report order.
var HistMetrics = []Metric{Queue, Prefill, Decode, Inference, TTFT, ITL, E2E}

type kind int

const (
	gauge kind = iota
	counter
	histogram
	// sumOf is a counter read from a histogram's _sum (TGI counts tokens
	// only as per-request histograms).
	sumOf
)

// entry maps one knee metric to a server's names, the preferred (newest)
// name first.
type entry struct {
	metric Metric
	kind   kind
	names  []string
}

// table is one server's names.
type table struct {
	server  string // vllm, sglang, tgi, llamacpp, knee
	label   string // for people
	entries []entry
}

// vLLM: V1 names first, then the names older releases (V0 and early V1)
// used for the same thing. Counters may appear with or without _total
// (prometheus_client adds it to the samples).
var vllmEntries = []entry{
	{Running, gauge, []string{"vllm:num_requests_running"}},
	{Waiting, gauge, []string{"vllm:num_requests_waiting"}},
	{KVUsage, gauge, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
	{PrefixHitRate, gauge, []string{"vllm:gpu_prefix_cache_hit_rate"}},
	{Preemptions, counter, []string{"vllm:num_preemptions_total", "vllm:num_preemptions"}},
	{PrefixQueries, counter, []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}},
	{PrefixHits, counter, []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}},
	{PromptTokens, counter, []string{"vllm:prompt_tokens_total"}},
	{GenerationTokens, counter, []string{"vllm:generation_tokens_total"}},
	{RequestsDone, counter, []string{"vllm:request_success_total"}},
	{TTFT, histogram, []string{"vllm:time_to_first_token_seconds"}},
	{ITL, histogram, []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}},
	{Queue, histogram, []string{"vllm:request_queue_time_seconds"}},
	{Prefill, histogram, []string{"vllm:request_prefill_time_seconds"}},
	{Decode, histogram, []string{"vllm:request_decode_time_seconds"}},
	{Inference, histogram, []string{"vllm:request_inference_time_seconds"}},
	{E2E, histogram, []string{"vllm:e2e_request_latency_seconds"}},
}

var tables = []table{
	// knee serve speaks vLLM's names and adds its own under knee:.
	{"knee", "knee serve", append([]entry{{Rejected, counter, []string{"knee:requests_rejected_total"}}}, vllmEntries...)},
	{"vllm", "vLLM", vllmEntries},
	{"sglang", "SGLang", []entry{
		{Running, gauge, []string{"sglang:num_running_reqs"}},
		{Waiting, gauge, []string{"sglang:num_queue_reqs"}},
		{KVUsage, gauge, []string{"sglang:token_usage"}},
		{PrefixHitRate, gauge, []string{"sglang:cache_hit_rate"}},
		{Preemptions, counter, []string{"sglang:num_retracted_requests_total"}},
		{PrefixHits, counter, []string{"sglang:cached_tokens_total"}},
		{PromptTokens, counter, []string{"sglang:prompt_tokens_total"}},
		{GenerationTokens, counter, []string{"sglang:generation_tokens_total"}},
		{RequestsDone, counter, []string{"sglang:num_requests_total"}},
		{TTFT, histogram, []string{"sglang:time_to_first_token_seconds"}},
		{ITL, histogram, []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}},
		{Queue, histogram, []string{"sglang:queue_time_seconds"}},
		{E2E, histogram, []string{"sglang:e2e_request_latency_seconds"}},
	}},
	{"tgi", "TGI", []entry{
		{Running, gauge, []string{"tgi_batch_current_size"}},
		{Waiting, gauge, []string{"tgi_queue_size"}},
		{RequestsDone, counter, []string{"tgi_request_success"}},
		{PromptTokens, sumOf, []string{"tgi_request_input_length"}},
		{GenerationTokens, sumOf, []string{"tgi_request_generated_tokens"}},
		{Queue, histogram, []string{"tgi_request_queue_duration"}},
		{Inference, histogram, []string{"tgi_request_inference_duration"}},
		{ITL, histogram, []string{"tgi_request_mean_time_per_token_duration"}},
		{E2E, histogram, []string{"tgi_request_duration"}},
	}},
	// knee's load generator itself (package livemetrics): its live view
	// of a load, read by the same scraper as any server's.
	{"knee-client", "knee load generator", []entry{
		{InFlight, gauge, []string{"knee_client_requests_in_flight"}},
		{RequestsDone, counter, []string{"knee_client_requests_completed_total"}},
		{Failed, counter, []string{"knee_client_request_errors_total"}},
		{PromptTokens, counter, []string{"knee_client_input_tokens_total"}},
		{GenerationTokens, counter, []string{"knee_client_output_tokens_total"}},
		{TTFT, histogram, []string{"knee_client_time_to_first_token_seconds"}},
		{ITL, histogram, []string{"knee_client_inter_token_latency_seconds"}},
		{E2E, histogram, []string{"knee_client_e2e_request_latency_seconds"}},
		{SendLag, histogram, []string{"knee_client_send_lag_seconds"}},
	}},
	{"llamacpp", "llama.cpp server", []entry{
		{Running, gauge, []string{"llamacpp:requests_processing"}},
		{Waiting, gauge, []string{"llamacpp:requests_deferred"}},
		{KVUsage, gauge, []string{"llamacpp:kv_cache_usage_ratio"}},
		{PromptTokens, counter, []string{"llamacpp:prompt_tokens_total"}},
		{GenerationTokens, counter, []string{"llamacpp:tokens_predicted_total"}},
		{PromptSeconds, counter, []string{"llamacpp:prompt_seconds_total"}},
		{DecodeSeconds, counter, []string{"llamacpp:tokens_predicted_seconds_total"}},
	}},
}

// ServerLabel is the name people know a server kind by.
func ServerLabel(server string) string {
	for _, t := range tables {
		if t.server == server {
			return t.label
		}
	}
	if server == "" {
		return "unknown server"
	}
	return server
}

// knownNames is every family name any table reads, with and without the
// _total a client library may add or leave off.
var knownNames = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range tables {
		for _, e := range t.entries {
			for _, n := range e.names {
				m[n] = true
				if e.kind == counter {
					if b, ok := strings.CutSuffix(n, "_total"); ok {
						m[b] = true
					} else {
						m[n+"_total"] = true
					}
				}
			}
		}
	}
	return m
}()

var histSuffixes = [][]byte{[]byte("_bucket"), []byte("_sum"), []byte("_count")}

// knownBytes reports whether a sample or TYPE/HELP name belongs to a family
// knee reads: the name itself, or a histogram/summary series of one. (The
// map lookups with string(b) do not allocate.)
func knownBytes(name []byte) bool {
	if bytes.HasSuffix(name, []byte("_created")) {
		return false // prometheus_client's creation timestamps
	}
	if knownNames[string(name)] {
		return true
	}
	for _, suf := range histSuffixes {
		if b, ok := bytes.CutSuffix(name, suf); ok && knownNames[string(b)] {
			return true
		}
	}
	return false
}
