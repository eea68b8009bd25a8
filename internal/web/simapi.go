package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/lab"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
)

// Bounds on what one simulator call may ask, so every answer comes back in
// well under half a second on a busy 2-core machine.
const (
	maxConcurrency = 1024
	maxRateRPS     = 2000
	maxRequests    = 2000
	maxTP          = 8
	maxReplicas    = 16
	maxLifecycle   = 900 // requests returned for the lifecycle view (the page runs as many: assets/lifecycle.js)
	simTimeout     = 5 * time.Second
	rateRunFor     = 20 * time.Second // an open-loop run's arrivals span about this long (within the request bound)
)

// SimParams is the simulator page's controls (POST /api/sim, /api/sweep).
type SimParams struct {
	LoadKind            string  `json:"load_kind"` // concurrency or rate
	Load                float64 `json:"load"`      // users in flight, or requests/s
	InputTokens         string  `json:"input_tokens"`
	OutputTokens        string  `json:"output_tokens"`
	GPU                 string  `json:"gpu"`
	Model               string  `json:"model"`
	TP                  int     `json:"tp"`
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	StepTimeScale       float64 `json:"step_time_scale"`
	// Replicas > 1 puts that many copies of the engine behind Router (one
	// of sim.Routers); the load is the fleet's.
	Replicas  int    `json:"replicas"`
	Router    string `json:"router"`
	SLO       string `json:"slo"`
	Requests  int    `json:"requests"` // 0: sized from the load
	Seed      uint64 `json:"seed"`
	Lifecycle bool   `json:"lifecycle"` // return per-request phase times
	// Trace replays the trace knee ui was started with (--trace) at Load
	// req/s (its gaps scaled to that mean rate) instead of the token
	// lengths and Poisson arrivals.
	Trace bool `json:"trace"`
}

// simSetup is a validated SimParams, ready to run.
type simSetup struct {
	p        SimParams
	engine   simengine.Config
	lengths  *lab.Lengths
	slos     slo.Set
	requests int
	trace    *workload.Trace // nil: lengths and arrivals from the parameters
}

// defaultSLO is the page's objective when none is given: the lab's TTFT
// objective and an inter-token pace a reader keeps up with.
const defaultSLO = "p95(ttft)<2s, p95(tpot)<100ms"

func (p *SimParams) setup() (*simSetup, error) {
	if p.LoadKind == "" {
		p.LoadKind = "concurrency"
	}
	switch p.LoadKind {
	case "concurrency":
		if p.Load < 1 || p.Load > maxConcurrency || p.Load != math.Trunc(p.Load) {
			return nil, badf("load %v: want a whole number of concurrent users from 1 to %d", p.Load, maxConcurrency)
		}
	case "rate":
		if !(p.Load > 0 && p.Load <= maxRateRPS) {
			return nil, badf("load %v: want a rate above 0 and at most %d requests/s", p.Load, maxRateRPS)
		}
	default:
		return nil, badf("load_kind %q: want concurrency or rate", p.LoadKind)
	}
	if p.InputTokens == "" {
		p.InputTokens = "512"
	}
	if p.OutputTokens == "" {
		p.OutputTokens = "128"
	}
	if p.Seed == 0 {
		p.Seed = lab.Seed
	}
	l, err := lab.NewLengths(p.InputTokens, p.OutputTokens, p.Seed)
	if err != nil {
		return nil, badf("token lengths: %v", err)
	}
	cat := simengine.NewCatalog()
	if p.GPU == "" {
		p.GPU = lab.GPU
	}
	if p.Model == "" {
		p.Model = lab.Model
	}
	g, err := cat.LookupGPU(p.GPU)
	if err != nil {
		return nil, badf("gpu: %v", err)
	}
	m, err := cat.LookupModel(p.Model)
	if err != nil {
		return nil, badf("model: %v", err)
	}
	if p.TP == 0 {
		p.TP = 1
	}
	if p.TP < 1 || p.TP > maxTP {
		return nil, badf("tp %d: want 1 to %d GPUs", p.TP, maxTP)
	}
	ecfg := simengine.DefaultConfig(g, m, p.TP)
	if p.MaxNumSeqs < 0 || p.MaxNumSeqs > 4096 {
		return nil, badf("max_num_seqs %d: want 1 to 4096 (0: vLLM's default)", p.MaxNumSeqs)
	}
	if p.MaxNumBatchedTokens < 0 || p.MaxNumBatchedTokens > 1<<20 || (p.MaxNumBatchedTokens > 0 && p.MaxNumBatchedTokens < 16) {
		return nil, badf("max_num_batched_tokens %d: want 16 to %d (0: vLLM's default)", p.MaxNumBatchedTokens, 1<<20)
	}
	if p.MaxNumSeqs > 0 {
		ecfg.MaxNumSeqs = p.MaxNumSeqs
	}
	if p.MaxNumBatchedTokens > 0 {
		ecfg.MaxNumBatchedTokens = p.MaxNumBatchedTokens
	}
	if p.StepTimeScale != 0 && !(p.StepTimeScale >= 0.1 && p.StepTimeScale <= 10) {
		return nil, badf("step_time_scale %v: want 0.1 to 10 (1: the cost model as is)", p.StepTimeScale)
	}
	ecfg.StepTimeScale = p.StepTimeScale
	if p.Replicas == 0 {
		p.Replicas = 1
	}
	if p.Replicas < 1 || p.Replicas > maxReplicas {
		return nil, badf("replicas %d: want 1 to %d engines behind the router", p.Replicas, maxReplicas)
	}
	if p.Router == "" {
		p.Router = sim.RoundRobin
	}
	if !slices.Contains(sim.Routers, p.Router) {
		return nil, badf("router %q: want one of %s", p.Router, strings.Join(sim.Routers, ", "))
	}
	if strings.TrimSpace(p.SLO) == "" {
		p.SLO = defaultSLO
	}
	set, err := slo.ParseAll([]string{p.SLO})
	if err != nil {
		return nil, badf("slo: %v", err)
	}
	if p.Requests < 0 || p.Requests > maxRequests {
		return nil, badf("requests %d: want 1 to %d (0: sized from the load)", p.Requests, maxRequests)
	}
	return &simSetup{p: *p, engine: ecfg, lengths: l, slos: set, requests: runSize(p)}, nil
}

// runSize is how many requests a run of p simulates: p.Requests, or
// enough for several turns of every user (closed loop) or a run long
// enough for a queue to show (open loop), bounded.
func runSize(p *SimParams) int {
	if p.Requests != 0 {
		return p.Requests
	}
	switch p.LoadKind {
	case "concurrency":
		n, _ := closedLoopRun(int(p.Load))
		return n
	case "rate":
		return min(maxRequests, max(300, int(p.Load*rateRunFor.Seconds())))
	}
	return 300
}

// usersStartOver spreads a closed loop's users' first requests over the
// run's first seconds. Users that all start in the same millisecond with
// the same lengths stay in lockstep for ever (every TTFT equal, p50 = p95
// = p99); real clients start apart and drift out of step within a few
// requests, so each request meets a different batch.
const usersStartOver = 2 * time.Second

// closedLoopRun sizes a closed-loop run of c users to its steady state: the
// warm-up is every user's first request (their start-up burst), then up to
// eight more turns of every user are measured (at least 300 requests): at 256
// users two turns read 72 req/s where 10,000 requests read 63.7, eight read
// 65.6. A fixed request count cut short at high concurrency measured the
// start-up queue and the drain: throughput past saturation seemed to fall
// (62.9 → 42.4 req/s at 1,024 users), which a real engine's does not.
func closedLoopRun(c int) (requests, warmup int) {
	// At most maxClosedLoop requests in all, so an answer stays quick at
	// 1,024 users (two measured turns there, eight up to 341 users).
	turns := max(2, min(8, maxClosedLoop/max(c, 1)-1))
	return c + max(300, turns*c), c
}

// maxClosedLoop bounds a sized closed-loop run.
const maxClosedLoop = 3072

// simOutcome is one simulated run, summarised for the page.
type simOutcome struct {
	Params    SimParams    `json:"params"`
	Requests  int          `json:"requests"`
	Summary   simFigures   `json:"figures"`
	SLOs      []sloCheck   `json:"slos"`
	Pressure  pressure     `json:"pressure"`
	Engine    engineFacts  `json:"engine"`
	Lifecycle []phaseTimes `json:"lifecycle,omitempty"`
	// Batch is the engine's running batch and waiting queue through the
	// run, with the lifecycle (one engine only: a fleet's replicas each
	// have their own).
	Batch *batchTrace `json:"batch,omitempty"`
	// Steps are the engine's iterations one at a time (one engine only).
	Steps      *engineSteps `json:"engine_steps,omitempty"`
	SimulatedS float64      `json:"simulated_s"` // virtual time the run covered
	ComputeMS  float64      `json:"compute_ms"`  // wall time the server spent
	Warnings   []string     `json:"warnings,omitempty"`
	// Ranges are the headline figures with the range knee's held-out
	// errors give each (docs/validation.md).
	Ranges *report.PredictionRanges `json:"prediction_ranges,omitempty"`
	// Energy is what the GPUs spent over the whole run (warm-up and drain
	// included, as knee sim counts it) from the GPU preset's power model;
	// nil for a GPU without one.
	Energy *energy.Figures `json:"energy,omitempty"`
	// sum is the run's summary, throughput at its steady state: a sweep
	// step is this (sweepRunner), so the page's point lies on its curve.
	sum stats.Summary
}

type simFigures struct {
	// QueueMS is the wait before the engine admits a request: client wait
	// plus the engine's waiting queue, the wait the pressure badge counts.
	// The front end before it (HTTP, chat template, tokenization) is a
	// phase of its own, FrontEndMS, so "queue" means one thing on a page.
	QueueMS       stats.Dist `json:"queue_ms"`
	FrontEndMS    stats.Dist `json:"front_end_ms"`
	TTFTMS        stats.Dist `json:"ttft_ms"`
	TTFTSchedMS   stats.Dist `json:"ttft_sched_ms"`
	TPOTMS        stats.Dist `json:"tpot_ms"`
	E2EMS         stats.Dist `json:"e2e_ms"`
	PrefillMS     stats.Dist `json:"prefill_ms"`
	DecodeMS      stats.Dist `json:"decode_ms"`
	DecodeRateTPS float64    `json:"decode_rate_tps"` // 1000 / mean TPOT, per request
	ThroughputRPS float64    `json:"throughput_rps"`
	OutputTPS     float64    `json:"output_tps"`
	InputTPS      float64    `json:"input_tps"`
	KVUsageMean   float64    `json:"kv_usage_mean"` // 0..1, time-weighted over the measured steps
	KVUsagePeak   float64    `json:"kv_usage_peak"`
	Preemptions   int64      `json:"preemptions"`
	Errors        int        `json:"errors"`
}

type sloCheck struct {
	Objective string   `json:"objective"`
	Metric    string   `json:"metric"`    // ttft, tpot, ... (empty for rates and throughput)
	Stat      string   `json:"stat"`      // p95, mean, ...
	Threshold float64  `json:"threshold"` // in the summary's unit (ms for latency)
	Value     *float64 `json:"value"`     // nil: no data
	Met       bool     `json:"met"`
	Text      string   `json:"text"`
}

type engineFacts struct {
	Name                string `json:"name"`
	MaxNumSeqs          int    `json:"max_num_seqs"`
	MaxNumBatchedTokens int    `json:"max_num_batched_tokens"`
	KVCapacityTokens    int    `json:"kv_capacity_tokens"`
	MaxModelLen         int    `json:"max_model_len"`
}

// phaseTimes is one request's path through the six phases, in ms from the
// run start: arrival (scheduled), sent, then the server's queue, prefill and
// decode, first token and done.
type phaseTimes struct {
	ID         int64   `json:"id"`             // a sweep's: its number within its step
	Step       *int    `json:"step,omitempty"` // a stored sweep's step, in load order
	ArrivalMS  float64 `json:"arrival_ms"`
	SentMS     float64 `json:"sent_ms"`
	QueueMS    float64 `json:"queue_ms"`     // in the server before prefill: front end + engine queue (client wait is sent − arrival)
	FrontEndMS float64 `json:"front_end_ms"` // of QueueMS, the front end (HTTP, template, tokenization)
	PrefillMS  float64 `json:"prefill_ms"`
	// DecodeMS is the engine's decode: the request leaves the running
	// batch at sent + queue + prefill + decode, a little before the client
	// reads its last token (done).
	DecodeMS   float64 `json:"decode_ms"`
	FirstMS    float64 `json:"first_token_ms"`
	DoneMS     float64 `json:"done_ms"`
	InTokens   int     `json:"input_tokens"`
	OutTokens  int     `json:"output_tokens"`
	Error      string  `json:"error,omitempty"`
	WarmupFlag bool    `json:"warmup,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// serverWait is a request's time in the server before its prefill: the
// front end (HTTP, template, tokenization) and the engine's waiting queue.
// The engine reports only the latter, as vLLM does; the lifecycle shows
// both as the queue phase.
func serverWait(r *record.Request) time.Duration {
	if r.ServerPhases == nil {
		return 0
	}
	if !r.HasFirstToken() {
		return r.ServerPhases.Queue
	}
	return max(r.FirstToken-r.Sent-r.ServerPhases.Prefill, r.ServerPhases.Queue)
}

// engineName names the deployment: the model on its GPUs, and the fleet.
func (su *simSetup) engineName() string {
	name := su.engine.Model.Name + " on " + su.engine.GPU.Name
	if su.engine.TP > 1 {
		name += fmt.Sprintf(" ×%d (TP)", su.engine.TP)
	}
	if su.p.Replicas > 1 {
		name = fmt.Sprintf("%d replicas of %s behind %s", su.p.Replicas, name, su.p.Router)
	}
	return name
}

// collect runs cfg on one engine, or on the setup's fleet of replicas
// behind its router, and returns every record.
func (su *simSetup) collect(ctx context.Context, cfg sim.Config) ([]record.Request, sim.Result, error) {
	if su.p.Replicas <= 1 {
		return sim.Collect(ctx, cfg)
	}
	var recs []record.Request
	res, err := sim.RunFleet(ctx, sim.FleetConfig{Config: cfg, Count: su.p.Replicas, Router: su.p.Router}, func(r *record.Request) {
		recs = append(recs, r.Clone())
	})
	return recs, res.Result, err
}

// run simulates the setup in virtual time on knee's engine.
func (su *simSetup) run(ctx context.Context) (*simOutcome, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, simTimeout)
	defer cancel()
	p := su.p
	cfg := sim.Config{Engine: su.engine, Gen: su.lengths, Requests: int64(su.requests), TooLongAsErrors: true}
	warm := su.requests / 10
	if p.LoadKind == "concurrency" {
		cfg.Concurrency = int(p.Load)
		cfg.Ramp = usersStartOver
		if n, w := closedLoopRun(int(p.Load)); n == su.requests {
			warm = w
		} else {
			warm = max(warm, min(int(p.Load), su.requests/3))
		}
	} else {
		a, err := workload.NewArrivals("poisson", p.Load, 1, p.Seed)
		if err != nil {
			return nil, badf("rate: %v", err)
		}
		cfg.Arrivals = a
	}
	if su.trace != nil {
		stream, err := su.trace.Stream(false)
		if err != nil {
			return nil, err
		}
		defer stream.Close()
		cfg.Gen, cfg.Arrivals = stream, stream
		warm = su.requests / 10
	}
	cfg.WarmupRequests = warm
	// KV usage and the waiting queue after every step, time-weighted.
	var kv kvTrack
	cfg.OnStep = kv.step
	recs, res, err := su.collect(ctx, cfg)
	if err != nil {
		return nil, simError(err)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Sent < recs[j].Sent })
	refused := 0
	for i := range recs {
		if recs[i].Error == record.ErrHTTP4xx {
			refused++
		}
	}
	if refused == len(recs) && refused > 0 {
		return nil, badf("every request was refused: %s (the model's context is %d tokens)", recs[0].ErrorMessage, res.Engine.MaxModelLen)
	}
	var firstMeasured time.Duration = -1
	for i := range recs {
		if !recs[i].Warmup {
			firstMeasured = recs[i].Sent
			break
		}
	}
	opts := stats.Options{Good: su.slos.Good}
	if p.LoadKind == "rate" {
		opts.OfferedRateRPS = p.Load
	}
	sum := stats.Summarize(recs, opts)
	if p.LoadKind == "concurrency" && su.trace == nil {
		win := steadyWindow{users: int(p.Load)}
		for i := range recs {
			win.add(&recs[i])
		}
		applySteady(&sum, &win)
	}
	out := &simOutcome{Params: p, Requests: len(recs), SimulatedS: res.End.Seconds(), sum: sum,
		Engine: engineFacts{Name: su.engineName(), MaxNumSeqs: res.Engine.MaxNumSeqs,
			MaxNumBatchedTokens: res.Engine.MaxNumBatchedTokens, KVCapacityTokens: res.Engine.KVCapacityTokens, MaxModelLen: res.Engine.MaxModelLen}}
	f := &out.Summary
	f.TTFTMS, f.TTFTSchedMS, f.TPOTMS, f.E2EMS = sum.TTFT, sum.TTFTSched, sum.TPOT, sum.E2E
	f.ThroughputRPS, f.OutputTPS, f.InputTPS = sum.RequestThroughputRPS, sum.OutputTokenThroughputTPS, sum.InputTokenThroughputTPS
	f.Errors = sum.Errors
	f.Preemptions = res.Engine.Preemptions
	out.Energy = energy.New(energy.SourceModel, res.Engine.GPUs, res.End.Seconds(), res.Engine.EnergyJ, res.Tokens, res.Completed, 0)
	// The range the CLI prints for the same run: its GPU, model and batch
	// decide it, widened (and saying so) where no source was validated.
	domain := simengine.DomainOf(su.engine.GPU.Name, su.engine.Model.Name, sum.RequestThroughputRPS, sum.E2E.Mean, 1)
	out.Ranges = report.PredictionsFor(&sum, func(field string) (float64, float64, bool) {
		r, ok := simengine.RangeIn(field, simengine.HeldOutShare, domain)
		return r.Low, r.High, ok
	}, simengine.HeldOutShare, simengine.RangeBasisIn(domain))
	if sum.TPOT.Count > 0 && sum.TPOT.Mean > 0 {
		f.DecodeRateTPS = 1000 / sum.TPOT.Mean
	}
	var queue, front, prefill, decode []float64
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !r.OK() || r.ServerPhases == nil {
			continue
		}
		queue = append(queue, ms(r.Lag()+r.ServerPhases.Queue))
		front = append(front, ms(serverWait(r)-r.ServerPhases.Queue))
		prefill = append(prefill, ms(r.ServerPhases.Prefill))
		decode = append(decode, ms(r.ServerPhases.Decode))
	}
	f.QueueMS, f.FrontEndMS, f.PrefillMS, f.DecodeMS = distOf(queue), distOf(front), distOf(prefill), distOf(decode)
	f.KVUsageMean, f.KVUsagePeak = kv.mean(int64(max(firstMeasured, 0))), kv.peak
	for _, r := range su.slos.Evaluate(sum) {
		c := sloCheck{Objective: r.Objective.String(), Met: r.Met, Text: r.String(), Threshold: r.Objective.Threshold}
		if r.Objective.Kind == slo.Latency {
			c.Metric, c.Stat = r.Objective.Metric, r.Objective.Stat
		}
		if !r.NoData {
			v := r.Value
			c.Value = &v
		}
		out.SLOs = append(out.SLOs, c)
	}
	out.Pressure = judgePressure(recs, su.slos)
	if p.Lifecycle {
		out.Lifecycle = lifecycleOf(recs, nil)
		if p.Replicas <= 1 {
			out.Batch = kv.batch(out.Lifecycle, res.Engine.MaxNumSeqs)
			out.Steps = kv.steps(out.Engine)
		}
	}
	out.Warnings = sum.Warnings
	if refused > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d of %d requests were longer than the model's context (%d tokens) and refused", refused, len(recs), res.Engine.MaxModelLen))
	}
	out.ComputeMS = float64(time.Since(start).Microseconds()) / 1000
	return out, nil
}

func distOf(v []float64) stats.Dist {
	if len(v) == 0 {
		return stats.Dist{}
	}
	sort.Float64s(v)
	// Nearest rank: the smallest value with at least p of the values at or below it.
	q := func(p float64) float64 { return v[max(0, min(len(v)-1, int(math.Ceil(p*float64(len(v))))-1))] }
	var s float64
	for _, x := range v {
		s += x
	}
	return stats.Dist{Count: len(v), Mean: s / float64(len(v)), P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99), P999: q(0.999), Max: v[len(v)-1]}
}

// kvTrack integrates KV usage over virtual time from the engine's state
// after each step.
type kvTrack struct {
	peak    float64
	samples []kvSample
}

type kvSample struct {
	ns    int64
	usage float64
	// The step that ended at ns: when it began, the requests it ran and
	// those left in the engine's waiting queue.
	startNS        int64
	batch, waiting int
	// Of the step's computed tokens, the prompt's (prefill chunks and
	// recomputation); the engine's preemptions so far.
	newTokens, prefillTokens int
	preemptions              int64
}

func (k *kvTrack) step(st simengine.EngineStats) {
	k.samples = append(k.samples, kvSample{st.Now, st.KVUsage, st.Now - st.LastStepNS, st.LastStepBatch, st.Waiting,
		st.LastStepNewTokens, st.LastStepPrefillTokens, st.Preemptions})
	k.peak = max(k.peak, st.KVUsage)
}

// mean is the time-weighted KV usage from fromNS to the last step.
func (k *kvTrack) mean(fromNS int64) float64 {
	var area, span float64
	for i := 1; i < len(k.samples); i++ {
		a, b := k.samples[i-1], k.samples[i]
		if b.ns <= fromNS {
			continue
		}
		dt := float64(b.ns - max(a.ns, fromNS))
		area += a.usage * dt
		span += dt
	}
	if span == 0 {
		return 0
	}
	return area / span
}

// maxBatchChanges bounds the batch trace an answer carries.
const maxBatchChanges = 8000

// batchTrace is the engine's own running batch and waiting queue over the
// time the lifecycle covers: from each of its steps, the requests the step
// ran (at most max_num_seqs) and those left waiting as it ended. The counts
// hold from AtMS[i] until the next change; between steps the batch is 0.
type batchTrace struct {
	MaxNumSeqs int       `json:"max_num_seqs"`
	AtMS       []float64 `json:"at_ms"`
	Running    []int     `json:"running"`
	Waiting    []int     `json:"waiting"`
	// Thinned is true when the changes outnumbered maxBatchChanges and
	// only every few of them were kept.
	Thinned bool `json:"thinned,omitempty"`
}

// batch is the trace of the engine's steps within the span of lc (the
// requests the page draws).
func (k *kvTrack) batch(lc []phaseTimes, maxNumSeqs int) *batchTrace {
	if len(lc) == 0 {
		return nil
	}
	from, to := lc[0].ArrivalMS, lc[0].DoneMS
	for _, r := range lc {
		from, to = min(from, r.ArrivalMS), max(to, r.DoneMS)
	}
	b := &batchTrace{MaxNumSeqs: maxNumSeqs, AtMS: []float64{from}, Running: []int{0}, Waiting: []int{0}}
	put := func(atNS int64, running, waiting int) {
		at := float64(atNS) / 1e6
		if at > to {
			return
		}
		n := len(b.AtMS) - 1
		if at <= from {
			b.Running[0], b.Waiting[0] = running, waiting
			return
		}
		if at == b.AtMS[n] {
			b.Running[n], b.Waiting[n] = running, waiting
		} else if running != b.Running[n] || waiting != b.Waiting[n] {
			b.AtMS, b.Running, b.Waiting = append(b.AtMS, at), append(b.Running, running), append(b.Waiting, waiting)
		}
	}
	for _, s := range k.samples {
		put(s.startNS, s.batch, s.waiting)
		put(s.ns, 0, s.waiting) // idle until the next step starts
	}
	if n := len(b.AtMS); n > maxBatchChanges {
		every := (n + maxBatchChanges - 1) / maxBatchChanges
		var at []float64
		var run, wt []int
		for i := 0; i < n; i += every {
			at, run, wt = append(at, b.AtMS[i]), append(run, b.Running[i]), append(wt, b.Waiting[i])
		}
		b.AtMS, b.Running, b.Waiting, b.Thinned = at, run, wt, true
	}
	return b
}

// maxEngineSteps bounds the engine steps an answer carries for the
// one-step-at-a-time view.
const maxEngineSteps = 400

// engineSteps are a run's engine iterations, one at a time, as the engine
// ran them: in each, the requests that made one decode token, those whose
// prompt (or a chunk of it) was computed, the prompt tokens, the requests
// left waiting, those preempted (their KV freed, to be recomputed) and the
// KV cache in use. From the run's first step (the batch filling), or, when
// the run preempted only later, from a little before its first preemption.
type engineSteps struct {
	MaxNumSeqs          int       `json:"max_num_seqs"`
	MaxNumBatchedTokens int       `json:"max_num_batched_tokens"`
	KVCapacityTokens    int       `json:"kv_capacity_tokens"`
	First               int       `json:"first"` // the run's step number of the first one here (0-based)
	Total               int       `json:"total"` // steps in the whole run
	StartMS             []float64 `json:"start_ms"`
	DurMS               []float64 `json:"dur_ms"`
	Decode              []int     `json:"decode"`
	Prefill             []int     `json:"prefill"`
	PrefillTokens       []int     `json:"prefill_tokens"`
	Waiting             []int     `json:"waiting"`
	Preempted           []int     `json:"preempted"`
	KVUsage             []float64 `json:"kv_usage"`
}

// steps is the run's engine steps for the step view (nil: none ran).
func (k *kvTrack) steps(e engineFacts) *engineSteps {
	n := len(k.samples)
	if n == 0 {
		return nil
	}
	from := 0
	for i := 1; i < n; i++ {
		if k.samples[i].preemptions > k.samples[i-1].preemptions {
			if i >= maxEngineSteps {
				from = i - maxEngineSteps/4
			}
			break
		}
	}
	to := min(n, from+maxEngineSteps)
	out := &engineSteps{MaxNumSeqs: e.MaxNumSeqs, MaxNumBatchedTokens: e.MaxNumBatchedTokens, KVCapacityTokens: e.KVCapacityTokens, First: from, Total: n}
	for i := from; i < to; i++ {
		s := k.samples[i]
		// A decoding request computes one token a step; the rest of the
		// step's tokens are prompt tokens of the requests still in prefill.
		decode := max(0, min(s.batch, s.newTokens-s.prefillTokens))
		var before int64
		if i > 0 {
			before = k.samples[i-1].preemptions
		}
		out.StartMS = append(out.StartMS, float64(s.startNS)/1e6)
		out.DurMS = append(out.DurMS, float64(s.ns-s.startNS)/1e6)
		out.Decode = append(out.Decode, decode)
		out.Prefill = append(out.Prefill, s.batch-decode)
		out.PrefillTokens = append(out.PrefillTokens, s.prefillTokens)
		out.Waiting = append(out.Waiting, s.waiting)
		out.Preempted = append(out.Preempted, int(s.preemptions-before))
		out.KVUsage = append(out.KVUsage, s.usage)
	}
	return out
}

// lifecycleOf is recs' phase times; steps, when not nil, is each record's
// sweep step (-1 outside sweeps).
func lifecycleOf(recs []record.Request, steps []int) []phaseTimes {
	out := make([]phaseTimes, 0, min(len(recs), maxLifecycle))
	// The requests after warm-up first: they are the steady state.
	skip := 0
	for skip < len(recs) && recs[skip].Warmup && len(recs)-skip > maxLifecycle {
		skip++
	}
	for i := skip; i < len(recs) && len(out) < maxLifecycle; i++ {
		r := &recs[i]
		pt := phaseTimes{ID: r.ID, ArrivalMS: ms(r.Scheduled), SentMS: ms(r.Sent), FirstMS: ms(r.FirstToken), DoneMS: ms(r.Done),
			InTokens: r.InputTokens, OutTokens: r.OutputTokens, Error: string(r.Error), WarmupFlag: r.Warmup}
		if steps != nil && steps[i] >= 0 {
			pt.Step = &steps[i]
		}
		if r.ServerPhases != nil {
			pt.QueueMS, pt.PrefillMS, pt.DecodeMS = ms(serverWait(r)), ms(r.ServerPhases.Prefill), ms(r.ServerPhases.Decode)
			pt.FrontEndMS = ms(serverWait(r) - r.ServerPhases.Queue)
		}
		if !r.OK() {
			pt.FirstMS, pt.DoneMS = 0, ms(r.StreamEnd)
		}
		out = append(out, pt)
	}
	return out
}

func (s *Server) apiSim(w http.ResponseWriter, r *http.Request) {
	var p SimParams
	if err := decodeBody(r, &p); err != nil {
		reply(w, nil, err)
		return
	}
	su, err := p.setup()
	if err == nil && p.Trace {
		err = s.withTrace(su)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	out, err := su.run(r.Context())
	reply(w, out, err)
}

// withTrace makes the setup replay the server's trace at its load (a rate):
// as many of the trace's requests as a run may have, from its start.
func (s *Server) withTrace(su *simSetup) error {
	if s.cfg.Trace == nil {
		return badf("trace: knee ui was started without --trace FILE, so there is no trace to replay")
	}
	if su.p.LoadKind != "rate" {
		return badf("trace: a trace brings its own arrivals; want load_kind rate (the load is the mean rate it is replayed at)")
	}
	su.trace = s.cfg.Trace.AtRate(su.p.Load)
	su.requests = min(su.requests, su.trace.Info().Kept)
	return nil
}

type presetList struct {
	GPUs       []string       `json:"gpus"`
	Models     []string       `json:"models"`
	DefaultGPU string         `json:"default_gpu"`
	DefaultMdl string         `json:"default_model"`
	DefaultSLO string         `json:"default_slo"`
	BenchURL   string         `json:"bench_url,omitempty"`
	Scenarios  []scenarioName `json:"lab_scenarios"`
	Routers    []string       `json:"routers"` // fleet router policies (sim.Routers)
}

type scenarioName struct {
	Name  string `json:"name"`
	Title string `json:"title"`
}

func (s *Server) apiPresets(w http.ResponseWriter, r *http.Request) {
	cat := simengine.NewCatalog()
	var pl presetList
	for _, g := range cat.GPUs() {
		pl.GPUs = append(pl.GPUs, g.Name)
	}
	for _, m := range cat.Models() {
		pl.Models = append(pl.Models, m.Name)
	}
	g, _ := cat.LookupGPU(lab.GPU)
	m, _ := cat.LookupModel(lab.Model)
	for _, sc := range lab.Scenarios {
		pl.Scenarios = append(pl.Scenarios, scenarioName{sc.Name, sc.Title})
	}
	pl.DefaultGPU, pl.DefaultMdl, pl.DefaultSLO, pl.BenchURL = g.Name, m.Name, defaultSLO, s.cfg.BenchURL
	pl.Routers = sim.Routers
	reply(w, pl, nil)
}

// simError classifies an engine error: settings the engine cannot run (a
// model that does not fit, a request longer than the context, a run too
// long to answer) are the user's to change, answered 400.
func simError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return badf("the simulation took longer than %v: lower the load or the token counts", simTimeout)
	case errors.Is(err, simengine.ErrTooLong), errors.Is(err, simengine.ErrDoesNotFit),
		errors.Is(err, simengine.ErrBadEngineCfg), errors.Is(err, simengine.ErrBadRequest):
		return badf("%v", err)
	}
	return err
}
