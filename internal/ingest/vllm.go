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

	RequestThroughput float64  `json:"request_throughput"`
	RequestGoodput    *float64 `json:"request_goodput"`
	// benchmark_serving.py (before vllm bench serve) wrote the key with a
	// stray colon.
	RequestGoodputColon  *float64 `json:"request_goodput:"`
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
	if l := vllmLoadOf(all); l.known || l.maxConcurrency > 0 {
		run.RateRPS, run.Concurrency = l.offeredRPS(), float64(l.maxConcurrency)
	}
	run.Notes = append(run.Notes, "imported from a vLLM bench serve result; vLLM's TTFT, ITL and E2E are client-side, as knee's")

	if v.RequestGoodput == nil {
		v.RequestGoodput = v.RequestGoodputColon
	}
	if v.TTFTs == nil {
		s, notes, err := vllmSummaryOnly(&v, all)
		if err != nil {
			return nil, err
		}
		run.Summary = s
		run.Notes = append(run.Notes, notes...)
		return run, nil
	}
	load := vllmLoadOf(all)
	recs, notes, err := vllmRecords(&v, load)
	if err != nil {
		return nil, err
	}
	run.Records = recs
	run.Notes = append(run.Notes, notes...)
	if len(v.StartTimes) == len(recs) {
		run.Summary = stats.Summarize(recs, stats.Options{Series: true})
		return run, nil
	}
	// Send times were reconstructed: the per-request latencies are vLLM's,
	// but the time base (duration, throughput) must be the file's own. No
	// per-second series: it would be drawn from estimated send times.
	s := stats.Summarize(recs, stats.Options{OfferedRateRPS: load.offeredRPS()})
	if err := useFileTotals(&s, &v); err != nil {
		return nil, err
	}
	s.AchievedRateRPS = 0 // the send rate is what was reconstructed
	s.Window.StartMS, s.Window.EndMS = 0, v.Duration*1000
	if v.MaxConcurrent != nil {
		s.PeakInFlight = int(*v.MaxConcurrent)
	}
	run.Summary = s
	return run, nil
}

// vllmLoad is how the file says requests were sent: request_rate (req/s,
// +Inf for "inf": all at once) and max_concurrency (0: unbounded). known is
// false when the file has no request_rate.
type vllmLoad struct {
	rateRPS        float64
	maxConcurrency int
	known          bool
}

func (l vllmLoad) offeredRPS() float64 {
	if l.known && !math.IsInf(l.rateRPS, 0) {
		return l.rateRPS
	}
	return 0
}

func (l vllmLoad) String() string {
	rate := "inf"
	if !math.IsInf(l.rateRPS, 0) {
		rate = strconv.FormatFloat(l.rateRPS, 'g', 4, 64)
	}
	conc := "none"
	if l.maxConcurrency > 0 {
		conc = strconv.Itoa(l.maxConcurrency)
	}
	return "request_rate " + rate + ", max_concurrency " + conc
}

func vllmLoadOf(all map[string]json.RawMessage) vllmLoad {
	l := vllmLoad{rateRPS: math.Inf(1)}
	if raw, ok := all["request_rate"]; ok {
		var f float64
		var s string
		switch {
		case json.Unmarshal(raw, &f) == nil && f > 0 && finite(f):
			l.rateRPS, l.known = f, true
		case json.Unmarshal(raw, &s) == nil && strings.EqualFold(s, "inf"):
			l.known = true
		}
	}
	var c float64
	if raw, ok := all["max_concurrency"]; ok && json.Unmarshal(raw, &c) == nil && c >= 1 && c <= 1e7 {
		l.maxConcurrency = int(c)
	}
	return l
}

// useFileTotals puts the file's duration and throughput into s.
func useFileTotals(s *stats.Summary, v *vllmResult) error {
	if !(v.Duration > 0) {
		return errors.New("the file has no start_times and a duration of 0: its throughput cannot be known")
	}
	s.DurationS = v.Duration
	s.RequestThroughputRPS = float64(s.Completed) / v.Duration
	if v.RequestThroughput > 0 && finite(v.RequestThroughput) {
		s.RequestThroughputRPS = v.RequestThroughput
	}
	s.OutputTokenThroughputTPS = float64(s.OutputTokens) / v.Duration
	if v.OutputThroughput > 0 && finite(v.OutputThroughput) {
		s.OutputTokenThroughputTPS = v.OutputThroughput
	}
	s.InputTokenThroughputTPS = float64(s.InputTokens) / v.Duration
	if v.TotalInput > 0 {
		s.InputTokenThroughputTPS = float64(v.TotalInput) / v.Duration
	}
	s.TotalTokenThroughputTPS = s.InputTokenThroughputTPS + s.OutputTokenThroughputTPS
	if v.TotalTokenThroughput > 0 && finite(v.TotalTokenThroughput) {
		s.TotalTokenThroughputTPS = v.TotalTokenThroughput
	}
	return nil
}

// reconstructSends estimates when each request was scheduled and sent from
// how vLLM sends them (requests in file order, arrivals 1/rate apart — the
// mean of its Poisson or gamma gaps — each waiting for one of maxConcurrency
// slots) and each request's own latency.
func reconstructSends(e2e []time.Duration, rateRPS float64, maxConcurrency int) (sched, sent []time.Duration) {
	n := len(e2e)
	sched, sent = make([]time.Duration, n), make([]time.Duration, n)
	var slots []time.Duration // when each slot frees; a small n, so a scan
	if maxConcurrency > 0 {
		slots = make([]time.Duration, min(maxConcurrency, n))
	}
	for i := range e2e {
		if !math.IsInf(rateRPS, 0) && rateRPS > 0 {
			sched[i] = time.Duration(float64(i) / rateRPS * 1e9)
		}
		sent[i] = sched[i]
		if len(slots) == 0 {
			continue
		}
		k := 0
		for j := range slots {
			if slots[j] < slots[k] {
				k = j
			}
		}
		sent[i] = max(sent[i], slots[k])
		slots[k] = sent[i] + e2e[i]
	}
	return sched, sent
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

func vllmRecords(v *vllmResult, load vllmLoad) ([]record.Request, []string, error) {
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
		e2e, err := vllmLatencies(v)
		if err != nil {
			return nil, nil, err
		}
		if !load.known {
			load = vllmLoad{rateRPS: math.Inf(1)}
		}
		sched, sent = reconstructSends(e2e, load.rateRPS, load.maxConcurrency)
		span := time.Duration(0)
		for i := range e2e {
			span = max(span, sent[i]+e2e[i])
		}
		note := fmt.Sprintf("the file has no start_times (vLLM's benchmark_serving.py before vllm bench serve): send times are reconstructed from %s in file order with each request's own latency, so lag, in-flight counts and ttft_sched are estimates; duration (%.2f s) and throughput are the file's own",
			load, v.Duration)
		if !load.known {
			note += "; the file does not say its request_rate either: read as all requests sent at once"
		}
		notes = append(notes, note)
		if d := v.Duration; d > 0 && math.Abs(span.Seconds()-d) > 0.25*d {
			notes = append(notes, fmt.Sprintf("the reconstructed send times span %.2f s, the file's duration is %.2f s: the run was not sent as its settings say, so the estimates are rough", span.Seconds(), d))
		}
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

// vllmLatencies is each request's send-to-end time: latencies when the
// file has them, else TTFT plus the gaps after it (0 for a failed request).
func vllmLatencies(v *vllmResult) ([]time.Duration, error) {
	out := make([]time.Duration, len(v.TTFTs))
	for i := range out {
		if len(v.Latencies) == len(out) {
			l, err := seconds("latencies", i, v.Latencies[i])
			if err != nil {
				return nil, err
			}
			out[i] = l
			continue
		}
		sum := v.TTFTs[i]
		for _, g := range v.ITLs[i] {
			sum += g
		}
		l, err := seconds("ttfts plus itls", i, sum)
		if err != nil {
			return nil, err
		}
		out[i] = l
	}
	return out, nil
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
