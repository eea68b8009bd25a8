package compare

// ServerRow is one figure of the servers' own scraped metrics side by
// side. Scraped figures are aggregates (histogram means, gauge maxima)
// with no per-request samples to resample, so they are shown, not judged.
type ServerRow struct {
	Metric string   `json:"metric"` // e.g. "server_queue_mean_ms"
	Label  string   `json:"label"`
	A      *float64 `json:"a"` // nil: that run's server did not expose it
	B      *float64 `json:"b"`
}
