package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/stats"
)

// Result files of other load tools. Each holds aggregates only (no
// per-request times), so each run is summary-only; a latency the file does
// not give is NaN ("–"), never 0.
//
//   - GuideLLM (vllm-project/guidellm) `benchmarks.json`: {"benchmarks": [...]},
//     one benchmark per strategy step; config.strategy (args.strategy before
//     v0.4) says the load; metrics.* are StatusDistributionSummary objects
//     ({"successful": {"mean", "median", "percentiles": {"p95", ...}}, ...}),
//     latencies in ms except request_latency in s.
//   - AIPerf (ai-dynamo/aiperf) `profile_export_aiperf.json`: one object per
//     metric tag ({"unit": "ms", "avg", "p50", "p95", ...}), the load in
//     input_config.loadgen.
//   - inference-perf (kubernetes-sigs/inference-perf)
//     `stage_N_lifecycle_metrics.json`: load_summary, successes.latency.*
//     and successes.throughput, failures; times in seconds.

// blankSummary is a summary whose latencies are all missing.
func blankSummary() stats.Summary {
	var s stats.Summary
	for _, d := range []*stats.Dist{&s.TTFT, &s.TTFTSched, &s.ITL, &s.TPOT, &s.E2E, &s.Lag} {
		*d = missingDist()
	}
	return s
}

func missingDist() stats.Dist {
	n := math.NaN()
	return stats.Dist{Mean: n, P50: n, P90: n, P95: n, P99: n, P999: n, Max: n}
}

// num reads a JSON number (or numeric string) at a path of object keys;
// ok is false when any step is missing or not a number.
func num(v any, path ...string) (float64, bool) {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		v = m[k]
	}
	switch x := v.(type) {
	case float64:
		return x, finite(x)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && finite(f)
	}
	return 0, false
}

func obj(v any, path ...string) map[string]any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	m, _ := v.(map[string]any)
	return m
}

// distOf fills a Dist from a statistics object whose keys for mean, p50,
// ... are named by keys (an empty name: the file has no such statistic),
// scaling values to ms. ok is false when the object gives none of them.
func distOf(m map[string]any, scale float64, count int, keys [7]string) (stats.Dist, bool) {
	d := missingDist()
	ptrs := [7]*float64{&d.Mean, &d.P50, &d.P90, &d.P95, &d.P99, &d.P999, &d.Max}
	found := false
	for i, k := range keys {
		for _, alt := range strings.Split(k, "|") {
			if alt == "" {
				continue
			}
			if v, ok := num(m, strings.Split(alt, ".")...); ok && v >= 0 {
				*ptrs[i], found = v*scale, true
				break
			}
		}
	}
	if found {
		d.Count = count
	}
	return d, found
}

// setRates fills the rates of s from its counts.
func setRates(s *stats.Summary) {
	s.Requests = s.Completed + s.Errors
	if s.Requests > 0 {
		s.ErrorRate = float64(s.Errors) / float64(s.Requests)
		s.RejectionRate = float64(s.Rejected) / float64(s.Requests)
	}
}

func decodeObject(raw []byte, what string) (map[string]any, error) {
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", what, err)
	}
	return top, nil
}

// guideLLM dist keys: mean, median (p50 in percentiles from v0.4), p90,
// p95, p99, p999, max.
var guideLLMKeys = [7]string{"mean", "percentiles.p50|median", "percentiles.p90", "percentiles.p95", "percentiles.p99", "percentiles.p999", "max"}

func readGuideLLM(raw []byte) ([]Run, error) {
	top, err := decodeObject(raw, "GuideLLM benchmarks")
	if err != nil {
		return nil, err
	}
	list, ok := top["benchmarks"].([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New(`GuideLLM benchmarks: "benchmarks" is not a non-empty list`)
	}
	var runs []Run
	for i, b := range list {
		where := fmt.Sprintf("GuideLLM benchmark %d", i+1)
		bm, ok := b.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", where)
		}
		r, err := guideLLMRun(bm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		r.Source = fmt.Sprintf("benchmark %d (%s)", i+1, r.Source)
		runs = append(runs, *r)
	}
	return runs, nil
}

func guideLLMRun(b map[string]any) (*Run, error) {
	strategy := obj(b, "config", "strategy")
	if strategy == nil {
		strategy = obj(b, "args", "strategy") // before v0.4
	}
	if strategy == nil {
		return nil, errors.New(`no config.strategy (or args.strategy): the load of the benchmark is unknown`)
	}
	kind, _ := strategy["type_"].(string)
	r := &Run{Format: FormatGuideLLM, Source: kind}
	switch kind {
	case "synchronous":
		r.Concurrency = 1
	case "concurrent":
		r.Concurrency, _ = num(strategy, "streams")
	case "constant", "poisson", "async":
		r.RateRPS, _ = num(strategy, "rate")
	case "throughput":
		r.Concurrency, _ = num(strategy, "max_concurrency")
	}
	if r.Concurrency > 0 {
		r.Source += "@" + strconv.FormatFloat(r.Concurrency, 'g', -1, 64)
	} else if r.RateRPS > 0 {
		r.Source += "@" + strconv.FormatFloat(r.RateRPS, 'g', -1, 64)
	}
	r.Config = [][2]string{{"strategy", r.Source}}
	metrics := obj(b, "metrics")
	if metrics == nil {
		return nil, errors.New(`no "metrics" object`)
	}
	totals := obj(metrics, "request_totals")
	if totals == nil {
		totals = obj(b, "request_totals") // before v0.4
	}
	successful, given := num(totals, "successful")
	errored, _ := num(totals, "errored")
	incomplete, _ := num(totals, "incomplete")
	if !given || successful < 0 || errored < 0 || incomplete < 0 {
		return nil, errors.New(`no request_totals.successful count`)
	}
	s := blankSummary()
	s.Completed, s.Errors = int(successful), int(errored)+int(incomplete)
	setRates(&s)
	if d, ok := num(b, "duration"); ok && d > 0 {
		s.DurationS = d
	}
	mean := func(name string) float64 {
		v, ok := num(metrics, name, "successful", "mean")
		if !ok {
			return math.NaN()
		}
		return v
	}
	s.RequestThroughputRPS = mean("requests_per_second")
	if math.IsNaN(s.RequestThroughputRPS) && s.DurationS > 0 {
		s.RequestThroughputRPS = float64(s.Completed) / s.DurationS
	}
	s.OutputTokenThroughputTPS = mean("output_tokens_per_second")
	s.InputTokenThroughputTPS = mean("prompt_tokens_per_second")
	s.TotalTokenThroughputTPS = mean("tokens_per_second")
	if v, ok := num(metrics, "request_concurrency", "successful", "max"); ok {
		s.PeakInFlight = int(v)
	}
	if v, ok := num(metrics, "output_token_count", "successful", "total_sum"); ok {
		s.OutputTokens = int64(v)
	}
	if v, ok := num(metrics, "prompt_token_count", "successful", "total_sum"); ok {
		s.InputTokens = int64(v)
	}
	dist := func(name string, scale float64) stats.Dist {
		d, _ := distOf(obj(metrics, name, "successful"), scale, s.Completed, guideLLMKeys)
		return d
	}
	s.TTFT = dist("time_to_first_token_ms", 1)
	// GuideLLM's inter_token_latency_ms is decode time per token after the
	// first: knee's TPOT. Its time_per_output_token_ms includes the first
	// token, and per-chunk gaps (knee's ITL) are not kept.
	s.TPOT = dist("inter_token_latency_ms", 1)
	s.E2E = dist("request_latency", 1000)
	s.OfferedRateRPS = r.RateRPS
	r.Summary = s
	r.Notes = []string{"imported from a GuideLLM benchmarks.json: aggregates only; GuideLLM's inter_token_latency_ms is knee's TPOT (decode time per token after the first); per-chunk ITL is not in the file"}
	return r, nil
}

// aiperfKeys: AIPerf writes avg, p50..p99, max (no p99.9).
var aiperfKeys = [7]string{"avg", "p50", "p90", "p95", "p99", "", "max"}

// aiperfScale is the factor from an AIPerf metric's unit to ms.
func aiperfScale(m map[string]any) (float64, error) {
	unit, _ := m["unit"].(string)
	switch strings.ToLower(unit) {
	case "ms", "":
		return 1, nil
	case "s", "sec", "seconds":
		return 1000, nil
	case "us":
		return 0.001, nil
	case "ns":
		return 1e-6, nil
	}
	return 0, fmt.Errorf("unit %q: want ms, s, us or ns", unit)
}

func readAIPerf(raw []byte) ([]Run, error) {
	top, err := decodeObject(raw, "AIPerf profile export")
	if err != nil {
		return nil, err
	}
	metrics := top
	if rec := obj(top, "records"); rec != nil { // some versions nest the metrics
		metrics = rec
	}
	r := &Run{Format: FormatAIPerf}
	loadgen := obj(top, "input_config", "loadgen")
	if c, ok := num(loadgen, "concurrency"); ok && c > 0 {
		r.Concurrency = c
	}
	if rate, ok := num(loadgen, "request_rate"); ok && rate > 0 {
		r.RateRPS = rate
	}
	if names, ok := obj(top, "input_config", "endpoint")["model_names"].([]any); ok && len(names) > 0 {
		r.Model, _ = names[0].(string)
	}
	if u, ok := obj(top, "input_config", "endpoint")["url"].(string); ok {
		r.Target = u
	}
	if cmd, ok := obj(top, "input_config")["cli_command"].(string); ok {
		r.Config = append(r.Config, [2]string{"cli_command", cmd})
	}
	avg := func(tag string) (float64, bool) { return num(metrics, tag, "avg") }
	count, ok := avg("request_count")
	if !ok || count < 0 {
		return nil, errors.New(`AIPerf profile export: no request_count.avg (want profile_export_aiperf.json, one object per metric tag)`)
	}
	s := blankSummary()
	s.Completed = int(count)
	if e, ok := avg("error_request_count"); ok && e >= 0 {
		s.Errors = int(e)
	}
	setRates(&s)
	if d, ok := avg("benchmark_duration"); ok && d > 0 {
		s.DurationS = d
	}
	s.RequestThroughputRPS, s.OutputTokenThroughputTPS = math.NaN(), math.NaN()
	if v, ok := avg("request_throughput"); ok {
		s.RequestThroughputRPS = v
	}
	if v, ok := avg("output_token_throughput"); ok {
		s.OutputTokenThroughputTPS = v
	}
	if v, ok := avg("total_isl"); ok {
		s.InputTokens = int64(v)
		if s.DurationS > 0 {
			s.InputTokenThroughputTPS = v / s.DurationS
		}
	}
	if v, ok := avg("total_osl"); ok {
		s.OutputTokens = int64(v)
	}
	dist := func(tag string) (stats.Dist, error) {
		m := obj(metrics, tag)
		if m == nil {
			return missingDist(), nil
		}
		scale, err := aiperfScale(m)
		if err != nil {
			return stats.Dist{}, fmt.Errorf("AIPerf %s: %w", tag, err)
		}
		d, _ := distOf(m, scale, s.Completed, aiperfKeys)
		return d, nil
	}
	// AIPerf's inter_token_latency is (latency − TTFT)/(output tokens − 1):
	// knee's TPOT; its inter_chunk_latency is knee's ITL.
	for _, m := range []struct {
		tag string
		d   *stats.Dist
	}{{"time_to_first_token", &s.TTFT}, {"inter_token_latency", &s.TPOT}, {"inter_chunk_latency", &s.ITL}, {"request_latency", &s.E2E}} {
		d, err := dist(m.tag)
		if err != nil {
			return nil, err
		}
		*m.d = d
	}
	if math.IsNaN(s.RequestThroughputRPS) && math.IsNaN(s.OutputTokenThroughputTPS) {
		return nil, errors.New("AIPerf profile export: neither request_throughput nor output_token_throughput: no throughput to import")
	}
	s.OfferedRateRPS = r.RateRPS
	r.Summary = s
	r.Notes = []string{"imported from an AIPerf profile export: aggregates only; AIPerf's inter_token_latency is knee's TPOT, its inter_chunk_latency knee's ITL"}
	return []Run{*r}, nil
}

// inference-perf summarize(): mean, median, pN ("p90", "p99", "p99.9").
var inferencePerfKeys = [7]string{"mean", "median|p50", "p90", "p95", "p99", "p99.9", "max"}

func readInferencePerf(raw []byte) ([]Run, error) {
	top, err := decodeObject(raw, "inference-perf lifecycle report")
	if err != nil {
		return nil, err
	}
	succ, fail, load := obj(top, "successes"), obj(top, "failures"), obj(top, "load_summary")
	if succ == nil || load == nil {
		return nil, errors.New(`inference-perf lifecycle report: want "load_summary" and "successes" objects (stage_N_lifecycle_metrics.json)`)
	}
	r := &Run{Format: FormatInferencePerf}
	if c, ok := num(load, "concurrency"); ok && c > 0 {
		r.Concurrency = c
	}
	if rate, ok := num(load, "requested_rate"); ok && rate > 0 {
		r.RateRPS = rate
	}
	completed, given := num(succ, "count")
	if !given || completed < 0 {
		return nil, errors.New("inference-perf lifecycle report: no successes.count")
	}
	s := blankSummary()
	s.Completed = int(completed)
	if f, ok := num(fail, "count"); ok && f >= 0 {
		s.Errors = int(f)
	}
	for label := range obj(fail, "by_label") {
		if strings.HasPrefix(label, "429") || strings.HasPrefix(label, "503") {
			n, _ := num(fail, "by_label", label, "count")
			s.Rejected += int(n)
		}
	}
	setRates(&s)
	if d, ok := num(top, "benchmark_time_seconds"); ok && d > 0 {
		s.DurationS = d
	}
	s.RequestThroughputRPS, s.OutputTokenThroughputTPS = math.NaN(), math.NaN()
	if v, ok := num(succ, "throughput", "requests_per_sec"); ok {
		s.RequestThroughputRPS = v
	}
	if v, ok := num(succ, "throughput", "output_tokens_per_sec"); ok {
		s.OutputTokenThroughputTPS = v
	}
	if v, ok := num(succ, "throughput", "input_tokens_per_sec"); ok {
		s.InputTokenThroughputTPS = v
	}
	if v, ok := num(succ, "throughput", "total_tokens_per_sec"); ok {
		s.TotalTokenThroughputTPS = v
	}
	if v, ok := num(succ, "prompt_tokens", "total"); ok {
		s.InputTokens = int64(v)
	}
	if v, ok := num(succ, "output_tokens", "total"); ok {
		s.OutputTokens = int64(v)
	}
	if a, ok := num(load, "achieved_rate"); ok {
		s.AchievedRateRPS = a
		s.OfferedRateRPS = r.RateRPS
	}
	dist := func(name string) stats.Dist {
		d, _ := distOf(obj(succ, "latency", name), 1000, s.Completed, inferencePerfKeys)
		return d
	}
	// inter_token_latency holds every gap between tokens: knee's ITL.
	s.TTFT, s.TPOT, s.ITL, s.E2E = dist("time_to_first_token"), dist("time_per_output_token"), dist("inter_token_latency"), dist("request_latency")
	if math.IsNaN(s.RequestThroughputRPS) && math.IsNaN(s.OutputTokenThroughputTPS) {
		return nil, errors.New("inference-perf lifecycle report: no successes.throughput: no throughput to import")
	}
	r.Summary = s
	r.Notes = []string{"imported from an inference-perf lifecycle report: aggregates only"}
	return []Run{*r}, nil
}

// StorableSummary is s with every missing (NaN) figure outside the latency
// distributions set to 0, for the store (JSON has no NaN), and the names of
// those figures, for a note saying they are not in the file.
func StorableSummary(s stats.Summary) (stats.Summary, []string) {
	var missing []string
	for _, f := range []struct {
		name string
		v    *float64
	}{{"request throughput", &s.RequestThroughputRPS}, {"output token throughput", &s.OutputTokenThroughputTPS},
		{"input token throughput", &s.InputTokenThroughputTPS}, {"total token throughput", &s.TotalTokenThroughputTPS}} {
		if math.IsNaN(*f.v) || math.IsInf(*f.v, 0) {
			*f.v = 0
			missing = append(missing, f.name)
		}
	}
	return s, missing
}
