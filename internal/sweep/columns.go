package sweep

import (
	"fmt"
	"strings"
)

// headerColumn is what a header cell of a load table means: the load
// column, a known column (canonical name, the factor that turns the file's
// unit into knee's), or a column knee does not use (ignored, with why).
type headerColumn struct {
	name     string // canonical (ttft_p95_ms, throughput_rps, ...); "" when ignored
	scale    float64
	loadKind string // Concurrency or Rate for the load column
	generic  bool   // a load column named only "load": the kind is a guess
	ignored  string // why the column is not used
}

// Words that name a load column of each kind, whole.
var (
	concurrencyNames = words("load concurrency max_concurrency concurrent concurrent_requests num_concurrent users concurrent_users num_users clients vus streams parallel parallelism")
	rateNames        = words("rate rate_rps request_rate request_rate_rps qps rps target_rate target_qps target_rps arrival_rate req_rate request_rate_req_s rate_req_s")
)

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// headerTokens lowercases a header cell and splits it into words: "P95 TTFT
// (ms)", "ttft_p95_ms" and "ttft-p95-ms" all give [p95 ttft ms] in some
// order; "p99.9" becomes p999 and "%" the word pct.
func headerTokens(h string) []string {
	s := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
	s = strings.ReplaceAll(s, "99.9", "999")
	s = strings.ReplaceAll(s, "%", " pct ")
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

func has(toks []string, ws ...string) bool {
	for _, t := range toks {
		for _, w := range ws {
			if t == w {
				return true
			}
		}
	}
	return false
}

// latencyMetric finds which latency a header names, if any.
func latencyMetric(toks []string) string {
	joined := " " + strings.Join(toks, " ") + " "
	switch {
	case strings.Contains(joined, " ttft sched ") || strings.Contains(joined, " ttft_sched "):
		return "ttft_sched"
	case has(toks, "ttft") || strings.Contains(joined, " time to first token "):
		return "ttft"
	case has(toks, "itl") || strings.Contains(joined, " inter token ") || has(toks, "intertoken"):
		return "itl"
	case has(toks, "tpot") || strings.Contains(joined, " time per output token "):
		return "tpot"
	case has(toks, "e2e", "e2el", "latency") || strings.Contains(joined, " end to end "):
		return "e2e"
	}
	return ""
}

func latencyStat(toks []string) string {
	switch {
	case has(toks, "mean", "avg", "average"):
		return "mean"
	case has(toks, "median", "p50", "med"):
		return "p50"
	case has(toks, "p90"):
		return "p90"
	case has(toks, "p95"):
		return "p95"
	case has(toks, "p99"):
		return "p99"
	case has(toks, "p999"):
		return "p999"
	case has(toks, "max", "maximum"):
		return "max"
	case has(toks, "min", "minimum", "std", "stdev", "stddev", "variance"):
		return "unsupported"
	}
	return ""
}

// latencyScale is the factor from the header's unit to milliseconds; 0 when
// the header names no unit.
func latencyScale(toks []string) float64 {
	switch {
	case has(toks, "ms", "msec", "msecs", "millis", "milliseconds"):
		return 1
	case has(toks, "s", "sec", "secs", "second", "seconds"):
		return 1000
	case has(toks, "us", "usec", "micros", "microseconds"):
		return 0.001
	}
	return 0
}

// classifyHeader says what one header cell of a load table holds. The names
// people use (docs/sweep.md): knee's own (ttft_p95_ms), vLLM's (p95_ttft_ms,
// "P95 TTFT (ms)", request_throughput, output_throughput), and the usual
// load names (load, concurrency, rate, qps, request_rate).
func classifyHeader(h string) (headerColumn, error) {
	toks := headerTokens(h)
	joined := strings.Join(toks, "_")
	c := headerColumn{scale: 1}
	switch {
	case len(toks) == 0:
		return c, fmt.Errorf("empty column name in the header (want e.g. %s)", ExampleHeader)
	case concurrencyNames[joined]:
		c.loadKind, c.generic = Concurrency, joined == "load"
		return c, nil
	case rateNames[joined]:
		c.loadKind = Rate
		return c, nil
	}
	percent := has(toks, "pct", "percent", "percentage")
	switch {
	case has(toks, "error", "errors", "failure", "failures", "failed", "fail") && (has(toks, "rate", "ratio", "fraction") || percent):
		c.name = "error_rate"
	case has(toks, "rejection", "rejections", "rejected") && (has(toks, "rate", "ratio", "fraction") || percent):
		c.name = "rejection_rate"
	}
	if c.name != "" {
		if percent {
			c.scale = 0.01
		}
		return c, nil
	}
	metric := latencyMetric(toks)
	perSecond := has(toks, "throughput", "tps", "rps", "per", "s", "sec", "second", "goodput", "qps")
	if metric == "" || has(toks, "throughput") {
		switch {
		case has(toks, "goodput"):
			c.name = "goodput_rps"
		case has(toks, "offered"):
			c.name = "offered_rps"
		case !perSecond:
		case has(toks, "peak", "max", "maximum"):
			c.ignored = "a peak, not the step's throughput"
		case has(toks, "tok", "toks", "token", "tokens", "tps", "output", "input", "prompt", "generation", "generated", "completion"):
			switch {
			case has(toks, "input", "prompt"):
				c.name = "input_tps"
			case has(toks, "total"):
				c.ignored = "total token throughput (knee uses output and input tokens/s)"
			default: // tokens/s alone means generated tokens, as vLLM and GuideLLM report
				c.name = MetricOutputTPS
			}
		case has(toks, "throughput", "req", "reqs", "request", "requests", "rps", "qps"):
			c.name = MetricThroughputRPS
		}
		if c.name != "" || c.ignored != "" {
			return c, nil
		}
	}
	if metric != "" {
		stat := latencyStat(toks)
		scale := latencyScale(toks)
		switch {
		case stat == "unsupported":
			c.ignored = "knee keeps mean, p50, p90, p95, p99, p999 and max"
			return c, nil
		case stat == "":
			return c, fmt.Errorf("column %q names a latency but no statistic: say which (e.g. %s_p95_ms, mean_%s_ms or \"P95 %s (ms)\")",
				h, metric, metric, strings.ToUpper(metric))
		case scale == 0:
			return c, fmt.Errorf("column %q has no unit: name it %s_%s_ms or %s_%s_s (or \"%s (ms)\")", h, metric, stat, metric, stat, h)
		}
		c.name, c.scale = metric+"_"+stat+"_ms", scale
		return c, nil
	}
	c.ignored = "not a load, throughput, latency or error-rate column"
	return c, nil
}
