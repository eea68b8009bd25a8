// Package scrape reads a target's Prometheus /metrics while a run goes and
// turns it into knee's server-side view: per window, the server's queue,
// prefill and decode time distributions (from histogram deltas), running and
// waiting requests, KV-cache usage, preemptions, prefix-cache hit rate and
// token throughput.
//
// Reading order: names.go (which metric of which server means what: vLLM V1
// and its older names, SGLang, TGI, llama.cpp's server, knee serve),
// parse.go (one exposition → one Sample, with prometheus/common/expfmt doing
// the parsing; the body is read bounded and only known families are kept),
// series.go (samples over time → a Window of deltas, counter resets
// included), scraper.go (the goroutine that scrapes on an interval, never in
// the load's way), join.go (the client's records joined with the server's
// view: TTFT split into client lag, network and HTTP overhead, server queue
// and server prefill).
package scrape
