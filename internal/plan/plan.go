// Package plan searches deployments over the simulator: GPU preset × TP ×
// replicas × engine limits × router, priced per GPU-hour, for the cheapest
// one that meets every SLO at a target load.
//
// The search prunes before it simulates: a (GPU, TP) whose weights do not
// fit is dropped with the engine's numbers; each engine variant's capacity
// is measured once (a short saturated closed loop), which bounds the
// replicas from below; then, for every variant and router, a binary search
// over the replica count finds the fewest replicas that meet the SLOs
// (more replicas of one variant never cost less, and latency does not grow
// with them). Lines run on all cores; results are collected in a fixed
// order, so an answer is a function of its inputs and seed.
package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// Space is what the search may choose from.
type Space struct {
	GPUs             []simengine.GPU
	TPs              []int
	MaxReplicas      int
	MaxNumSeqs       []int // 0 = Base's, else the engine's default
	MaxBatchedTokens []int // 0 = Base's (a server profile's), else the engine's default
	Routers          []string
}

// Question is what plan answers.
type Question struct {
	// Base is the engine template: model, memory utilization, cost
	// constants, prefix caching. GPU, TP and the two limits are searched.
	Base simengine.Config
	Gen  sim.Lengths
	// Arrivals returns a fresh arrival process at the target rate (the
	// same seed each time, so every candidate sees the same requests).
	Arrivals func() sim.Arrivals
	RateRPS  float64
	// MeanTokens is the mean prompt + output length, for the context check.
	MeanTokens float64
	SLOs       slo.Set
	// SearchRequests per candidate in the search; ValidateRequests for the
	// winner's (and the next cheaper candidate's) longer run. A tenth of
	// each run is warm-up.
	SearchRequests, ValidateRequests int64
	Space                            Space
	Costs                            Costs
	Workers                          int // 0 = GOMAXPROCS
	// Headroom allows for the simulator's error (NewHeadroom); the zero
	// value plans on the point estimate.
	Headroom Headroom
	// OnWinnerRecord, when set, sees every record of the winner's
	// validation run (to store it like any run); the record is reused.
	OnWinnerRecord func(*record.Request)
	// A traffic mix (--mix): Class names request i's class and LoRA
	// adapter; each class of ClassNames is judged by SLOs and its own
	// ClassSLOs, and a deployment meets only when every class does.
	Class      func(i int64) (name string, adapter int32)
	ClassNames []string
	ClassSLOs  map[string]slo.Set
	// Objective is what the winner minimises among the deployments that
	// meet the SLOs: ObjectiveCost (""), dollars per hour, or
	// ObjectiveEnergy, joules per output token (the power model's).
	Objective string
}

// The objectives a plan can minimise (Question.Objective).
const (
	ObjectiveCost   = "cost"
	ObjectiveEnergy = "energy"
)

// better orders two outcomes by the question's objective: energy per
// output token (to 0.1%: finer is noise), then cost; or cost alone.
func (q Question) better(a, b *Outcome) bool {
	if q.Objective == ObjectiveEnergy {
		ea, eb := a.EnergyJPerToken, b.EnergyJPerToken
		if math.Abs(ea-eb) > 1e-3*math.Max(ea, eb) {
			return ea < eb
		}
	}
	return cheaper(a, b)
}

// ClassOutcome is one class of a mix on a candidate.
type ClassOutcome struct {
	Name       string       `json:"name"`
	Met        bool         `json:"met"`
	TTFTP95MS  float64      `json:"ttft_p95_ms"`
	GoodputRPS float64      `json:"goodput_rps"`
	SLOs       []slo.Result `json:"-"`
	Verdicts   []string     `json:"slos"`
}

// Candidate is one deployment.
type Candidate struct {
	GPU              string  `json:"gpu"`
	TP               int     `json:"tp"`
	Replicas         int     `json:"replicas"`
	MaxNumSeqs       int     `json:"max_num_seqs"`
	MaxBatchedTokens int     `json:"max_num_batched_tokens"`
	Router           string  `json:"router"`
	GPUs             int     `json:"gpus"`
	CostPerHour      float64 `json:"cost_usd_per_hour"`
}

func (c Candidate) String() string {
	return fmt.Sprintf("%d× %s TP%d (%d GPUs), max_num_seqs %d, max_num_batched_tokens %d, %s: $%.2f/h",
		c.Replicas, c.GPU, c.TP, c.GPUs, c.MaxNumSeqs, c.MaxBatchedTokens, c.Router, c.CostPerHour)
}

// Outcome is a simulated candidate.
type Outcome struct {
	Candidate
	Requests      int64          `json:"requests"` // simulated, warm-up included
	TTFTP95MS     float64        `json:"ttft_p95_ms"`
	ITLP99MS      float64        `json:"itl_p99_ms"`
	ThroughputRPS float64        `json:"throughput_rps"`
	GoodputRPS    float64        `json:"goodput_rps"`
	Met           bool           `json:"met"`
	SLOs          []slo.Result   `json:"-"`
	Verdicts      []string       `json:"slos"`
	Saturated     bool           `json:"saturated"`
	Classes       []ClassOutcome `json:"classes,omitempty"`
	// Headroom is the headroom the outcome was judged with (Headroom.In:
	// its GPU, model and batch; nil at confidence 0).
	Headroom *Headroom `json:"headroom,omitempty"`
	// Energy from the power model over the run (0: the GPU preset has
	// none): joules per output token, average power per GPU, and the
	// deployment's price per million output tokens at this load.
	EnergyJPerToken     float64 `json:"j_per_output_token,omitempty"`
	AvgPowerWPerGPU     float64 `json:"avg_power_w_per_gpu,omitempty"`
	USDPerMOutputTokens float64 `json:"usd_per_m_output_tokens,omitempty"`
	// EnergyRanges are those figures' ranges (energy.Figures.WithRanges:
	// the power model's held-out errors and the throughput's).
	EnergyRanges *energy.Ranges `json:"energy_ranges,omitempty"`
	Elapsed      time.Duration  `json:"-"`
	Summary      stats.Summary  `json:"-"`
}

// Family is one (GPU, TP) and what became of it.
type Family struct {
	GPU string `json:"gpu"`
	TP  int    `json:"tp"`
	// Verdict is "ok" (some candidate met the SLOs), "memory", "saturation"
	// or "slo"; Reason says it with numbers.
	Verdict string   `json:"verdict"`
	Reason  string   `json:"reason"`
	Best    *Outcome `json:"best,omitempty"` // its cheapest candidate meeting the SLOs
}

// Answer is the search's result.
type Answer struct {
	Winner     *Outcome `json:"winner"`     // nil: nothing in the space meets the SLOs
	Validation *Outcome `json:"validation"` // the winner's longer run
	// Rejected are the long runs of cheaper candidates that met the SLOs
	// in their search runs and not in the longer one, cheapest first.
	Rejected    []Outcome `json:"rejected,omitempty"`
	NextCheaper *Outcome  `json:"next_cheaper,omitempty"`
	Pareto      []Outcome `json:"pareto"`
	// Cheapest, for an energy objective, is the cheapest deployment that
	// met the SLOs in its search run, beside the winner to say what the
	// joules saved cost (nil for the cost objective: it is the winner).
	Cheapest *Outcome `json:"cheapest_meeting,omitempty"`
	// Meeting counts the lines (variant × router) whose best met the SLOs
	// in the search.
	Meeting    int      `json:"meeting_lines"`
	Families   []Family `json:"families"`
	Candidates int      `json:"candidates"` // deployments in the space whose weights fit
	Simulated  int      `json:"simulated"`  // search runs
}

// variant is one engine configuration (GPU, TP, limits) that fits.
type variant struct {
	cfg      simengine.Config
	family   int
	capRPS   float64 // one replica's saturated throughput
	minRepl  int
	costHour float64 // one replica
}

// line is a variant behind one router, searched over the replica count.
type line struct {
	v       *variant
	router  string
	results map[int]*Outcome
	best    *Outcome // fewest replicas meeting the SLOs
}

// Search answers q.
func Search(ctx context.Context, q Question) (Answer, error) {
	var ans Answer
	if q.Gen == nil || q.Arrivals == nil || !(q.RateRPS > 0) || q.SearchRequests <= 0 {
		return ans, errors.New("plan: need a workload, an arrival process, a rate and a number of search requests")
	}
	if len(q.SLOs) == 0 && !q.classesJudged() {
		return ans, errors.New("plan: give at least one SLO")
	}
	sp := q.Space
	if sp.MaxReplicas < 1 || len(sp.GPUs) == 0 || len(sp.TPs) == 0 || len(sp.Routers) == 0 {
		return ans, errors.New("plan: empty search space")
	}
	if len(sp.MaxNumSeqs) == 0 {
		sp.MaxNumSeqs = []int{0}
	}
	if len(sp.MaxBatchedTokens) == 0 {
		sp.MaxBatchedTokens = []int{0}
	}
	workers := q.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}

	// Memory first: a (GPU, TP) whose weights do not fit is out whole.
	var variants []*variant
	for _, g := range sp.GPUs {
		price, ok := q.Costs[g.Name]
		if !ok {
			return ans, fmt.Errorf("plan: no price for %s (add it to the cost file)", g.Name)
		}
		for _, tp := range sp.TPs {
			fam := Family{GPU: g.Name, TP: tp}
			fi := len(ans.Families)
			seen := map[[2]int]bool{}
			for _, seqs := range sp.MaxNumSeqs {
				for _, budget := range sp.MaxBatchedTokens {
					c := q.Base
					c.GPU, c.TP = g, tp
					// 0 keeps the base's value: a server profile's (SGLang's
					// and TensorRT-LLM's 8,192-token budget) or, unset, the
					// engine's default for the GPU.
					if seqs != 0 {
						c.MaxNumSeqs = seqs
					}
					if budget != 0 {
						c.MaxNumBatchedTokens = budget
					}
					eng, err := simengine.NewEngine(c)
					if err != nil {
						fam.Verdict, fam.Reason = "memory", err.Error()
						if !errors.Is(err, simengine.ErrDoesNotFit) {
							fam.Verdict = "invalid"
						}
						continue
					}
					c = eng.Config() // defaults resolved
					if q.MeanTokens > float64(c.MaxModelLen) {
						fam.Verdict = "memory"
						fam.Reason = fmt.Sprintf("the KV cache holds %d tokens, under a mean request of %.0f", c.MaxModelLen, q.MeanTokens)
						continue
					}
					key := [2]int{c.MaxNumSeqs, c.MaxNumBatchedTokens}
					if seen[key] {
						continue // a default equal to an explicit value
					}
					seen[key] = true
					variants = append(variants, &variant{cfg: c, family: fi, costHour: price * float64(tp)})
				}
			}
			ans.Families = append(ans.Families, fam)
		}
	}

	// Capacity: one short saturated run per variant bounds the replicas.
	parallel(workers, len(variants), func(i int) {
		v := variants[i]
		v.capRPS = capacity(ctx, v.cfg, q.Gen)
		v.minRepl = max(1, int(math.Ceil(q.RateRPS/(v.capRPS*q.Headroom.In(saturatedIn(v.cfg)).capacityFactor()))))
	})
	var lines []*line
	for _, v := range variants {
		ans.Candidates += sp.MaxReplicas * len(sp.Routers)
		if v.minRepl > sp.MaxReplicas {
			continue
		}
		for _, r := range sp.Routers {
			lines = append(lines, &line{v: v, router: r, results: map[int]*Outcome{}})
		}
	}

	// The search: per line, the fewest replicas that meet the SLOs.
	parallel(workers, len(lines), func(i int) {
		l := lines[i]
		eval := func(n int) *Outcome {
			o := simulate(ctx, q, l.v, n, l.router, q.SearchRequests)
			l.results[n] = o
			return o
		}
		hi := eval(sp.MaxReplicas)
		if !hi.Met {
			return
		}
		lo, best := l.v.minRepl, hi // invariant: best meets at replicas hiN
		hiN := sp.MaxReplicas
		for lo < hiN {
			mid := (lo + hiN) / 2
			if o := eval(mid); o.Met {
				hiN, best = mid, o
			} else {
				lo = mid + 1
			}
		}
		l.best = best
	})
	if err := ctx.Err(); err != nil {
		return ans, err
	}

	var all []*Outcome
	for _, l := range lines {
		ns := make([]int, 0, len(l.results))
		for n := range l.results {
			ns = append(ns, n)
		}
		sort.Ints(ns)
		for _, n := range ns {
			all = append(all, l.results[n])
		}
	}
	ans.Simulated = len(all)
	for _, l := range lines {
		if l.best == nil {
			continue
		}
		ans.Meeting++
		if ans.Winner == nil || q.better(l.best, ans.Winner) {
			ans.Winner = l.best
		}
		if q.Objective == ObjectiveEnergy && (ans.Cheapest == nil || cheaper(l.best, ans.Cheapest)) {
			ans.Cheapest = l.best
		}
	}
	ans.Pareto = pareto(all)
	explain(&ans, variants, lines, q)

	if ans.Winner == nil {
		return ans, nil
	}
	if err := validate(ctx, q, sp, lines, &ans); err != nil {
		return ans, err
	}
	if ans.Winner == nil {
		return ans, nil
	}
	w := ans.Winner
	if nc, nv := nextCheaper(variants, sp, w.Candidate, all); nv != nil {
		ans.NextCheaper = simulate(ctx, q, nv, nc.Replicas, nc.Router, max(q.ValidateRequests, q.SearchRequests))
	}
	return ans, ctx.Err()
}

// saturationShare is the share of a fleet's capacity past which a load
// saturates it: the capacity is measured on a short run, and so close to
// it the queue grows for the whole of any run.
const saturationShare = 0.95

// maxValidations bounds the long runs validate makes: each is
// ValidateRequests long, a few times a search run.
const maxValidations = 8

// validate runs the cheapest candidate that met the SLOs in its short
// search run again at ValidateRequests. A fleet near saturation can meet
// them over the search's requests and not over the longer run (its queue
// has not yet grown): such a candidate is rejected (Answer.Rejected), and
// the next cheapest is validated in its place — its own line with one
// replica more, or another line's best — up to maxValidations long runs.
// The winner is the first candidate that meets the SLOs in its long run;
// none within the bound leaves Winner nil.
func validate(ctx context.Context, q Question, sp Space, lines []*line, ans *Answer) error {
	type cand struct {
		l *line
		o *Outcome // its search run, or nil for a replica count the search did not run
		n int
	}
	var pool []cand
	for _, l := range lines {
		if l.best != nil {
			pool = append(pool, cand{l, l.best, l.best.Replicas})
		}
	}
	cost := func(c cand) float64 { return c.l.v.costHour * float64(c.n) }
	if q.Objective == ObjectiveEnergy {
		// A replica count the search did not run has no energy yet:
		// after every candidate that has.
		cost = func(c cand) float64 {
			if c.o == nil {
				return math.Inf(1)
			}
			return c.o.EnergyJPerToken
		}
	}
	// One replica is the same deployment behind any router.
	type key struct {
		v      *variant
		n      int
		router string
	}
	keyOf := func(c cand) key {
		if c.n == 1 {
			return key{c.l.v, 1, ""}
		}
		return key{c.l.v, c.n, c.l.router}
	}
	failed := map[key]bool{}
	ans.Winner = nil
	for runs := 0; runs < maxValidations && len(pool) > 0; {
		i := 0
		for j, c := range pool {
			if cost(c) < cost(pool[i])-1e-9 || (math.Abs(cost(c)-cost(pool[i])) <= 1e-9 && c.o != nil && (pool[i].o == nil || q.better(c.o, pool[i].o))) {
				i = j
			}
		}
		c := pool[i]
		if failed[keyOf(c)] {
			// Its twin behind another router failed already.
			pool = append(pool[:i], pool[i+1:]...)
			continue
		}
		n := max(q.ValidateRequests, q.SearchRequests)
		runs++
		v := simulate(ctx, q, c.l.v, c.n, c.l.router, n)
		if err := ctx.Err(); err != nil {
			return err
		}
		if v.Met {
			if q.OnWinnerRecord != nil {
				// The same run again (deterministic), its records seen.
				v = simulateSeen(ctx, q, c.l.v, c.n, c.l.router, n, q.OnWinnerRecord)
			}
			ans.Winner, ans.Validation = c.o, v
			if c.o == nil {
				ans.Winner = v
			}
			return nil
		}
		ans.Rejected = append(ans.Rejected, *v)
		failed[keyOf(c)] = true
		if f := &ans.Families[c.l.v.family]; f.Best != nil && f.Best.Candidate == v.Candidate {
			f.Reason += fmt.Sprintf("; it fails the %d-request validation run (%s)", n, strings.Join(v.Verdicts, "; "))
		}
		if c.n < sp.MaxReplicas {
			pool[i] = cand{c.l, c.l.results[c.n+1], c.n + 1}
		} else {
			pool = append(pool[:i], pool[i+1:]...)
		}
	}
	return nil
}

// cheaper orders outcomes: lower cost, then lower TTFT p95, then fewer GPUs.
func cheaper(a, b *Outcome) bool {
	if a.CostPerHour != b.CostPerHour {
		return a.CostPerHour < b.CostPerHour
	}
	if a.TTFTP95MS != b.TTFTP95MS {
		return a.TTFTP95MS < b.TTFTP95MS
	}
	return a.GPUs < b.GPUs
}

func parallel(workers, n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// capacity is one replica's saturated request throughput: a closed loop of
// as many users as the engine runs at once (at most 256, enough to
// saturate a step's budget).
func capacity(ctx context.Context, c simengine.Config, gen sim.Lengths) float64 {
	users := min(c.MaxNumSeqs, 256)
	var done int64
	var first, last time.Duration
	n := int64(4*users + 200)
	_, err := sim.Run(ctx, sim.Config{Engine: c, Gen: gen, Concurrency: users, Requests: n, TooLongAsErrors: true}, func(r *record.Request) {
		if !r.OK() {
			return
		}
		// Count the middle half: the start (all users' prompts at once)
		// and the drain are not steady state.
		if done++; done == n/4 {
			first = r.Done
		} else if done == 3*n/4 {
			last = r.Done
		}
	})
	if err != nil || last <= first {
		return math.SmallestNonzeroFloat64
	}
	return float64(n/2) / (last - first).Seconds()
}

func simulate(ctx context.Context, q Question, v *variant, replicas int, router string, n int64) *Outcome {
	return simulateSeen(ctx, q, v, replicas, router, n, nil)
}

func simulateSeen(ctx context.Context, q Question, v *variant, replicas int, router string, n int64, seen func(*record.Request)) *Outcome {
	start := time.Now()
	c := v.cfg
	o := &Outcome{Candidate: Candidate{GPU: c.GPU.Name, TP: c.TP, Replicas: replicas, MaxNumSeqs: c.MaxNumSeqs,
		MaxBatchedTokens: c.MaxNumBatchedTokens, Router: router, GPUs: replicas * c.TP, CostPerHour: v.costHour * float64(replicas)}, Requests: n}
	acc := stats.NewAccumulator(stats.Options{OfferedRateRPS: q.RateRPS, Good: q.SLOs.Good})
	classes := newClassAccs(q)
	res, err := sim.RunFleet(ctx, sim.FleetConfig{Config: sim.Config{Engine: c, Gen: q.Gen, Arrivals: q.Arrivals(), Requests: n,
		WarmupRequests: int(n / 10), StreamTokenTimes: true, TooLongAsErrors: true, Class: q.Class}, Count: replicas, Router: router}, func(r *record.Request) {
		acc.Add(r)
		if a := classes[r.Class]; a != nil {
			a.Add(r)
		}
		if seen != nil {
			seen(r)
		}
	})
	sum := acc.Summary()
	o.Summary = sum
	h := q.Headroom.In(domainOf(c, sum, replicas))
	if h.Confidence > 0 {
		o.Headroom = &h
	}
	o.SLOs = q.SLOs.Evaluate(h.apply(sum))
	o.Met = err == nil
	for _, r := range o.SLOs {
		o.Met = o.Met && r.Met
		o.Verdicts = append(o.Verdicts, r.String())
	}
	for _, name := range q.ClassNames {
		co := judgeClass(q, h, name, classes[name].Summary())
		o.Met = o.Met && co.Met
		for _, v := range co.Verdicts {
			o.Verdicts = append(o.Verdicts, name+": "+v)
		}
		o.Classes = append(o.Classes, co)
	}
	if err != nil {
		o.Verdicts = append(o.Verdicts, "simulation failed: "+err.Error())
	}
	if e := res.Engine; e.EnergyJ > 0 && res.Tokens > 0 && res.End > 0 {
		o.EnergyJPerToken = e.EnergyJ / float64(res.Tokens)
		o.AvgPowerWPerGPU = e.EnergyJ / res.End.Seconds() / float64(o.GPUs)
	}
	if res.Tokens > 0 && res.End > 0 {
		o.USDPerMOutputTokens = o.CostPerHour * res.End.Hours() / float64(res.Tokens) * 1e6
	}
	o.EnergyRanges = energyRanges(q, v.cfg, sum, res, *o, replicas)
	o.TTFTP95MS, o.ITLP99MS = sum.TTFT.P95, sum.ITL.P99
	o.ThroughputRPS = sum.RequestThroughputRPS
	if sum.GoodputRPS != nil {
		o.GoodputRPS = *sum.GoodputRPS
	}
	// Saturated: the load is at or past what the replicas carry at most
	// (their measured capacity); a short run's own throughput cannot tell,
	// as the drain after the last arrival lowers it.
	o.Saturated = q.RateRPS >= saturationShare*v.capRPS*q.Headroom.In(saturatedIn(c)).capacityFactor()*float64(replicas)
	o.Elapsed = time.Since(start)
	return o
}

// pareto keeps the outcomes no other beats on cost, TTFT p95 and goodput
// at once (TTFT to the millisecond, goodput to 0.01 req/s: finer is
// noise), cheapest first; of candidates that ran alike (a limit that never
// binds, a router with one replica) the first in search order.
func pareto(all []*Outcome) []Outcome {
	type figures struct{ cost, ttft, goodput float64 }
	key := func(o *Outcome) figures {
		return figures{math.Round(o.CostPerHour * 100), math.Round(o.TTFTP95MS), math.Round(o.GoodputRPS * 100)}
	}
	var out []Outcome
	seen := map[figures]bool{}
	for _, a := range all {
		ka := key(a)
		if seen[ka] {
			continue
		}
		seen[ka] = true
		dominated := false
		for _, b := range all {
			kb := key(b)
			if kb.cost <= ka.cost && kb.ttft <= ka.ttft && kb.goodput >= ka.goodput && kb != ka {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, *a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return cheaper(&out[i], &out[j]) })
	return out
}

// explain fills each family's verdict: its cheapest success, or why none.
func explain(ans *Answer, variants []*variant, lines []*line, q Question) {
	for fi := range ans.Families {
		f := &ans.Families[fi]
		var vs []*variant
		for _, v := range variants {
			if v.family == fi {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			continue // memory or invalid, said when it was pruned
		}
		for _, l := range lines {
			if l.v.family == fi && l.best != nil && (f.Best == nil || cheaper(l.best, f.Best)) {
				f.Best = l.best
			}
		}
		if f.Best != nil {
			f.Verdict, f.Reason = "ok", "cheapest meeting the SLOs: "+f.Best.Candidate.String()
			continue
		}
		bestCap := 0.0
		for _, v := range vs {
			bestCap = max(bestCap, v.capRPS)
		}
		maxR := q.Space.MaxReplicas
		// The line that came closest: at the most replicas searched.
		var closest *Outcome
		for _, l := range lines {
			if o := l.results[maxR]; l.v.family == fi && o != nil && (closest == nil || o.TTFTP95MS < closest.TTFTP95MS) {
				closest = o
			}
		}
		if closest == nil || closest.Saturated {
			f.Verdict = "saturation"
			f.Reason = fmt.Sprintf("one replica carries at most %.2f req/s: %d replicas carry %.1f, and %.4g req/s is past %.0f%% of that (where queues grow without bound)",
				bestCap, maxR, bestCap*float64(maxR), q.RateRPS, saturationShare*100)
			continue
		}
		var failed []string
		for _, r := range closest.SLOs {
			if !r.Met {
				failed = append(failed, r.String())
			}
		}
		for _, c := range closest.Classes {
			for _, r := range c.SLOs {
				if !r.Met {
					failed = append(failed, "class "+c.Name+": "+r.String())
				}
			}
		}
		f.Verdict = "slo"
		f.Reason = fmt.Sprintf("even at %d replicas (%s): %s", maxR, closest.Candidate.String(), strings.Join(failed, "; "))
	}
}

// nextCheaper is the dearest deployment in the space that costs less than
// the winner (ties: the one the search saw with the lowest TTFT p95, then
// the first in search order): the one that would have won had it met.
func nextCheaper(vs []*variant, sp Space, w Candidate, all []*Outcome) (Candidate, *variant) {
	var best Candidate
	var bv *variant
	bestTTFT := math.Inf(1)
	searched := func(c Candidate) float64 {
		for _, o := range all {
			if o.Candidate == c {
				return o.TTFTP95MS
			}
		}
		return math.Inf(1)
	}
	for _, v := range vs {
		for _, r := range sp.Routers {
			for n := 1; n <= sp.MaxReplicas; n++ {
				cost := v.costHour * float64(n)
				if cost >= w.CostPerHour-1e-9 {
					break
				}
				c := Candidate{GPU: v.cfg.GPU.Name, TP: v.cfg.TP, Replicas: n, MaxNumSeqs: v.cfg.MaxNumSeqs,
					MaxBatchedTokens: v.cfg.MaxNumBatchedTokens, Router: r, GPUs: n * v.cfg.TP, CostPerHour: cost}
				t := searched(c)
				if bv == nil || cost > best.CostPerHour+1e-9 || (math.Abs(cost-best.CostPerHour) <= 1e-9 && t < bestTTFT) {
					best, bv, bestTTFT = c, v, t
				}
			}
		}
	}
	return best, bv
}

// classObjectives are a class's objectives: the run's and its own.
func classObjectives(q Question, name string) slo.Set {
	return append(append(slo.Set{}, q.SLOs...), q.ClassSLOs[name]...)
}

// newClassAccs sums a run's records per class of the mix (nil: no mix).
func newClassAccs(q Question) map[string]*stats.Accumulator {
	if len(q.ClassNames) == 0 {
		return nil
	}
	out := map[string]*stats.Accumulator{}
	for _, name := range q.ClassNames {
		opts := stats.Options{}
		if objs := classObjectives(q, name); len(objs) > 0 {
			opts.Good = objs.Good
		}
		out[name] = stats.NewAccumulator(opts)
	}
	return out
}

// judgeClass judges one class's figures, with the same headroom as the
// overall ones (h: the question's, in the run's domain).
func judgeClass(q Question, h Headroom, name string, sum stats.Summary) ClassOutcome {
	co := ClassOutcome{Name: name, Met: true, TTFTP95MS: sum.TTFT.P95}
	if sum.GoodputRPS != nil {
		co.GoodputRPS = *sum.GoodputRPS
	}
	co.SLOs = classObjectives(q, name).Evaluate(h.apply(sum))
	for _, r := range co.SLOs {
		co.Met = co.Met && r.Met
		co.Verdicts = append(co.Verdicts, r.String())
	}
	return co
}

// classesJudged reports whether some class of a mix has its own objectives.
func (q Question) classesJudged() bool {
	for _, name := range q.ClassNames {
		if len(q.ClassSLOs[name]) > 0 {
			return true
		}
	}
	return false
}

// energyRanges are an outcome's energy ranges: the power model's held-out
// errors for energy per token, the output throughput's held-out range for
// $ per token (none where the deployment kept up with its open-loop load:
// its throughput is the load's), both for power, capped at the TDP.
func energyRanges(q Question, cfg simengine.Config, sum stats.Summary, res sim.FleetResult, o Outcome, replicas int) *energy.Ranges {
	if o.EnergyJPerToken <= 0 || o.GPUs <= 0 {
		return nil
	}
	f := energy.New(energy.SourceModel, o.GPUs, res.End.Seconds(), res.Engine.EnergyJ, res.Tokens, res.Completed, o.CostPerHour/float64(o.GPUs))
	r, ok := simengine.RangeIn("output_token_throughput_tps", simengine.HeldOutShare, domainOf(cfg, sum, replicas))
	keptUp := q.RateRPS > 0 && sum.RequestThroughputRPS >= 0.9*q.RateRPS
	f.WithRanges(r.Low, r.High, ok && !keptUp, cfg.GPU.Name, cfg.GPU.TDPWatts)
	return f.Ranges
}
