package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// vllmResult is the part of a `vllm bench serve` result JSON knee reads
// (vllm/benchmarks/serve.py). Times of the per-request arrays are in
// seconds; the aggregates are in ms. The per-request arrays are present only
// with --save-detailed.
type vllmResult struct {
	Date        string  `json:"date"` // "20250101-120000"
	Backend     string  `json:"backend"`
	Label       *string `json:"label"`
	ModelID     string  `json:"model_id"`
	Duration    float64 `json:"duration"` // s
	Completed   int     `json:"completed"`
	Failed      *int    `json:"failed"`
	TotalInput  int64   `json:"total_input_tokens"`
	TotalOutput int64   `json:"total_output_tokens"`

	RequestThroughput    float64  `json:"request_throughput"`
	RequestGoodput       *float64 `json:"request_goodput"`
	OutputThroughput     float64  `json:"output_throughput"`
	TotalTokenThroughput float64  `json:"total_token_throughput"`
	MaxConcurrent        *float64 `json:"max_concurrent_requests"`

	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	Latencies  []float64   `json:"latencies"`
	StartTimes []float64   `json:"start_times"`
	QueueTimes []float64   `json:"queue_times"`
	Errors     []*string   `json:"errors"`
}

// vllmConfigKeys are the top-level fields that say how the run was made.
var vllmConfigKeys = []string{"date", "backend", "endpoint_type", "label", "model_id", "tokenizer_id", "num_prompts",
	"request_rate", "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps"}

// readVLLM reads one or more concatenated result objects.
func readVLLM(data []byte) ([]Run, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var runs []Run
	for n := 1; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		where := "vLLM result"
		if n > 1 {
			where = fmt.Sprintf("vLLM result #%d", n)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not JSON: %w", where, err)
		}
		r, err := parseVLLM(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		runs = append(runs, *r)
	}
	return runs, nil
}

func parseVLLM(raw []byte) (*Run, error) {
	var v vllmResult
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("unexpected field type: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	if _, ok := all["duration"]; !ok {
		return nil, errors.New(`no "duration" field: not a vLLM bench serve result`)
	}
	if !finite(v.Duration) || v.Duration < 0 {
		return nil, fmt.Errorf("duration %v: want seconds >= 0", v.Duration)
	}
	run := &Run{Format: FormatVLLM, Model: v.ModelID, Target: v.Backend}
	if v.Label != nil {
		run.Label = *v.Label
	}
	if t, err := time.ParseInLocation("20060102-150405", v.Date, time.Local); err == nil {
		run.Start = t
	}
	run.Config = vllmConfig(all)
	run.Notes = append(run.Notes, "imported from a vLLM bench serve result; vLLM's TTFT, ITL and E2E are client-side, as knee's")

	if v.TTFTs == nil {
		s, notes, err := vllmSummaryOnly(&v, all)
		if err != nil {
			return nil, err
		}
		run.Summary = s
		run.Notes = append(run.Notes, notes...)
		return run, nil
	}
	recs, notes, err := vllmRecords(&v)
	if err != nil {
		return nil, err
	}
	run.Records = recs
	run.Notes = append(run.Notes, notes...)
	run.Summary = stats.Summarize(recs, stats.Options{Series: true})
	return run, nil
}

func vllmConfig(all map[string]json.RawMessage) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	add := func(k string) {
		raw, ok := all[k]
		if !ok || seen[k] || string(raw) == "null" {
			return
		}
		seen[k] = true
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out = append(out, [2]string{k, s})
			return
		}
		if len(raw) < 64 && raw[0] != '[' && raw[0] != '{' {
			out = append(out, [2]string{k, string(raw)})
		}
	}
	for _, k := range vllmConfigKeys {
		add(k)
	}
	// --metadata KEY=VALUE pairs land as extra top-level strings.
	var extra []string
	for k, raw := range all {
		if !seen[k] && len(raw) > 0 && raw[0] == '"' {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		add(k)
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// maxSeconds bounds per-request times read from a file (a week).
const maxSeconds = float64(maxOffset / time.Second)

func seconds(field string, i int, v float64) (time.Duration, error) {
	if !finite(v) || v < 0 || v > maxSeconds {
		return 0, fmt.Errorf("%s[%d] = %v: want seconds in 0..%g", field, i, v, maxSeconds)
	}
	return time.Duration(math.Round(v * 1e9)), nil
}

func vllmRecords(v *vllmResult) ([]record.Request, []string, error) {
	n := len(v.TTFTs)
	if n == 0 {
		return nil, nil, errors.New(`"ttfts" is empty: no requests to import`)
	}
	check := func(name string, got int, required bool) error {
		if got == 0 && !required {
			return nil
		}
		if got != n {
			return fmt.Errorf("%q has %d entries, \"ttfts\" has %d: want one per request", name, got, n)
		}
		return nil
	}
	for _, c := range []struct {
		name     string
		n        int
		required bool
	}{{"itls", len(v.ITLs), true}, {"input_lens", len(v.InputLens), true}, {"output_lens", len(v.OutputLens), true},
		{"latencies", len(v.Latencies), false}, {"start_times", len(v.StartTimes), false},
		{"queue_times", len(v.QueueTimes), false}, {"errors", len(v.Errors), false}} {
		if err := check(c.name, c.n, c.required); err != nil {
			return nil, nil, err
		}
	}
	var notes []string
	// Send times: start_times are perf_counter readings (seconds, arbitrary
	// origin); queue_times the wait for a concurrency slot before sending.
	sent := make([]time.Duration, n)
	sched := make([]time.Duration, n)
	if len(v.StartTimes) == n {
		base := math.Inf(1)
		for i, st := range v.StartTimes {
			q := 0.0
			if len(v.QueueTimes) == n {
				q = v.QueueTimes[i]
			}
			if !finite(st) || !finite(q) || q < 0 || q > maxSeconds {
				return nil, nil, fmt.Errorf("start_times[%d] = %v, queue_times = %v: want finite seconds", i, st, q)
			}
			base = math.Min(base, st-q)
		}
		for i, st := range v.StartTimes {
			q := 0.0
			if len(v.QueueTimes) == n {
				q = v.QueueTimes[i]
			}
			s, err := seconds("start_times (from the earliest)", i, st-base)
			if err != nil {
				return nil, nil, err
			}
			qd, _ := seconds("queue_times", i, q)
			sent[i], sched[i] = s, s-qd
		}
	} else {
		notes = append(notes, "the file has no start_times (an older vLLM): send times are unknown, so the time series, in-flight counts and throughput over time are not meaningful")
	}

	recs := make([]record.Request, n)
	for i := range recs {
		r := &recs[i]
		r.ID = int64(i)
		r.Scheduled, r.Sent = sched[i], sent[i]
		if v.InputLens[i] < 0 || v.OutputLens[i] < 0 {
			return nil, nil, fmt.Errorf("input_lens[%d] / output_lens[%d] negative", i, i)
		}
		r.InputTokens, r.OutputTokens = v.InputLens[i], v.OutputLens[i]
		r.TokenSource = record.TokensFromTokenizer
		var latency time.Duration
		if len(v.Latencies) == n {
			l, err := seconds("latencies", i, v.Latencies[i])
			if err != nil {
				return nil, nil, err
			}
			latency = l
		}
		msg := ""
		if len(v.Errors) == n && v.Errors[i] != nil {
			msg = strings.TrimSpace(*v.Errors[i])
		}
		ttft, err := seconds("ttfts", i, v.TTFTs[i])
		if err != nil {
			return nil, nil, err
		}
		if msg != "" || (ttft == 0 && len(v.ITLs[i]) == 0 && latency == 0) {
			if msg == "" {
				msg = "vLLM recorded no first token and no error text"
			}
			r.Error = classifyVLLMError(msg)
			r.ErrorMessage = truncate(msg, 500)
			r.StreamEnd = r.Sent + latency
			r.OutputTokens = 0
			continue
		}
		r.FirstToken = r.Sent + ttft
		t := r.FirstToken
		r.TokenTimes = make([]time.Duration, 0, len(v.ITLs[i])+1)
		r.TokenTimes = append(r.TokenTimes, t)
		for j, gap := range v.ITLs[i] {
			g, err := seconds(fmt.Sprintf("itls[%d]", i), j, gap)
			if err != nil {
				return nil, nil, err
			}
			t += g
			r.TokenTimes = append(r.TokenTimes, t)
		}
		r.Done = t
		if latency > 0 && r.Sent+latency >= t {
			// vLLM's latency ends at the last chunk too; trust it over the
			// sum of rounded gaps when they disagree slightly.
			r.Done = r.Sent + latency
		}
		r.StreamEnd = r.Done
		if r.Done > maxOffset {
			return nil, nil, fmt.Errorf("request %d ends %v after the start: want at most %v", i, r.Done, maxOffset)
		}
	}
	return recs, notes, nil
}

// classifyVLLMError maps vLLM's error text (an HTTP reason phrase or a
// Python traceback) to a knee error kind; the text is kept as the message.
func classifyVLLMError(msg string) record.ErrorKind {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "too many requests") || strings.Contains(m, "429") || strings.Contains(m, "service unavailable") || strings.Contains(m, "503"):
		return record.ErrRejected
	case strings.Contains(m, "timeout") || strings.Contains(m, "timed out"):
		return record.ErrTimeout
	case strings.Contains(m, "connect") || strings.Contains(m, "connection refused"):
		return record.ErrConnect
	case strings.Contains(m, "bad request") || strings.Contains(m, "not found") || strings.Contains(m, "unauthorized") ||
		strings.Contains(m, "forbidden") || strings.Contains(m, "unprocessable") || strings.Contains(m, "400") || strings.Contains(m, "404"):
		return record.ErrHTTP4xx
	case strings.Contains(m, "internal server error") || strings.Contains(m, "bad gateway") || strings.Contains(m, "500") || strings.Contains(m, "502"):
		return record.ErrHTTP5xx
	case strings.Contains(m, "json") || strings.Contains(m, "decode"):
		return record.ErrBadPayload
	}
	return record.ErrStreamBroken
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// vllmSummaryOnly builds a summary from the aggregates of a result saved
// without --save-detailed. Percentiles the file does not carry are NaN.
func vllmSummaryOnly(v *vllmResult, all map[string]json.RawMessage) (stats.Summary, []string, error) {
	var s stats.Summary
	failed := 0
	if v.Failed != nil {
		failed = *v.Failed
	}
	if v.Completed < 0 || failed < 0 {
		return s, nil, errors.New("negative request counts")
	}
	s.Completed, s.Errors, s.Requests = v.Completed, failed, v.Completed+failed
	s.DurationS = v.Duration
	s.RequestThroughputRPS = v.RequestThroughput
	s.OutputTokenThroughputTPS = v.OutputThroughput
	s.TotalTokenThroughputTPS = v.TotalTokenThroughput
	s.InputTokens, s.OutputTokens = v.TotalInput, v.TotalOutput
	if v.Duration > 0 {
		s.InputTokenThroughputTPS = float64(v.TotalInput) / v.Duration
	}
	s.GoodputRPS = v.RequestGoodput
	if v.MaxConcurrent != nil {
		s.PeakInFlight = int(*v.MaxConcurrent)
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(failed) / float64(s.Requests)
	}
	num := func(key string) float64 {
		raw, ok := all[key]
		if !ok {
			return math.NaN()
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	var missing []string
	dist := func(name string) stats.Dist {
		d := stats.Dist{Count: v.Completed, Mean: num("mean_" + name + "_ms"), P50: num("median_" + name + "_ms"),
			P90: num("p90_" + name + "_ms"), P95: num("p95_" + name + "_ms"), P99: num("p99_" + name + "_ms"),
			P999: num("p99.9_" + name + "_ms"), Max: math.NaN()}
		if p := num("p50_" + name + "_ms"); !math.IsNaN(p) {
			d.P50 = p
		}
		if math.IsNaN(d.Mean) && math.IsNaN(d.P50) {
			d.Count = 0
			missing = append(missing, name)
		}
		return d
	}
	s.TTFT, s.TPOT, s.ITL, s.E2E = dist("ttft"), dist("tpot"), dist("itl"), dist("e2el")
	notes := []string{"summary only (saved without --save-detailed): no per-request records, so no distributions, time series or noise estimate; percentiles vLLM did not report are missing"}
	if len(missing) > 0 {
		notes = append(notes, "vLLM did not report: "+strings.Join(missing, ", "))
	}
	return s, notes, nil
}
