package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
)

// Nested cross-validation of the ranges knee prints (issue 40). The
// leave-one-source-out table scores the point prediction; this scores the
// range. A range method is chosen without the rows it is then checked on,
// and checked five ways, each leaving out a different kind of novelty: a
// source (one publisher's host and engine version), a publisher (every
// source of one publisher: a new user is always a new publisher), a GPU
// (every row on one GPU model), an engine version (every row of one
// engine family's minor version) and a model (every row of one model).
//
// For a scheme and an outer group g left out: the defaults are refitted
// without g and without each other row's own group (so every training
// residual is itself held out under the scheme); the level of the range
// (the share of the training residuals it spans, per metric) is the least
// whose inner leave-one-group-out coverage over the training rows reaches
// 80%; g's rows are then checked against that range of the training
// residuals. Nothing of g (its rows, its residuals, its data in the fit)
// informs its range.

// rangeScheme is one way of leaving rows out.
type rangeScheme struct {
	id, label string
	group     func(r scoredRow) string
}

// Ranges are shipped for the publisher scheme (the baseline: whoever runs
// knee is a new publisher), the GPU scheme (a GPU without a source) and
// the model scheme (a model without one); the source and engine-version
// schemes are checked and reported (knee cannot tell which engine version
// a user runs).
var rangeSchemes = []rangeScheme{
	{simengine.SchemeSource, "leave one source out", func(r scoredRow) string { return r.source }},
	{simengine.SchemePublisher, "leave one publisher out", func(r scoredRow) string { return sourceLabels[r.source].publisher }},
	{simengine.SchemeGPU, "leave one GPU out", func(r scoredRow) string { return rowGPU(r.name) }},
	{simengine.SchemeEngineVersion, "leave one engine version out", func(r scoredRow) string { return sourceLabels[r.source].engineVersion }},
	{simengine.SchemeModel, "leave one model out", func(r scoredRow) string { return rowModel(r.name) }},
}

// rowModel is the model a validation row ran, the first word of its name
// (as rowHasExperts reads it): a preset's name, or the word itself where
// it names none (a model run from its config).
func rowModel(name string) string {
	model, _, _ := strings.Cut(name, " ")
	model = strings.TrimSuffix(model, ",")
	if m, err := simengine.LookupModel(strings.ToLower(model)); err == nil {
		return m.Name
	}
	return model
}

// sourceLabel is who published a source and which engine version it ran
// (family and minor version, as the source states it; "unstated" ones are
// each their own group).
type sourceLabel struct{ publisher, engineVersion string }

var sourceLabels = map[string]sourceLabel{
	"yobitel":                    {"yobitel", "vLLM 0.21"}, // 0.21.0 and 0.22.1
	"musgrave":                   {"musgrave", "vLLM 0.23"},
	"blis":                       {"inference-sim", "vLLM (unstated, blis)"},
	"vllm-nightly":               {"vllm-project", "vLLM V0 (2024 nightly)"},
	"vllm-pr3692-dbrx":           {"vllm-project", "vLLM V0 (March 2024)"},
	"kvcached":                   {"ovg-project", "vLLM 0.19"},
	"wmx":                        {"wmx", "vLLM 0.23"},
	"gpustack-a100":              {"gpustack", "vLLM 0.11"},
	"gpustack-h100":              {"gpustack", "vLLM 0.11"},
	"nim":                        {"nvidia", "NIM 1.8"},
	"trtllm":                     {"nvidia", "TensorRT-LLM 1.0"},
	"oci-mi300x":                 {"oracle", "vLLM V0 (ROCm 2024)"},
	"amd-mi300x":                 {"amd", "vLLM 0.10"},
	"rtx4090-mistral":            {"mushfiqrahman", "vLLM (unstated, rtx4090)"},
	"gpustack-h200":              {"gpustack", "vLLM 0.11"},
	"gpustack-h100-v0.10":        {"gpustack", "vLLM 0.10"},
	"systalyze-h200":             {"systalyze", "vLLM 0.27"},
	"datacrunch-h200-sglang":     {"datacrunch", "SGLang 0.4"}, // the image of Dec 2024: 0.4.0 was released that month (assumed)
	"lmsys-sglang-v0.3":          {"lmsys", "SGLang 0.3"},
	"wangraying-a100-sglang":     {"wangraying", "SGLang 0.3"},
	"skypilot-h200-vllm-0.8":     {"skypilot", "vLLM 0.8"},
	"skypilot-h200-sglang-0.4.5": {"skypilot", "SGLang 0.4"},
	"trtllm-v0.5-l40s":           {"nvidia", "TensorRT-LLM 0.5"},
	"trtllm-v0.6-h100":           {"nvidia", "TensorRT-LLM 0.6"},
	"trtllm-v0.6-a100":           {"nvidia", "TensorRT-LLM 0.6"},
	"trtllm-v0.5-h100":           {"nvidia", "TensorRT-LLM 0.5"},
	"trtllm-v0.5-a100":           {"nvidia", "TensorRT-LLM 0.5"},
	"gpustack-h100-sglang-0.5":   {"gpustack", "SGLang 0.5"},
	"trtllm-v0.15-l40s":          {"nvidia", "TensorRT-LLM 0.15"},
	"trtllm-v0.15-a100":          {"nvidia", "TensorRT-LLM 0.15"},
	"ree2raz-l4-vllm-0.8.5":      {"ree2raz", "vLLM 0.8"},
	"ree2raz-a100-vllm-0.20":     {"ree2raz", "vLLM 0.20"},
	"ree2raz-a100-vllm-0.8.5":    {"ree2raz", "vLLM 0.8"},
}

// rowGPU is the GPU preset a validation row ran on, read from its name
// (every row names its GPU in one of its comma-separated fields, e.g.
// "Llama-2-7B, H100, 20 req/s, …"); "" when none resolves.
func rowGPU(name string) string {
	for _, f := range strings.Split(name, ", ") {
		f = strings.ToLower(strings.TrimSpace(f))
		f = strings.TrimPrefix(f, "8×")
		f = strings.TrimSuffix(f, " (pcie)")
		f = strings.ReplaceAll(f, " ", "-")
		if g, err := simengine.LookupGPU(f); err == nil {
			return g.Name
		}
	}
	return ""
}

// loadRegime bins a row by the load it was measured at, read from its
// name: one request at a time, a small running batch (2-16 users or
// sequences, or a rate), or a large one (32 and more, or every request
// queued at once: saturated).
func loadRegime(name string) string {
	n := strings.ToLower(name)
	num := func(after string) (int, bool) {
		i := strings.Index(n, after)
		if i < 0 {
			return 0, false
		}
		s := n[i+len(after):]
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		v, err := strconv.Atoi(s[:j])
		return v, err == nil
	}
	if strings.Contains(n, "/ c=1") {
		return regimeOther // a ratio of two loads
	}
	if strings.Contains(n, " at once") || strings.Contains(n, "trt-llm offline") {
		return regimeLarge
	}
	for _, k := range []string{"c=", "batch ", "concurrency "} {
		if v, ok := num(k); ok {
			switch {
			case v <= 1:
				return regimeOne
			case v <= 16:
				return regimeSmall
			}
			return regimeLarge
		}
	}
	if strings.Contains(n, "req/s") {
		return regimeRate
	}
	return regimeOther
}

const (
	regimeOne   = "one request at a time"
	regimeSmall = "2-16 users or sequences"
	regimeLarge = "32+ users or sequences, or queued at once"
	regimeRate  = "open-loop rate"
	regimeOther = "other"
)

var loadRegimes = []string{regimeOne, regimeSmall, regimeLarge, regimeRate, regimeOther}

// groupFitter refits the defaults without any set of groups of a scheme
// at the cost of a sum (fitCandidate's loss, from per-group sums).
type groupFitter struct {
	nCand   int
	sums    map[string]map[string][]float64 // group → metric → candidate → Σ|log error|
	counts  map[string]map[string]int
	total   map[string][]float64
	totalN  map[string]int
	cache   map[string]int
	metrics []string
}

func newGroupFitter(rows []scoredRow, nCand int, group func(scoredRow) string) *groupFitter {
	f := &groupFitter{nCand: nCand, sums: map[string]map[string][]float64{}, counts: map[string]map[string]int{},
		total: map[string][]float64{}, totalN: map[string]int{}, cache: map[string]int{}, metrics: scoredMetrics}
	for _, r := range rows {
		g := group(r)
		if f.sums[g] == nil {
			f.sums[g], f.counts[g] = map[string][]float64{}, map[string]int{}
		}
		if f.sums[g][r.metric] == nil {
			f.sums[g][r.metric] = make([]float64, nCand)
		}
		if f.total[r.metric] == nil {
			f.total[r.metric] = make([]float64, nCand)
		}
		for c, l := range r.logRatio {
			a := math.Abs(l)
			f.sums[g][r.metric][c] += a
			f.total[r.metric][c] += a
		}
		f.counts[g][r.metric]++
		f.totalN[r.metric]++
	}
	return f
}

// fit is the candidate of least loss without the groups given.
func (f *groupFitter) fit(without ...string) int {
	key := strings.Join(without, "\x00")
	if c, ok := f.cache[key]; ok {
		return c
	}
	best, bestLoss := 0, math.Inf(1)
	for c := range f.nCand {
		var loss float64
		for _, m := range f.metrics {
			s, n := f.total[m][c], f.totalN[m]
			for _, g := range without {
				if v := f.sums[g][m]; v != nil {
					s -= v[c]
				}
				n -= f.counts[g][m]
			}
			if n > 0 {
				loss += s / float64(n)
			}
		}
		if loss < bestLoss {
			best, bestLoss = c, loss
		}
	}
	f.cache[key] = best
	return best
}

// residual is a row's log(predicted / published) with the defaults fitted
// without its own group and the groups given.
func (f *groupFitter) residual(r scoredRow, own string, without ...string) float64 {
	ex := append([]string{own}, without...)
	slices.Sort(ex)
	ex = slices.Compact(ex)
	return r.logRatio[f.fit(ex...)]
}

// cvRow is a row with its group under a scheme and its residual.
type cvRow struct {
	row   scoredRow
	group string
	res   float64
}

// chooseLevel is the least level (share of the training residuals
// spanned, in steps of 1% from 50%: a pooled range may cover a new
// group's rows more often than its level, as well as less) whose leave-one-group-out coverage over rows reaches
// predictionRange, for one metric: the inner loop of the nested CV, and,
// on every row, the level knee ships.
func chooseLevel(rows []cvRow) float64 {
	type fold struct {
		sorted []float64
		own    []float64
	}
	byGroup := map[string][]float64{}
	for _, r := range rows {
		byGroup[r.group] = append(byGroup[r.group], r.res)
	}
	var folds []fold
	for g, own := range byGroup {
		var others []float64
		for _, r := range rows {
			if r.group != g {
				others = append(others, r.res)
			}
		}
		if len(others) == 0 {
			continue
		}
		slices.Sort(others)
		folds = append(folds, fold{others, own})
	}
	best, bestGap := 1.0, math.Inf(1)
	for step := 50; step <= 100; step++ {
		level := float64(step) / 100
		in, n := 0, 0
		for _, f := range folds {
			lo, hi := quantileSorted(f.sorted, (1-level)/2), quantileSorted(f.sorted, (1+level)/2)
			for _, v := range f.own {
				if v >= lo && v <= hi {
					in++
				}
				n++
			}
		}
		if n == 0 {
			return level
		}
		if gap := math.Abs(float64(in)/float64(n) - predictionRange); gap < bestGap-1e-12 {
			best, bestGap = level, gap
		}
	}
	return best
}

// schemeCV is one scheme's nested-CV outcome.
type schemeCV struct {
	scheme rangeScheme
	groups int
	// res are the single-level held-out residuals (each row's group left
	// out), by metric: the errors a user in this kind of novelty sees.
	res map[string][]cvRow
	// level is the level chosen on every row (what knee ships), by
	// metric|batch class.
	level map[string]float64
	// in/n: nested coverage by metric and by regime bin (metric|regime).
	in, n map[string]int
	// outer records, by row name+metric, whether the row fell in its
	// nested range.
	covered map[string]bool
}

func (s schemeCV) coverage() (in, n int) {
	for _, m := range scoredMetrics {
		in += s.in[m]
		n += s.n[m]
	}
	return in, n
}

// runRangeCV runs the nested CV of every scheme over the leave-one-source
// -out simulations (no further simulation).
func runRangeCV(r looResult) []schemeCV {
	var out []schemeCV
	for _, sc := range rangeSchemes {
		f := newGroupFitter(r.rows, len(r.grid), sc.group)
		cv := schemeCV{scheme: sc, res: map[string][]cvRow{}, level: map[string]float64{}, in: map[string]int{}, n: map[string]int{}, covered: map[string]bool{}}
		groups := map[string]bool{}
		for _, row := range r.rows {
			g := sc.group(row)
			groups[g] = true
			cv.res[row.metric] = append(cv.res[row.metric], cvRow{row, g, f.residual(row, g)})
		}
		cv.groups = len(groups)
		for _, m := range scoredMetrics {
			for _, class := range simengine.BatchClasses {
				cv.level[simengine.RangeKey(m, class)] = chooseLevel(classPool(cv.res[m], class))
			}
		}
		names := slices.Sorted(func(yield func(string) bool) {
			for g := range groups {
				if !yield(g) {
					return
				}
			}
		})
		for _, g := range names {
			for _, m := range scoredMetrics {
				var train, test []cvRow
				for _, x := range cv.res[m] {
					if x.group == g {
						test = append(test, x)
						continue
					}
					// Refitted without g too: g informs nothing.
					train = append(train, cvRow{x.row, x.group, f.residual(x.row, x.group, g)})
				}
				if len(test) == 0 || len(train) == 0 {
					continue
				}
				ranges := map[string][2]float64{}
				for _, class := range simengine.BatchClasses {
					pool := classPool(train, class)
					level := chooseLevel(pool)
					s := make([]float64, len(pool))
					for i, x := range pool {
						s[i] = x.res
					}
					slices.Sort(s)
					ranges[class] = [2]float64{quantileSorted(s, (1-level)/2), quantileSorted(s, (1+level)/2)}
				}
				for _, x := range test {
					rg := ranges[batchClass(x.row.name)]
					ok := x.res >= rg[0] && x.res <= rg[1]
					reg := m + "|" + loadRegime(x.row.name)
					cv.n[m]++
					cv.n[reg]++
					if ok {
						cv.in[m]++
						cv.in[reg]++
					}
					cv.covered[x.row.name+"|"+m] = ok
				}
			}
		}
		out = append(out, cv)
	}
	return out
}

// minClassRows is the fewest rows a batch class's own range is computed
// from; a thinner class takes its metric's pooled range.
const minClassRows = 20

// batchClass is the running-batch class of a validation row, as
// simengine.BatchClassOf classes a prediction: one at a time for one user
// or sequence, large for 32 and more or a burst queued at once, small
// otherwise (2-16, an open-loop rate).
func batchClass(name string) string {
	switch loadRegime(name) {
	case regimeLarge:
		return simengine.BatchLarge
	case regimeOne:
		return simengine.BatchOne
	}
	return simengine.BatchSmall
}

// classPool is the rows of a batch class, or all of them where the class
// has fewer than minClassRows.
func classPool(rows []cvRow, class string) []cvRow {
	var pool []cvRow
	for _, x := range rows {
		if batchClass(x.row.name) == class {
			pool = append(pool, x)
		}
	}
	if len(pool) < minClassRows {
		return rows
	}
	return pool
}

// quantiles21 are the 0%, 5%, …, 100% quantiles of log(measured /
// predicted) (the negated residuals), rounded as simengine keeps them.
func quantiles21(rows []cvRow) [21]float64 {
	s := make([]float64, len(rows))
	for i, x := range rows {
		s[i] = -x.res
	}
	slices.Sort(s)
	var q [21]float64
	for i := range q {
		q[i] = math.Round(quantileSorted(s, float64(i)/20)*1000) / 1000
	}
	return q
}

// rangeCVReport renders the nested-CV table docs/validation.md leads with.
func rangeCVReport(cvs []schemeCV) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| scheme | groups | metric | rows | median \\|error\\| | 90th percentile \\|error\\| | 80%% range, one at a time (level) | 80%% range, small batch (level) | 80%% range, large batch (level) | nested coverage |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, cv := range cvs {
		for _, m := range scoredMetrics {
			var abs []float64
			for _, x := range cv.res[m] {
				abs = append(abs, x.res)
			}
			med, p90 := medianP90(absRelErrors(abs))
			var cells []string
			for _, class := range simengine.BatchClasses {
				q := quantiles21(classPool(cv.res[m], class))
				lvl := cv.level[simengine.RangeKey(m, class)]
				cells = append(cells, fmt.Sprintf("×%.2f – ×%.2f (%.0f%%)", math.Exp(quantileOf21(q, (1-lvl)/2)), math.Exp(quantileOf21(q, (1+lvl)/2)), lvl*100))
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %d | %.0f%% | %.0f%% | %s | %d of %d (%.0f%%) |\n", cv.scheme.label, cv.groups, metricLabel[m], len(cv.res[m]),
				med*100, p90*100, strings.Join(cells, " | "), cv.in[m], cv.n[m], pct(cv.in[m], cv.n[m]))
		}
		in, n := cv.coverage()
		fmt.Fprintf(&b, "| %s | %d | **all** | %d | | | | | | **%d of %d (%.0f%%)** |\n", cv.scheme.label, cv.groups, n, in, n, pct(in, n))
	}
	fmt.Fprintf(&b, "\nNested coverage by load regime (the bin read from each row's name; metric and scheme as above; bins of 20 rows or more in bold when under 70%%):\n\n")
	fmt.Fprintf(&b, "| metric | load regime |")
	for _, cv := range cvs {
		fmt.Fprintf(&b, " %s |", cv.scheme.label)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(cvs)) + "\n")
	for _, m := range scoredMetrics {
		for _, reg := range loadRegimes {
			key := m + "|" + reg
			if cvs[0].n[key] == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s |", metricLabel[m], reg)
			for _, cv := range cvs {
				in, n := cv.in[key], cv.n[key]
				cell := fmt.Sprintf("%d of %d (%.0f%%)", in, n, pct(in, n))
				if n >= 20 && pct(in, n) < 70 {
					cell = "**" + cell + "**"
				}
				fmt.Fprintf(&b, " %s |", cell)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func pct(in, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return 100 * float64(in) / float64(n)
}

// quantileOf21 interpolates a 21-point table (simengine's quantileOf).
func quantileOf21(q [21]float64, p float64) float64 {
	pos := p * 20
	i := min(int(pos), 19)
	return q[i] + (q[i+1]-q[i])*(pos-float64(i))
}

// groupsReport lists each scheme's groups with their row counts.
func groupsReport(r looResult) string {
	var b strings.Builder
	for _, sc := range rangeSchemes[1:] {
		n := map[string]int{}
		for _, row := range r.rows {
			n[sc.group(row)]++
		}
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s (%d)", k, n[k]))
		}
		fmt.Fprintf(&b, "- %s, %d groups: %s\n", sc.label, len(keys), strings.Join(parts, ", "))
	}
	return b.String()
}

// looMemo keeps the leave-one-source-out simulations for the tests that
// read them (TestLeaveOneSourceOut, TestRangeCrossValidation): they are
// the cost, and a run of both simulates once.
var looMemo struct {
	sync.Mutex
	r *looResult
}

func leaveOneSourceOut(t *testing.T) looResult {
	t.Helper()
	looMemo.Lock()
	defer looMemo.Unlock()
	if looMemo.r != nil {
		return *looMemo.r
	}
	r := runLeaveOneSourceOut(t)
	if !t.Failed() {
		looMemo.r = &r
	}
	return r
}

// TestRangeCrossValidation scores the range knee prints, not the point:
// under each of the five leave-out schemes, a range chosen without the
// group left out (nested cross-validation) must cover 75-85% of its rows
// (it is stated as 80%). It also holds simengine's shipped quantiles,
// levels and validated GPUs to what the validation rows give, and writes
// docs/validation.md's "ranges" region
// (go test -run TestRangeCrossValidation -v ./internal/sim).
func TestRangeCrossValidation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the validation table once per candidate")
	}
	r := leaveOneSourceOut(t)
	for _, row := range r.rows {
		if rowGPU(row.name) == "" {
			t.Errorf("%s: no GPU preset named in the row's name (rowGPU)", row.name)
		}
		if l, ok := sourceLabels[row.source]; !ok || l.publisher == "" || l.engineVersion == "" {
			t.Errorf("%s: source %q has no publisher or engine version in sourceLabels", row.name, row.source)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	cvs := runRangeCV(r)
	report := rangeCVReport(cvs)
	t.Logf("\n%s\n%s", report, groupsReport(r))
	for _, cv := range cvs {
		in, n := cv.coverage()
		t.Run("coverage/"+cv.scheme.id, func(t *testing.T) {
			if c := pct(in, n); c < 75 || c > 85 {
				t.Errorf("%s: the stated 80%% range, chosen without the group it is checked on, covers %d of %d rows (%.1f%%); want 75-85%%", cv.scheme.label, in, n, c)
			}
		})
	}
	// Issue 40 aims at 70% in every regime bin of 20 rows or more. The
	// bins still under it are known (docs/validation.md says why); any
	// other falling under it fails, so a fixed bin stays fixed.
	knownUnder := map[string]bool{
		simengine.SchemePublisher + "|tpot|" + regimeLarge:     true,
		simengine.SchemeEngineVersion + "|tpot|" + regimeLarge: true,
		simengine.SchemeModel + "|ttft|" + regimeSmall:         true,
	}
	for _, cv := range cvs {
		for _, m := range scoredMetrics {
			for _, reg := range loadRegimes {
				in, n := cv.in[m+"|"+reg], cv.n[m+"|"+reg]
				if n >= 20 && pct(in, n) < 70 && !knownUnder[cv.scheme.id+"|"+m+"|"+reg] {
					t.Errorf("%s, %s at %s: %d of %d rows in the nested range (%.0f%%); want 70%% or more", cv.scheme.label, m, reg, in, n, pct(in, n))
				}
			}
		}
	}
	// What knee ships: the publisher and GPU schemes' quantiles and levels
	// computed on every row.
	var literal strings.Builder
	for _, cv := range cvs {
		if cv.scheme.id != simengine.SchemePublisher && cv.scheme.id != simengine.SchemeGPU && cv.scheme.id != simengine.SchemeModel {
			continue
		}
		want := simengine.HeldOutLogQuantiles[cv.scheme.id]
		fmt.Fprintf(&literal, "\t%q: {\n", cv.scheme.id)
		for _, m := range scoredMetrics {
			for _, class := range simengine.BatchClasses {
				key := simengine.RangeKey(m, class)
				q := quantiles21(classPool(cv.res[m], class))
				fmt.Fprintf(&literal, "\t\t%q: %#v, // level %v\n", key, q, cv.level[key])
				if want[key] != q {
					t.Errorf("simengine.HeldOutLogQuantiles[%q][%q] = %v; the held-out errors give %v", cv.scheme.id, key, want[key], q)
				}
				if got := simengine.HeldOutLevels[cv.scheme.id][key]; got != cv.level[key] {
					t.Errorf("simengine.HeldOutLevels[%q][%q] = %v; the folds give %v", cv.scheme.id, key, got, cv.level[key])
				}
			}
		}
		literal.WriteString("\t},\n")
	}
	t.Logf("shipped quantiles and levels:\n%s", literal.String())
	gpus := map[string]bool{}
	for _, row := range r.rows {
		gpus[rowGPU(row.name)] = true
	}
	validated := slices.Sorted(maps.Keys(gpus))
	if !slices.Equal(validated, simengine.ValidatedGPUs) {
		t.Errorf("simengine.ValidatedGPUs = %q; the scored rows ran on %q", simengine.ValidatedGPUs, validated)
	}
	models := map[string]bool{}
	for _, row := range r.rows {
		models[rowModel(row.name)] = true
	}
	if got := slices.Sorted(maps.Keys(models)); !slices.Equal(got, simengine.ValidatedModels) {
		t.Errorf("simengine.ValidatedModels = %q; the scored rows ran %q", simengine.ValidatedModels, got)
	}
	syncDocRegion(t, "ranges", report+"\nGroups of each scheme (rows):\n\n"+groupsReport(r))
}
