package stats

// Dist summarises one latency metric in milliseconds (SPEC §4).
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

// Second is one row of the per-second time series of a run.
type Second struct {
	T           int     `json:"t_s"`         // seconds since run start
	InFlight    int     `json:"in_flight"`   // peak requests in flight during the second
	Completions int     `json:"completions"` // requests finished in the second
	Errors      int     `json:"errors"`      // requests failed in the second
	OutputTPS   float64 `json:"output_tps"`  // output tokens that arrived in the second
	TTFTP50MS   float64 `json:"ttft_p50_ms"` // over requests whose first token arrived in the second
	TTFTP95MS   float64 `json:"ttft_p95_ms"`
}

// Shape states the token shapes of a run: requests are not uniform units of work.
type Shape struct {
	InputTokens  Dist `json:"input_tokens"`
	OutputTokens Dist `json:"output_tokens"`
}

// Window says which part of the run the statistics cover.
type Window struct {
	StartMS          float64 `json:"start_ms"`
	EndMS            float64 `json:"end_ms"`
	ExcludedWarmup   int     `json:"excluded_warmup"`   // requests left out as warm-up
	ExcludedCooldown int     `json:"excluded_cooldown"` // requests left out as cool-down
}

// Summary is the documented, stable shape of summary.json and --json.
type Summary struct {
	Requests   int            `json:"requests"`
	Completed  int            `json:"completed"`
	Errors     int            `json:"errors"`
	Rejected   int            `json:"rejected"`
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	DurationS  float64        `json:"duration_s"`
	Window     Window         `json:"window"`

	RequestThroughputRPS     float64  `json:"request_throughput_rps"`
	OutputTokenThroughputTPS float64  `json:"output_token_throughput_tps"`
	InputTokenThroughputTPS  float64  `json:"input_token_throughput_tps"`
	TotalTokenThroughputTPS  float64  `json:"total_token_throughput_tps"`
	GoodputRPS               *float64 `json:"goodput_rps,omitempty"` // only when SLOs are given
	OfferedRateRPS           float64  `json:"offered_rate_rps,omitempty"`
	AchievedRateRPS          float64  `json:"achieved_rate_rps,omitempty"`
	PeakInFlight             int      `json:"peak_in_flight"`
	ErrorRate                float64  `json:"error_rate"`
	RejectionRate            float64  `json:"rejection_rate"`

	TTFT      Dist `json:"ttft_ms"`
	TTFTSched Dist `json:"ttft_sched_ms"`
	ITL       Dist `json:"itl_ms"`
	TPOT      Dist `json:"tpot_ms"`
	E2E       Dist `json:"e2e_ms"`
	Lag       Dist `json:"lag_ms"`
	// Latency of failed requests, reported apart, and percentiles that count
	// failures as infinitely slow.
	FailedE2E     Dist  `json:"failed_e2e_ms"`
	AdjustedTTFT  Dist  `json:"adjusted_ttft_ms"`
	ServerQueue   *Dist `json:"server_queue_ms,omitempty"`
	ServerPrefill *Dist `json:"server_prefill_ms,omitempty"`
	ServerDecode  *Dist `json:"server_decode_ms,omitempty"`

	Shape      Shape    `json:"shape"`
	TimeSeries []Second `json:"time_series,omitempty"`
}
