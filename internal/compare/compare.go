// Package compare sets two runs side by side, metric by metric, and says
// which differences are beyond noise.
//
// Reading order: Compare (this file) builds the table and judges each row;
// bootstrap.go holds the resampling. The test of noise is a block bootstrap
// 95% confidence interval of the difference B − A: each run's requests are
// cut into Blocks blocks of consecutive requests (by send time), blocks are
// resampled with replacement (requests close in time share the server's
// queue and batch, and a request's ITL gaps share its stream, so none is
// independent), the statistic (p50, p95, p99, or the mean of per-second
// throughput) is recomputed on both sides. A difference is beyond noise when
// the interval excludes zero, the change is at least MinChange of A and, for
// latencies, at least MinDiffMS; a quantile is judged only with tailValues
// values beyond it. Against knee's own server, whose records carry the
// intended token times, a latency difference is a change only when the
// intended times differ too (else it is the machine's delivery jitter), the
// same rule at every quantile. Error rates use the Agresti–Caffo interval
// of a difference of proportions (sound at small counts and at 0% or 100%,
// where the plain Wald interval collapses to a point), and come first: a run without completed requests has no
// latency to compare. A run without per-request records (a summary-only
// import) is shown but not judged.
package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// Method is how Compare decides what is beyond noise (printed in reports).
const Method = "bootstrap 95% confidence interval of the difference B − A (40 blocks of consecutive requests per run resampled with replacement, " +
	"so correlated neighbours and a request's ITL gaps move together; throughput: per-second buckets); error rates: Agresti–Caffo interval of the difference"

// DefaultMinChange is the smallest relative change flagged by default.
const DefaultMinChange = 0.05

// Side is one run to compare.
type Side struct {
	ID      string
	Summary stats.Summary
	// Records are the run's per-request records (warm-up ones are skipped);
	// nil when the run has none, in which case nothing can be judged.
	Records []record.Request
	// Model, Target and Setup (the run's configuration, key and value) say
	// what was measured: where the runs differ, the comparison cautions.
	Model, Target string
	Setup         [][2]string
}

// Options tune Compare.
type Options struct {
	Resamples int    // bootstrap resamples; 0 = 1000
	Seed      uint64 // resampling seed; results are deterministic for a seed
	// MinChange is the smallest relative change worth flagging (0.05 = 5%);
	// 0 = DefaultMinChange. Two runs of one configuration differ by a few
	// percent from the machine's state alone, which resampling within a run
	// cannot see.
	MinChange float64
	// MinDiffMS is the smallest latency difference flagged, in ms; 0 =
	// DefaultMinDiffMS. knee's measurement is held to 1 ms of the truth
	// (SPEC §5), so smaller differences cannot be told from it.
	MinDiffMS float64
}

// DefaultMinDiffMS is the smallest latency difference flagged by default.
const DefaultMinDiffMS = 1.0

// Metric is one row of a comparison.
type Metric struct {
	Name   string  `json:"metric"` // e.g. "ttft_ms.p95", "output_token_throughput_tps"
	Label  string  `json:"label"`  // e.g. "TTFT p95"
	Unit   string  `json:"unit"`   // ms, tok/s, req/s, ratio
	Better string  `json:"better"` // "lower" or "higher"
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	Diff   float64 `json:"diff"`             // B − A
	Change float64 `json:"change,omitempty"` // (B − A) / A; 0 when A is 0
	// CILow, CIHigh bound the 95% interval of B − A (absent when untested).
	CILow  *float64 `json:"ci_low,omitempty"`
	CIHigh *float64 `json:"ci_high,omitempty"`
	Tested bool     `json:"tested"` // false: not enough data to judge
	// Beyond is true when the change is beyond noise and at least MinChange.
	Beyond bool   `json:"beyond_noise"`
	Effect string `json:"effect"` // "worse", "better", "same", or "untested"
	Note   string `json:"note,omitempty"`
	// IntendedDiff is B − A of the same statistic computed from the
	// server's intended token times, when both runs carry them (knee's own
	// server): what the server did, without the machine's delivery jitter.
	IntendedDiff *float64 `json:"intended_diff_ms,omitempty"`
	// WithinJitter: the measured difference is beyond resampling noise but
	// the intended times do not differ, so it is the machine, not the server.
	WithinJitter bool `json:"within_jitter,omitempty"`
	quantile     float64
}

// Result is a whole comparison.
type Result struct {
	A         string   `json:"a"`
	B         string   `json:"b"`
	Method    string   `json:"method"`
	Resamples int      `json:"resamples"`
	MinChange float64  `json:"min_change"`
	MinDiffMS float64  `json:"min_diff_ms"`
	Metrics   []Metric `json:"metrics"`
	Worse     []string `json:"worse"`
	Better    []string `json:"better"`
	Verdict   string   `json:"verdict"`
	// Cautions are the runs' own measurement warnings (client overhead,
	// pacing lag, ...) and what differs between their setups (model, target,
	// workload): a difference between runs measured under different
	// conditions may be the conditions.
	Cautions []string `json:"cautions,omitempty"`
	// LatencyComparable is false when a run completed no request: then only
	// completion and error rates can be compared.
	LatencyComparable bool `json:"latency_comparable"`
	// Server sets the two servers' scraped metrics side by side, when both
	// runs scraped them (filled by the caller; see ServerRow).
	Server []ServerRow `json:"server,omitempty"`
	// Energy sets the two runs' energy figures side by side, when either
	// has them (filled by the caller; see EnergyRows).
	Energy []ServerRow `json:"energy,omitempty"`
}

// latency metrics compared from per-request samples.
// intended (the same statistic from the server's intended token times, see
// intendedTimes) is nil for a request without them.
var latencies = []struct {
	name, label string
	dist        func(*stats.Summary) stats.Dist
	values      func(*record.Request) []float64
	intended    func(*record.Request) []float64
	quantiles   []float64
}{
	{"ttft_ms", "TTFT", func(s *stats.Summary) stats.Dist { return s.TTFT }, one(func(r *record.Request) (time.Duration, bool) { return r.TTFT() }),
		intendedOne(func(r *record.Request, t []time.Duration) time.Duration { return t[0] }), []float64{0.5, 0.95, 0.99}},
	{"ttft_sched_ms", "TTFT (sched)", func(s *stats.Summary) stats.Dist { return s.TTFTSched }, one(func(r *record.Request) (time.Duration, bool) { return r.TTFTSched() }),
		intendedOne(func(r *record.Request, t []time.Duration) time.Duration { return r.Lag() + t[0] }), []float64{0.5, 0.95}},
	{"itl_ms", "ITL", func(s *stats.Summary) stats.Dist { return s.ITL }, itls, intendedITLs, []float64{0.5, 0.95, 0.99}},
	{"tpot_ms", "TPOT", func(s *stats.Summary) stats.Dist { return s.TPOT }, one(func(r *record.Request) (time.Duration, bool) { return r.TPOT() }),
		intendedTPOT, []float64{0.5, 0.95}},
	{"e2e_ms", "E2E", func(s *stats.Summary) stats.Dist { return s.E2E }, one(func(r *record.Request) (time.Duration, bool) { return r.E2E() }),
		intendedOne(func(r *record.Request, t []time.Duration) time.Duration { return t[len(t)-1] }), []float64{0.5, 0.95, 0.99}},
}

// intendedTimes are the server's intended emission times of a request's
// chunks, as offsets from its receipt (≈ sent), when the server reported one
// per chunk the client saw; nil otherwise.
func intendedTimes(r *record.Request) []time.Duration {
	if len(r.ServerTokenTimes) == 0 || len(r.ServerTokenTimes) != len(r.TokenTimes) {
		return nil
	}
	return r.ServerTokenTimes
}

func intendedOne(f func(*record.Request, []time.Duration) time.Duration) func(*record.Request) []float64 {
	return func(r *record.Request) []float64 {
		if t := intendedTimes(r); t != nil {
			return []float64{float64(f(r, t)) / 1e6}
		}
		return nil
	}
}

func intendedITLs(r *record.Request) []float64 {
	t := intendedTimes(r)
	var out []float64
	for i := 1; i < len(t); i++ {
		out = append(out, float64(t[i]-t[i-1])/1e6)
	}
	return out
}

// intendedTPOT follows record.Request.TPOT: (last − first) / (output − 1).
func intendedTPOT(r *record.Request) []float64 {
	t := intendedTimes(r)
	if t == nil || r.OutputTokens < 2 {
		return nil
	}
	return []float64{float64(t[len(t)-1]-t[0]) / 1e6 / float64(r.OutputTokens-1)}
}

// coveredByTruth reports whether nearly every value of a metric has its
// intended counterpart (a run against knee's own server).
func coveredByTruth(measured, intended *sample) bool {
	return measured.n() > 0 && float64(intended.n()) >= 0.9*float64(measured.n())
}

func one(f func(*record.Request) (time.Duration, bool)) func(*record.Request) []float64 {
	return func(r *record.Request) []float64 {
		if d, ok := f(r); ok {
			return []float64{float64(d) / 1e6}
		}
		return nil
	}
}

func itls(r *record.Request) []float64 {
	var out []float64
	for i := 1; i < len(r.TokenTimes); i++ {
		out = append(out, float64(r.TokenTimes[i]-r.TokenTimes[i-1])/1e6)
	}
	return out
}

func quantileOf(d stats.Dist, q float64) float64 {
	switch q {
	case 0.5:
		return d.P50
	case 0.9:
		return d.P90
	case 0.95:
		return d.P95
	case 0.99:
		return d.P99
	}
	return math.NaN()
}

// tailValues is how many values must lie beyond a quantile before its
// bootstrap interval means anything: resampling cannot invent the tail, so
// with fewer the interval of a p99 is far too narrow.
const tailValues = 10

// minValues is the sample size a quantile q needs: tailValues beyond it.
func minValues(q float64) int {
	return int(math.Ceil(tailValues / (1 - q)))
}

func qname(q float64) string {
	return fmt.Sprintf("p%g", q*100)
}

// Compare sets b against a.
func Compare(a, b Side, opts Options) Result {
	if opts.Resamples <= 0 {
		opts.Resamples = 1000
	}
	if opts.MinChange <= 0 {
		opts.MinChange = DefaultMinChange
	}
	if opts.MinDiffMS <= 0 {
		opts.MinDiffMS = DefaultMinDiffMS
	}
	bs := newBootstrap(opts.Seed, opts.Resamples)
	res := Result{A: a.ID, B: b.ID, Method: Method, Resamples: opts.Resamples, MinChange: opts.MinChange, MinDiffMS: opts.MinDiffMS}
	haveRecords := a.Records != nil && b.Records != nil
	// Completion comes first: with no completed request on a side there is
	// no latency to set against the other's (failures are not fast).
	var noLatency []string
	for _, s := range []struct {
		name string
		side *Side
	}{{"A", &a}, {"B", &b}} {
		if s.side.Summary.Completed == 0 {
			noLatency = append(noLatency, fmt.Sprintf("%s (run %s) completed none of its %d requests%s", s.name, s.side.ID,
				s.side.Summary.Requests, errorKindsText(s.side.Summary.ErrorKinds)))
		}
	}
	res.LatencyComparable = len(noLatency) == 0

	// Throughput: the mean of per-second buckets, resampled by second.
	tput := []struct {
		name, label, unit string
		summary           func(*stats.Summary) float64
		perSecond         func(*record.Request) float64
	}{
		{"output_token_throughput_tps", "output tokens/s", "tok/s", func(s *stats.Summary) float64 { return s.OutputTokenThroughputTPS },
			func(r *record.Request) float64 { return float64(r.OutputTokens) }},
		{"request_throughput_rps", "requests/s", "req/s", func(s *stats.Summary) float64 { return s.RequestThroughputRPS },
			func(*record.Request) float64 { return 1 }},
	}
	for _, t := range tput {
		m := Metric{Name: t.name, Label: t.label, Unit: t.unit, Better: "higher", A: t.summary(&a.Summary), B: t.summary(&b.Summary)}
		if haveRecords {
			sa, sb := perSecond(a.Records, t.perSecond), perSecond(b.Records, t.perSecond)
			if len(sa) >= 5 && len(sb) >= 5 {
				lo, hi := bs.meanDiffCI(sa, sb)
				m.setCI(lo, hi)
			} else {
				m.Note = "under 5 s of data: throughput noise unknown"
			}
		}
		res.Metrics = append(res.Metrics, m)
	}

	for _, l := range latencies {
		var sa, sb, ta, tb *sample
		truth := false
		if haveRecords {
			sa, sb = newSample(a.Records, l.values), newSample(b.Records, l.values)
			ta, tb = newSample(a.Records, l.intended), newSample(b.Records, l.intended)
			truth = coveredByTruth(sa, ta) && coveredByTruth(sb, tb)
		}
		for _, q := range l.quantiles {
			da, db := l.dist(&a.Summary), l.dist(&b.Summary)
			m := Metric{Name: l.name + "." + qname(q), Label: l.label + " " + qname(q), Unit: "ms", Better: "lower",
				A: quantileOrNaN(da, q), B: quantileOrNaN(db, q), quantile: q}
			need := minValues(q)
			switch {
			case !res.LatencyComparable:
				m.Note = "not comparable: " + strings.Join(noLatency, "; ")
			case !haveRecords:
			case sa.n() < need || sb.n() < need:
				m.Note = fmt.Sprintf("too few values to judge a %s (%d and %d; want %d, so that %d lie beyond it)",
					qname(q), sa.n(), sb.n(), need, tailValues)
			default:
				lo, hi := bs.quantileDiffCI(sa, sb, q)
				m.setCI(lo, hi)
				if truth {
					d := tb.quantile(q, nil) - ta.quantile(q, nil)
					m.IntendedDiff = &d
				}
			}
			res.Metrics = append(res.Metrics, m)
		}
	}

	// Error rate: two proportions.
	{
		m := Metric{Name: "error_rate", Label: "error rate", Unit: "ratio", Better: "lower", A: a.Summary.ErrorRate, B: b.Summary.ErrorRate}
		na, nb := float64(a.Summary.Requests), float64(b.Summary.Requests)
		if na > 0 && nb > 0 {
			// Agresti–Caffo: one failure and one success added to each side.
			pa := (a.Summary.ErrorRate*na + 1) / (na + 2)
			pb := (b.Summary.ErrorRate*nb + 1) / (nb + 2)
			se := math.Sqrt(pa*(1-pa)/(na+2) + pb*(1-pb)/(nb+2))
			d := pb - pa
			m.setCI(math.Max(-1, d-1.96*se), math.Min(1, d+1.96*se))
		}
		res.Metrics = append(res.Metrics, m)
	}

	for i := range res.Metrics {
		m := &res.Metrics[i]
		m.Diff = m.B - m.A
		if m.A != 0 && finite(m.A) && finite(m.B) {
			m.Change = m.Diff / math.Abs(m.A)
		}
		m.judge(opts.MinChange, opts.MinDiffMS)
		switch m.Effect {
		case "worse":
			res.Worse = append(res.Worse, m.describe())
		case "better":
			res.Better = append(res.Better, m.describe())
		}
	}
	res.Verdict = verdict(&res, haveRecords, noLatency)
	res.Cautions = append(res.Cautions, setupCautions(&a, &b)...)
	if res.LatencyComparable && math.Abs(b.Summary.ErrorRate-a.Summary.ErrorRate) >= 0.05 {
		res.Cautions = append(res.Cautions, fmt.Sprintf("the error rates differ (A %.1f%%, B %.1f%%): latencies cover only completed requests, "+
			"and the ones that failed may have been the slow ones", 100*a.Summary.ErrorRate, 100*b.Summary.ErrorRate))
	}
	for _, w := range a.Summary.Warnings {
		res.Cautions = append(res.Cautions, "A: "+w)
	}
	for _, w := range b.Summary.Warnings {
		res.Cautions = append(res.Cautions, "B: "+w)
	}
	return res
}

// MarshalJSON writes non-finite figures (a percentile a summary-only import
// lacks) as null: JSON has no NaN or infinity.
func (m Metric) MarshalJSON() ([]byte, error) {
	type plain Metric
	fin := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		plain
		A      *float64 `json:"a"`
		B      *float64 `json:"b"`
		Diff   *float64 `json:"diff"`
		Change *float64 `json:"change,omitempty"`
	}{plain(m), fin(m.A), fin(m.B), fin(m.Diff), fin(m.Change)})
}

func (m *Metric) setCI(lo, hi float64) {
	m.CILow, m.CIHigh, m.Tested = &lo, &hi, true
}

func (m *Metric) judge(minChange, minDiffMS float64) {
	if !m.Tested {
		m.Effect = "untested"
		if m.Note == "" && !m.Tested {
			m.Note = "no per-request records: noise unknown"
		}
		return
	}
	excludesZero := *m.CILow > 0 || *m.CIHigh < 0
	big := math.Abs(m.Change) >= minChange
	switch {
	case m.Name == "error_rate":
		big = math.Abs(m.Diff) >= minChange/10 // rates: half a percentage point at the default
	case m.Unit == "ms":
		big = big && math.Abs(m.Diff) >= minDiffMS
	}
	m.Beyond = excludesZero && big
	if m.Beyond && m.IntendedDiff != nil {
		// The server's intended times say whether the server changed: the
		// same test on them, at every quantile alike.
		d := *m.IntendedDiff
		if math.Abs(d) < minDiffMS || math.Abs(d) < minChange*math.Abs(m.A) || (d > 0) != (m.Diff > 0) {
			m.Beyond, m.WithinJitter = false, true
			m.Note = fmt.Sprintf("the server's intended token times differ by %+.2f ms only: the measured %+.2f ms is the machine's delivery jitter, not the server", d, m.Diff)
		}
	}
	switch {
	case !m.Beyond:
		m.Effect = "same"
	case (m.Diff > 0) == (m.Better == "higher"):
		m.Effect = "better"
	default:
		m.Effect = "worse"
	}
}

func (m *Metric) describe() string {
	if m.Name == "error_rate" {
		return fmt.Sprintf("%s %+.2f pp", m.Label, 100*m.Diff)
	}
	return fmt.Sprintf("%s %+.1f%%", m.Label, 100*m.Change)
}

func verdict(r *Result, haveRecords bool, noLatency []string) string {
	switch {
	case len(noLatency) > 0:
		v := "not comparable on latency: " + strings.Join(noLatency, "; ")
		if len(r.Worse) > 0 {
			v += "; B is worse: " + strings.Join(r.Worse, ", ")
		}
		if len(r.Better) > 0 {
			v += "; B is better: " + strings.Join(r.Better, ", ")
		}
		return v
	case !haveRecords:
		return "cannot judge: a run has no per-request records (a summary-only import), so noise is unknown; figures shown side by side"
	case len(r.Worse) == 0 && len(r.Better) == 0:
		return "no change beyond noise"
	case len(r.Worse) == 0:
		return "B is better: " + strings.Join(r.Better, ", ")
	case len(r.Better) == 0:
		return "B is worse: " + strings.Join(r.Worse, ", ")
	}
	return "mixed: worse " + strings.Join(r.Worse, ", ") + "; better " + strings.Join(r.Better, ", ")
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// quantileOrNaN is the summary's quantile, NaN (shown "–") when the
// distribution is empty: no data is not 0 ms.
func quantileOrNaN(d stats.Dist, q float64) float64 {
	if d.Count == 0 {
		return math.NaN()
	}
	return quantileOf(d, q)
}

func errorKindsText(kinds map[string]int) string {
	if len(kinds) == 0 {
		return ""
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return kinds[names[i]] > kinds[names[j]] || kinds[names[i]] == kinds[names[j]] && names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s: %d", k, kinds[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// setupCautions names what differs between the two runs' setups: model,
// target and configuration (workload shape, load, seed, engine).
func setupCautions(a, b *Side) []string {
	var diffs []string
	add := func(what, va, vb string) {
		if va != vb {
			diffs = append(diffs, fmt.Sprintf("%s (A %s, B %s)", what, orNone(va), orNone(vb)))
		}
	}
	if !strings.EqualFold(a.Model, b.Model) { // preset names are case-insensitive
		add("model", a.Model, b.Model)
	}
	add("target", a.Target, b.Target)
	ka, kb := map[string]string{}, map[string]string{}
	var keys []string
	for _, kv := range a.Setup {
		ka[kv[0]] = kv[1]
		keys = append(keys, kv[0])
	}
	for _, kv := range b.Setup {
		if _, ok := ka[kv[0]]; !ok {
			keys = append(keys, kv[0])
		}
		kb[kv[0]] = kv[1]
	}
	for _, k := range keys {
		add(k, ka[k], kb[k])
	}
	if len(diffs) == 0 {
		return nil
	}
	const show = 8
	more := ""
	if len(diffs) > show {
		more = fmt.Sprintf(" and %d more", len(diffs)-show)
		diffs = diffs[:show]
	}
	return []string{"the runs differ in " + strings.Join(diffs, ", ") + more + ": a difference may be the setup, not a change in the server"}
}

func orNone(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// perSecond buckets measured requests by the second their last content (or
// stream end) arrived, adding f(r) for each completed request; seconds from
// the first to the last measured end are all present (idle ones count 0).
func perSecond(recs []record.Request, f func(*record.Request) float64) []float64 {
	first, last := int64(-1), int64(-1)
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		s := int64(endOf(r) / time.Second)
		if first < 0 || s < first {
			first = s
		}
		if s > last {
			last = s
		}
	}
	if first < 0 || last-first > 24*3600 {
		return nil
	}
	out := make([]float64, last-first+1)
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !r.OK() {
			continue
		}
		out[int64(endOf(r)/time.Second)-first] += f(r)
	}
	// A partial last second would bias the mean down: drop it when there is
	// plenty of data.
	if len(out) > 5 {
		out = out[:len(out)-1]
	}
	return out
}

func endOf(r *record.Request) time.Duration {
	if r.HasFirstToken() && r.Done > 0 {
		return r.Done
	}
	return r.StreamEnd
}
