package stats

import (
	"encoding/json"
	"math"
	"slices"
)

// Dist summarises one distribution: latencies in milliseconds (SPEC §4), or
// token counts in Shape. Percentiles interpolate linearly between closest
// ranks (numpy's default, as vLLM's benchmark does).
//
// In JSON an infinite value is written as null: only the "adjusted"
// distributions, which count failed requests as infinitely slow, have them,
// and null there means "at least this share of requests failed". Reading
// null back gives +Inf.
type Dist struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// distJSON is Dist on the wire: nil stands for +Inf.
type distJSON struct {
	Count int      `json:"count"`
	Mean  *float64 `json:"mean"`
	P50   *float64 `json:"p50"`
	P90   *float64 `json:"p90"`
	P95   *float64 `json:"p95"`
	P99   *float64 `json:"p99"`
	P999  *float64 `json:"p999"`
	Max   *float64 `json:"max"`
}

func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

func orInf(p *float64) float64 {
	if p == nil {
		return math.Inf(1)
	}
	return *p
}

// MarshalJSON writes non-finite values as null (JSON has no infinity).
func (d Dist) MarshalJSON() ([]byte, error) {
	return json.Marshal(distJSON{Count: d.Count, Mean: finite(d.Mean), P50: finite(d.P50), P90: finite(d.P90),
		P95: finite(d.P95), P99: finite(d.P99), P999: finite(d.P999), Max: finite(d.Max)})
}

// UnmarshalJSON reads null as +Inf and a missing field as zero.
func (d *Dist) UnmarshalJSON(b []byte) error {
	// A field left out stays 0 (its pointer keeps pointing at vals); null
	// sets the pointer to nil, read as +Inf.
	var w distJSON
	vals := [7]float64{}
	w.Mean, w.P50, w.P90, w.P95, w.P99, w.P999, w.Max = &vals[0], &vals[1], &vals[2], &vals[3], &vals[4], &vals[5], &vals[6]
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*d = Dist{Count: w.Count, Mean: orInf(w.Mean), P50: orInf(w.P50), P90: orInf(w.P90), P95: orInf(w.P95),
		P99: orInf(w.P99), P999: orInf(w.P999), Max: orInf(w.Max)}
	return nil
}

// Stat returns the named statistic: mean, p50, p90, p95, p99, p999 or max.
func (d Dist) Stat(name string) (float64, bool) {
	switch name {
	case "mean":
		return d.Mean, true
	case "p50":
		return d.P50, true
	case "p90":
		return d.P90, true
	case "p95":
		return d.P95, true
	case "p99":
		return d.P99, true
	case "p999":
		return d.P999, true
	case "max":
		return d.Max, true
	}
	return 0, false
}

// StatNames lists the statistics of a Dist in display order.
var StatNames = []string{"mean", "p50", "p90", "p95", "p99", "p999", "max"}

// Second is one row of the per-second time series of a run. The series
// covers the whole run, warm-up included, so its effect stays visible; the
// window says where the measured part starts.
type Second struct {
	T           int     `json:"t_s"`         // seconds since run start
	InFlight    int     `json:"in_flight"`   // peak requests in flight during the second
	Completions int     `json:"completions"` // requests finished without error in the second
	Errors      int     `json:"errors"`      // requests failed in the second
	OutputTPS   float64 `json:"output_tps"`  // output tokens that arrived in the second
	TTFTP50MS   float64 `json:"ttft_p50_ms"` // over requests whose first token arrived in the second
	TTFTP95MS   float64 `json:"ttft_p95_ms"`
}

// Shape states the token shapes of a run: requests are not uniform units of
// work. Over completed requests; values are token counts, not milliseconds.
type Shape struct {
	InputTokens  Dist `json:"input_tokens"`
	OutputTokens Dist `json:"output_tokens"`
}

// Window says which part of the run the statistics cover: from the first
// measured (non-warm-up) request's send to the last measured request's end.
type Window struct {
	StartMS          float64 `json:"start_ms"`
	EndMS            float64 `json:"end_ms"`
	ExcludedWarmup   int     `json:"excluded_warmup"`   // requests left out as warm-up (flagged Warmup, sent before the window)
	ExcludedCooldown int     `json:"excluded_cooldown"` // requests flagged Warmup but sent after the window started
}

// Summary is the documented, stable shape of summary.json and --json.
// Latency distributions cover completed (error-free) requests; failed ones
// are summarised apart in FailedE2E and counted as infinite in AdjustedTTFT.
type Summary struct {
	Requests   int            `json:"requests"`  // measured requests (warm-up excluded)
	Completed  int            `json:"completed"` // without error
	Errors     int            `json:"errors"`    // with any error kind (rejections included)
	Rejected   int            `json:"rejected"`  // error kind "rejected" (429/503 admission)
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	DurationS  float64        `json:"duration_s"` // the measurement window's length
	Window     Window         `json:"window"`

	RequestThroughputRPS     float64  `json:"request_throughput_rps"`      // completed / duration
	OutputTokenThroughputTPS float64  `json:"output_token_throughput_tps"` // completed requests' output tokens / duration
	InputTokenThroughputTPS  float64  `json:"input_token_throughput_tps"`  // completed requests' input tokens / duration
	TotalTokenThroughputTPS  float64  `json:"total_token_throughput_tps"`
	GoodputRPS               *float64 `json:"goodput_rps,omitempty"`   // only when SLOs are given
	GoodRequests             *int     `json:"good_requests,omitempty"` // completed requests that met every SLO
	OfferedRateRPS           float64  `json:"offered_rate_rps,omitempty"`
	AchievedRateRPS          float64  `json:"achieved_rate_rps,omitempty"` // (sent − 1) / (last send − first send)
	PeakInFlight             int      `json:"peak_in_flight"`
	// PromptCheck compares the prompt lengths the server served with those
	// requested (nil when no completed request has both).
	PromptCheck *PromptCheck `json:"prompt_tokens_check,omitempty"`
	// ConnectionRetries counts resends of measured requests the transport
	// proved the server had not read.
	ConnectionRetries int     `json:"connection_retries"`
	ErrorRate         float64 `json:"error_rate"`     // errors / requests, 0..1
	RejectionRate     float64 `json:"rejection_rate"` // rejected / requests, 0..1

	InputTokens  int64 `json:"input_tokens"`  // total over completed requests
	OutputTokens int64 `json:"output_tokens"` // total over completed requests
	// Items answered by embeddings and rerank requests (completed), and
	// per second of the window; 0 for the generation APIs.
	Items            int64   `json:"items,omitempty"`
	ItemThroughputPS float64 `json:"item_throughput_ps,omitempty"`

	TTFT      Dist `json:"ttft_ms"`
	TTFTSched Dist `json:"ttft_sched_ms"`
	ITL       Dist `json:"itl_ms"` // one value per gap between content chunks
	TPOT      Dist `json:"tpot_ms"`
	E2E       Dist `json:"e2e_ms"`
	Lag       Dist `json:"lag_ms"` // every measured request, failed ones included
	// Latency of failed requests (send to the end of their stream), reported
	// apart, and TTFT percentiles that count failures as infinitely slow.
	FailedE2E     Dist  `json:"failed_e2e_ms"`
	AdjustedTTFT  Dist  `json:"adjusted_ttft_ms"`
	ServerQueue   *Dist `json:"server_queue_ms,omitempty"`
	ServerPrefill *Dist `json:"server_prefill_ms,omitempty"`
	ServerDecode  *Dist `json:"server_decode_ms,omitempty"`

	// Chunk facts behind ITL: chunks of completed requests, how many carried
	// more than one token, and how many arrived in one socket read with an
	// earlier chunk (their gap is 0).
	Chunks           int            `json:"chunks"`
	MultiTokenChunks int            `json:"multi_token_chunks"`
	CoalescedChunks  int            `json:"coalesced_chunks"`
	TokenSources     map[string]int `json:"token_sources,omitempty"` // where output/input counts came from

	Shape      Shape    `json:"shape"`
	TimeSeries []Second `json:"time_series,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// RatesOver restates the summary's rates (requests, tokens, items,
// goodput), measured over its own window of DurationS seconds, over a
// longer window of d seconds that holds the same requests, so that the
// rates of parts of a run (a mix's classes) add up to the run's. DurationS
// is left as it was: callers say which window they show.
func (s *Summary) RatesOver(d float64) {
	if !(d > 0) {
		return
	}
	if own := s.DurationS; own > 0 {
		scale := func(rate float64) float64 { return rate * own / d }
		s.RequestThroughputRPS = scale(s.RequestThroughputRPS)
		s.InputTokenThroughputTPS = scale(s.InputTokenThroughputTPS)
		s.OutputTokenThroughputTPS = scale(s.OutputTokenThroughputTPS)
		s.TotalTokenThroughputTPS = scale(s.TotalTokenThroughputTPS)
		s.ItemThroughputPS = scale(s.ItemThroughputPS)
		if s.GoodputRPS != nil {
			g := scale(*s.GoodputRPS)
			s.GoodputRPS = &g
		}
	} else if s.GoodRequests != nil {
		g := float64(*s.GoodRequests) / d
		s.GoodputRPS = &g
	}
}

// Latency returns the distribution of a latency metric by its SLO name
// (ttft, ttft_sched, itl, tpot, e2e, lag), as SLOs and reports name them.
func (s *Summary) Latency(metric string) (Dist, bool) {
	switch metric {
	case "ttft":
		return s.TTFT, true
	case "ttft_sched":
		return s.TTFTSched, true
	case "itl":
		return s.ITL, true
	case "tpot":
		return s.TPOT, true
	case "e2e":
		return s.E2E, true
	case "lag":
		return s.Lag, true
	}
	return Dist{}, false
}

// LatencyMetrics lists the latency metrics in display order.
var LatencyMetrics = []string{"ttft", "ttft_sched", "itl", "tpot", "e2e", "lag"}

// PromptCheck compares, over completed requests whose counts came from the
// server's usage, the prompt tokens the server served (usage.prompt_tokens)
// with those the workload asked for.
type PromptCheck struct {
	Compared  int `json:"compared"`   // requests with both lengths
	Exact     int `json:"exact"`      // served == requested
	WithinOne int `json:"within_one"` // |served − requested| <= 1
	// MedianOffPct is the median of (served − requested) / requested, in percent.
	MedianOffPct float64 `json:"median_off_pct"`
}

// PromptOffLimitPct is how far the median may be off before knee warns.
const PromptOffLimitPct = 2.0

// Off reports a median beyond PromptOffLimitPct.
func (p *PromptCheck) Off() bool { return math.Abs(p.MedianOffPct) > PromptOffLimitPct }

// Median of a non-empty slice (the mean of the middle two for an even
// count); v is not changed.
func Median[T int | float32 | float64](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
