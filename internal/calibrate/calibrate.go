package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
)

// Point kinds.
const (
	KindPrefill = "prefill"
	KindDecode  = "decode"
)

// Config is one calibration.
type Config struct {
	// Target: an OpenAI-compatible streaming server.
	BaseURL, Model, API, APIKey string
	// Engine is the hardware and model the server runs (GPU, model, TP,
	// scheduler limits): the cost model's physical side, which is not
	// fitted. Its Cost, if set, supplies the fields that are not fitted.
	Engine simengine.Config
	// PrefillLengths are the prompt lengths measured at concurrency 1
	// (default DefaultPrefillLengths, capped to one engine step's token
	// budget and the context); PrefillRequests is the number measured at
	// each, after one warm-up request.
	PrefillLengths  []int
	PrefillRequests int
	// DecodePoints are the (concurrency, prompt length) pairs whose
	// inter-token gap is measured, each for DecodeDuration after a warm-up
	// of at least DecodeWarmup (longer when the first prompts take longer
	// to prefill), with DecodeOutput output tokens per request. Default:
	// DefaultDecodePoints. Points beyond max_num_seqs or half the KV cache
	// are left out.
	DecodePoints   []DecodePoint
	DecodeDuration time.Duration
	DecodeWarmup   time.Duration
	DecodeOutput   int
	HoldOut        HoldOutConfig
	// StepModel is StepModelRoofline (the default: Engine's GPU and model
	// are what the server runs) or StepModelLinear (a server that is no GPU
	// preset: Engine's GPU and model only size the simulator's memory, and
	// its MaxNumSeqs is the server's parallel slots).
	StepModel string
	Tokenizer workload.Tokenizer
	Seed      uint64
	Progress  func(string) // called as each measurement starts
}

// HoldOutConfig is the load step the fitted model must predict: closed
// loop at Concurrency, Input/Output tokens per request, for Duration
// after Warmup. None of its measurements enter the fit.
type HoldOutConfig struct {
	Concurrency int           `json:"concurrency"`
	Input       int           `json:"input_tokens"`
	Output      int           `json:"output_tokens"`
	Duration    time.Duration `json:"duration_ns"`
	Warmup      time.Duration `json:"warmup_ns"`
	// Ramp is set by Run: the streams start one by one over it, in the
	// measurement and in the simulation alike (see Run).
	Ramp time.Duration `json:"ramp_ns,omitempty"`
}

// DecodePoint is one decode measurement: Batch streams with prompts of
// Input tokens.
type DecodePoint struct{ Batch, Input int }

// DefaultPrefillLengths are the prompt lengths measured by default.
var DefaultPrefillLengths = []int{128, 512, 1024, 2048, 4096, 8192}

// DefaultDecodePoints are small to large batches of short prompts, where
// the weights dominate a step's memory traffic, and one large batch of
// long contexts whose KV reads are about as large as the weights: without
// that spread the step overhead and the memory efficiency cannot be told
// apart. The long context is chosen per model (kvHeavyInput).
func DefaultDecodePoints(ec simengine.Config) []DecodePoint {
	return []DecodePoint{{1, 64}, {16, 64}, {64, 64}, {64, kvHeavyInput(ec, 64)}}
}

// DefaultLinearPrefillLengths are the prompt lengths a linear fit
// measures by default: short, as a CPU server prefills slowly.
var DefaultLinearPrefillLengths = []int{32, 128, 512}

// DefaultLinearDecodePoints are every batch size up to the server's slots
// when it has at most maxEveryBatch (a CPU server's kernels make the decode
// step no line in the batch: simengine.LinearStepCost.DecodeCurve), else
// one, half and all of them, with short prompts; and all of them with long
// ones (the per-context-token cost).
func DefaultLinearDecodePoints(slots int) []DecodePoint {
	pts := []DecodePoint{{1, 32}}
	if slots <= maxEveryBatch {
		for b := 2; b < slots; b++ {
			pts = append(pts, DecodePoint{b, 32})
		}
	} else if h := slots / 2; h > 1 {
		pts = append(pts, DecodePoint{h, 32})
	}
	if slots > 1 {
		pts = append(pts, DecodePoint{slots, 32})
	}
	return append(pts, DecodePoint{slots, 512})
}

// maxEveryBatch is the most slots whose every batch size calibrate
// measures by default (a decode point takes seconds).
const maxEveryBatch = 8

// kvHeavyInput is the prompt length at which b sequences read about as
// many KV bytes per step as weights, within 256..4096 tokens.
func kvHeavyInput(ec simengine.Config, b int) int {
	wMem := simengine.StepCostTerms(ec.GPU, ec.Model, ec.TP, simengine.DecodeShape(0, 0)).WeightNS
	kvPerCtxTok := simengine.StepCostTerms(ec.GPU, ec.Model, ec.TP, simengine.DecodeShape(int64(b), 1000)).KVNS / float64(b) / 1001
	if kvPerCtxTok <= 0 {
		return 1024
	}
	return min(max(int(wMem/kvPerCtxTok/float64(b)), 256), 4096)
}

// Result is a calibration.
type Result struct {
	Fit     Fit           `json:"fit"`
	Points  []Point       `json:"points"`
	HoldOut HoldOutResult `json:"holdout"`
	// Interrupted: the context ended before the calibration did. Points
	// holds what was measured; Fitted says whether Fit was made from them
	// (two prefill and two decode points at least); no held-out step.
	Interrupted bool `json:"interrupted,omitempty"`
	Fitted      bool `json:"fitted,omitempty"`
	// Disturbed names the decode points still disturbed after a second
	// measurement (gapDisagreement), and a roofline fit whose points
	// scatter about the formula (maxFitRMS): the fit may be off.
	Disturbed []string `json:"disturbed,omitempty"`
}

// interrupted is the result of a calibration cut short by ctx: the points
// measured, fitted when there are enough of them.
func interrupted(pts []Point, linear bool, def simengine.CostParams) *Result {
	res := &Result{Points: pts, Interrupted: true}
	var prefill, decode int
	for _, p := range pts {
		if p.Kind == KindPrefill {
			prefill++
		} else {
			decode++
		}
	}
	if prefill >= 2 && decode >= 2 {
		if linear {
			res.Fit = FitLinear(pts, def)
		} else {
			res.Fit = FitPoints(pts, def)
		}
		res.Fitted = true
	}
	return res
}

// HoldOutResult compares the held-out step as measured with the fitted
// model's prediction (knee sim's closed loop on the same workload).
type HoldOutResult struct {
	HoldOutConfig
	Measured  Observed `json:"measured"`
	Predicted Observed `json:"predicted"`
	// Relative errors of the prediction, (predicted − measured) / measured.
	TTFTError       float64 `json:"ttft_p50_rel_error"`
	TPOTError       float64 `json:"tpot_p50_rel_error"`
	ThroughputError float64 `json:"throughput_rel_error"`
}

// Observed is a load step's headline figures.
type Observed struct {
	Requests     int     `json:"requests"`
	TTFTP50MS    float64 `json:"ttft_p50_ms"`
	TPOTP50MS    float64 `json:"tpot_p50_ms"`
	OutputTPS    float64 `json:"output_tokens_per_s"`
	InputTokens  int     `json:"input_tokens"` // median prompt length, as the server counted it
	OutputTokens int     `json:"output_tokens"`
}

// ErrNoData means the server answered too few requests to fit anything.
var ErrNoData = errors.New("not enough successful requests")

// Run measures, fits and checks. On a measurement that yields no data it
// returns ErrNoData naming the step and the server's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = withDefaults(cfg)
	eng, err := simengine.NewEngine(cfg.Engine)
	if err != nil {
		return nil, err
	}
	ec := eng.Config()
	def := simengine.DefaultCost
	// The defaults' serial admission stands for hosts knee has not
	// seen; calibrate measures this host's front end as one request
	// overhead, so a fitted profile starts without it.
	def.FrontEndSerialNS = 0
	if ec.Cost != nil {
		def = *ec.Cost
	}
	linear := cfg.StepModel == StepModelLinear
	// terms prices a step on the roofline; a linear fit has none.
	terms := func(s simengine.StepShape) simengine.StepTerms {
		if linear {
			return simengine.StepTerms{}
		}
		return simengine.StepCostTerms(ec.GPU, ec.Model, ec.TP, s)
	}
	// A llama.cpp server keeps each idle slot's last context in its KV
	// cache, and every step attends over every cell in use: what earlier
	// loads left there slows every later step. Short requests in every
	// slot, before the fit and before the held-out step, leave the same
	// small residue each time.
	resetSlots := func() error {
		if !linear {
			return nil
		}
		cfg.progress("slot reset: %d concurrent 8-token requests (not used in the fit)", ec.MaxNumSeqs)
		_, err := measure(ctx, cfg, ec.MaxNumSeqs, 8, 8, 0, 0, 0, int64(2*ec.MaxNumSeqs+1))
		return err
	}
	if err := resetSlots(); err != nil {
		return nil, err
	}
	var pts []Point
	var res0 Result       // what the measurements say of themselves (Disturbed)
	var stepCVs []float64 // a linear fit's decode points' step-time spread
	var restarts []restartRun
	for _, n := range prefillLengths(cfg.PrefillLengths, ec) {
		cfg.progress("prefill: %d-token prompts at concurrency 1", n)
		recs, err := measure(ctx, cfg, 1, n, 2, 0, 0, 0, int64(cfg.PrefillRequests+1))
		if err != nil {
			if ctx.Err() != nil && len(pts) > 0 {
				return interrupted(pts, linear, def), err
			}
			return nil, err
		}
		var ttft []float64
		var in []int
		for i := range recs {
			if r := &recs[i]; r.OK() && !r.Warmup && r.HasFirstToken() {
				ttft = append(ttft, ms(r.FirstToken-r.Sent))
				in = append(in, inputTokens(r))
			}
		}
		if len(ttft) == 0 {
			return nil, noData(fmt.Sprintf("prefill at %d tokens", n), recs)
		}
		L := median(in)
		pts = append(pts, newPoint(KindPrefill, L, 1, len(ttft), median(ttft), terms(simengine.PrefillShape(int64(L)))))
	}
	points := cfg.DecodePoints
	if len(points) == 0 && linear {
		points = DefaultLinearDecodePoints(ec.MaxNumSeqs)
	} else if len(points) == 0 {
		points = DefaultDecodePoints(ec)
	}
	for _, dp := range decodeRuns(points, ec, eng.Stats().KVCapacityTokens, cfg.DecodeOutput) {
		b := dp.Batch
		cfg.progress("decode: %d concurrent streams, %d-token prompts", b, dp.Input)
		// Streams that start together stay together: their prompts fill
		// whole prefill steps, they finish and restart as one, and the
		// step would measure those bursts. Starting them one by one over
		// the warm-up spreads their prefills and restarts thin.
		burst := prefillBurst(ec, b*dp.Input)
		if linear {
			// No roofline to price the burst: twice the slowest measured
			// prefill rate.
			burst = 2 * time.Duration(float64(b*dp.Input)*slowestPrefillMSPerToken(pts)*1e6)
		}
		warm := max(cfg.DecodeWarmup, burst+cfg.DecodeWarmup/2)
		recs, err := measure(ctx, cfg, b, dp.Input, dp.output, cfg.DecodeDuration, warm, warm*3/4, 0)
		if err == nil && !linear {
			// A disturbed measurement is taken again, once, with fresh
			// prompts; the less disturbed of the two is kept and one
			// still disturbed is named in the result.
			d := gapDisagreement(recs, warm)
			if d > maxGapDisagreement {
				cfg.progress("decode: %d concurrent streams, %d-token prompts, again: the median and the mean gap differed by %.1f%%", b, dp.Input, 100*d)
				again := cfg
				again.Seed++
				recs2, err2 := measure(ctx, again, b, dp.Input, dp.output, cfg.DecodeDuration, warm, warm*3/4, 0)
				if err = err2; err == nil {
					if d2 := gapDisagreement(recs2, warm); d2 < d {
						recs, d = recs2, d2
					}
					if d > maxGapDisagreement {
						res0.Disturbed = append(res0.Disturbed, fmt.Sprintf("decode at %d streams of %d-token prompts: its median and mean gap differ by %.1f%% in the better of two measurements", b, dp.Input, 100*d))
					}
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil && len(pts) > 0 {
				return interrupted(pts, linear, def), err
			}
			return nil, err
		}
		var gaps []float64
		var ctxTok int
		step := median[float64]
		if linear {
			// A CPU server's steps vary with what else the machine runs,
			// and a load step's throughput follows their mean, not their
			// median: the mean of the gaps no other stream's prompt fell
			// into (those steps the model prices as prefill).
			gaps, ctxTok = decodeGaps(recs, warm, prefillIn(recs))
			step = mean
			if cv, ok := stepTimeCV(gaps); ok {
				stepCVs = append(stepCVs, cv)
			}
			if r, ok := newRestartRun(dp, recs, cfg.DecodeDuration, warm); ok {
				restarts = append(restarts, r)
			}
		} else {
			gaps, ctxTok = decodeGaps(recs, warm, nil)
		}
		if len(gaps) == 0 {
			return nil, noData(fmt.Sprintf("decode at %d streams", b), recs)
		}
		pts = append(pts, newPoint(KindDecode, ctxTok, b, len(gaps), step(gaps), terms(simengine.DecodeShape(int64(b), int64(ctxTok)))))
	}
	res := &res0
	res.Points = pts
	if linear {
		res.Fit = FitLinear(pts, def)
		if len(stepCVs) > 0 {
			res.Fit.StepTimeCV = round(median(stepCVs), 1e3)
			res.Fit.Cost.StepTimeCV = res.Fit.StepTimeCV
		}
		if r, err := fitFrontEndRate(ctx, ec, res.Fit.Cost, restarts); err != nil {
			return nil, err
		} else if r < 1 {
			res.Fit.FrontEndRateInSteps = r
			res.Fit.Cost.FrontEndRateInSteps = r
		}
	} else {
		res.Fit = FitPoints(pts, def)
		if r := res.Fit.RMSRelError; r > maxFitRMS {
			res.Disturbed = append(res.Disturbed, fmt.Sprintf("the points differ from the fitted step formula by %.1f%% rms (a busy machine, or a server the formula does not describe)", 100*r))
		}
	}
	// The step must finish a few requests after its warm-up however slow
	// the server: stretch both to the fitted model's request time.
	e2e := estimateE2E(res.Fit, ec, cfg.HoldOut)
	cfg.HoldOut.Warmup = max(cfg.HoldOut.Warmup, e2e)
	cfg.HoldOut.Duration = max(cfg.HoldOut.Duration, 3*e2e)
	// Identical requests started together stay grouped: they finish in
	// the same step and come back together, and each group's TTFT is
	// that of its prompts prefilled at once. How a synchronized start
	// splits into groups hangs on microseconds (which requests reach the
	// server before its first step starts), so the measured p50 TTFT
	// jumped between modes (8 streams on knee's own server: 237 ms as
	// 1+7, 185 ms as 4+4) while the simulation always found one. Streams
	// started one by one across one request's time, as independent users
	// would be, keep their own phases in the server and in the simulation
	// alike: each prompt joins the others' decode steps.
	cfg.HoldOut.Ramp = min(cfg.HoldOut.Warmup*3/4, e2e)
	if err := resetSlots(); err != nil {
		return nil, err
	}
	h := cfg.HoldOut
	res.HoldOut.HoldOutConfig = h
	cfg.progress("held-out step: %d concurrent streams, %d/%d tokens (not used in the fit)", h.Concurrency, h.Input, h.Output)
	recs, err := measure(ctx, cfg, h.Concurrency, h.Input, h.Output, h.Duration, h.Warmup, h.Ramp, 0)
	if err != nil {
		if ctx.Err() != nil {
			// Every point was measured and fitted: only the check is missing.
			res.Interrupted, res.Fitted = true, true
			return res, err
		}
		return nil, err
	}
	res.HoldOut.Measured = observe(h, recs)
	if res.HoldOut.Measured.Requests == 0 {
		return nil, noData("the held-out step", recs)
	}
	pred, err := predict(ctx, cfg, ec, res.Fit.Cost, res.HoldOut.Measured.InputTokens)
	if err != nil {
		return nil, err
	}
	res.HoldOut.Predicted = pred
	m := res.HoldOut.Measured
	res.HoldOut.TTFTError = relErr(pred.TTFTP50MS, m.TTFTP50MS)
	res.HoldOut.TPOTError = relErr(pred.TPOTP50MS, m.TPOTP50MS)
	res.HoldOut.ThroughputError = relErr(pred.OutputTPS, m.OutputTPS)
	return res, nil
}

func withDefaults(c Config) Config {
	if c.API == "" {
		c.API = "chat"
	}
	if len(c.PrefillLengths) == 0 && c.StepModel == StepModelLinear {
		c.PrefillLengths = DefaultLinearPrefillLengths
	} else if len(c.PrefillLengths) == 0 {
		c.PrefillLengths = DefaultPrefillLengths
	}
	if c.PrefillRequests <= 0 {
		c.PrefillRequests = 5
	}
	if c.DecodeDuration <= 0 {
		c.DecodeDuration = 5 * time.Second
	}
	if c.DecodeWarmup <= 0 {
		c.DecodeWarmup = time.Second
	}
	if c.DecodeOutput <= 0 {
		c.DecodeOutput = 256
	}
	h := &c.HoldOut
	if h.Concurrency <= 0 {
		h.Concurrency = 16
	}
	if h.Input <= 0 {
		h.Input = 512
	}
	if h.Output <= 0 {
		h.Output = 128
	}
	if h.Duration <= 0 {
		h.Duration = 10 * time.Second
	}
	if h.Warmup <= 0 {
		h.Warmup = 2 * time.Second
	}
	return c
}

func (c *Config) progress(format string, a ...any) {
	if c.Progress != nil {
		c.Progress(fmt.Sprintf(format, a...))
	}
}

// prefillLengths keeps the lengths a single step prefills whole (one
// token budget, with room for the output under the context limit).
func prefillLengths(want []int, ec simengine.Config) []int {
	var out []int
	for _, n := range want {
		if n >= 1 && n <= ec.MaxNumBatchedTokens && n+2 <= ec.MaxModelLen {
			out = append(out, n)
		}
	}
	return out
}

// decodeRun is a decode point with the output length its requests ask for.
type decodeRun struct {
	DecodePoint
	output int
}

// decodeRuns gives each point its output length and keeps those the engine
// can run without preempting: within max_num_seqs, the context limit and
// half the KV cache. Each restart of a stream puts its prompt into some
// step; with at least 4 output tokens per stream at most a quarter of the
// steps carry one, and the median gap is a pure decode step.
func decodeRuns(want []DecodePoint, ec simengine.Config, kvTokens, out int) []decodeRun {
	var keep []decodeRun
	for _, p := range want {
		o := max(out, 4*p.Batch)
		if p.Batch >= 1 && p.Batch <= ec.MaxNumSeqs && p.Input >= 1 && p.Input+o <= ec.MaxModelLen && 2*p.Batch*(p.Input+o) <= kvTokens {
			keep = append(keep, decodeRun{p, o})
		}
	}
	return keep
}

// prefillBurst estimates, under the default cost, how long a server takes
// to prefill tokens prompt tokens arriving at once: the warm-up a decode
// point needs before its streams are all decoding.
func prefillBurst(ec simengine.Config, tokens int) time.Duration {
	c := simengine.DefaultCost
	ns := burstPrefill(ec, tokens, float64(c.StepOverheadNS), float64(c.StepPerSeqNS), c.MemEfficiency, c.ComputeEfficiency)
	return time.Duration(ns * 2) // ×2: a slower server than the default
}

// burstPrefill prices prefilling tokens prompt tokens that arrive at once:
// full token-budget steps under overhead t0 (perSeq per sequence) and
// efficiencies em, ec, in ns.
func burstPrefill(ec simengine.Config, tokens int, t0, perSeq, em, ecmp float64) float64 {
	budget := max(ec.MaxNumBatchedTokens, 1)
	steps := (tokens + budget - 1) / budget
	return float64(steps) * stepOf(ec, simengine.PrefillShape(int64(min(tokens, budget))), t0, perSeq, em, ecmp)
}

// stepOf prices one step of the given shape, in ns.
func stepOf(ec simengine.Config, s simengine.StepShape, t0, perSeq, em, ecmp float64) float64 {
	return simengine.StepCostTerms(ec.GPU, ec.Model, ec.TP, s).NS(t0, perSeq, em, ecmp)
}

// slowestPrefillMSPerToken is the largest TTFT per prompt token among
// the prefill points (0 without any).
func slowestPrefillMSPerToken(pts []Point) float64 {
	r := 0.0
	for _, p := range pts {
		if p.Kind == KindPrefill && p.InputTokens > 0 {
			r = max(r, p.MeasuredMS/float64(p.InputTokens))
		}
	}
	return r
}

// measure runs one closed-loop step: requests of in prompt and out output
// tokens at concurrency conc, its streams started over ramp, for a
// duration (after warm-up) or a count (the first one a warm-up).
func measure(ctx context.Context, cfg Config, conc, in, out int, d, warm, ramp time.Duration, count int64) ([]record.Request, error) {
	inD, err := workload.ParseDist(strconv.Itoa(in))
	if err != nil {
		return nil, err
	}
	outD, err := workload.ParseDist(strconv.Itoa(out))
	if err != nil {
		return nil, err
	}
	gen, err := workload.NewGenerator(workload.Spec{
		Input: inD, Output: outD, Seed: cfg.Seed ^ uint64(conc)<<32 ^ uint64(in), Tokenizer: cfg.Tokenizer,
	})
	if err != nil {
		return nil, err
	}
	lc := loadgen.Config{
		BaseURL: cfg.BaseURL, Model: cfg.Model, API: cfg.API, APIKey: cfg.APIKey, IgnoreEOS: true,
		Concurrency: conc, Grace: -1, Ramp: ramp,
	}
	if count > 0 {
		lc.Requests, lc.WarmupRequests, lc.Grace = count, 1, 0
	} else {
		lc.Duration, lc.Warmup = warm+d, warm
	}
	run, err := loadgen.Start(ctx, lc, func(i int64) loadgen.Request {
		it := gen.Item(i)
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, MaxTokens: it.MaxTokens}
	})
	if err != nil {
		return nil, err
	}
	res := run.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return res.Records, nil
}

// predict simulates the held-out step with the fitted cost.
func predict(ctx context.Context, cfg Config, ec simengine.Config, cost simengine.CostParams, input int) (Observed, error) {
	h := cfg.HoldOut
	s, err := simulateUntil(ctx, ec, cost, sim.Config{
		Gen: fixedLengths{in: input, out: h.Output}, Concurrency: h.Concurrency,
		Duration: h.Warmup + h.Duration, Warmup: h.Warmup, Ramp: h.Ramp, StreamTokenTimes: true,
	}, h.Warmup+h.Duration)
	if err != nil {
		return Observed{}, fmt.Errorf("simulating the held-out step: %w", err)
	}
	return Observed{Requests: int(s.Completed), TTFTP50MS: s.TTFT.P50, TPOTP50MS: s.TPOT.P50, OutputTPS: closedLoopTPS(h, s),
		InputTokens: input, OutputTokens: h.Output}, nil
}

// restartRun is a decode point of two or more streams as measured: each
// stream's next request reaches the server while the others decode, so
// its TTFT holds the front end as slowed by their steps.
type restartRun struct {
	run               decodeRun
	duration, warm    time.Duration
	measuredTTFTP50MS float64
}

func newRestartRun(dp decodeRun, recs []record.Request, d, warm time.Duration) (restartRun, bool) {
	if dp.Batch < 2 {
		return restartRun{}, false
	}
	var ttft []float64
	for i := range recs {
		if r := &recs[i]; r.OK() && !r.Warmup && r.HasFirstToken() {
			ttft = append(ttft, ms(r.FirstToken-r.Sent))
		}
	}
	if len(ttft) < 5 {
		return restartRun{}, false
	}
	return restartRun{run: dp, duration: d, warm: warm, measuredTTFTP50MS: median(ttft)}, true
}

// frontEndRates are the rates fitFrontEndRate tries, 1 first.
var frontEndRates = []float64{1, 0.7, 0.5, 0.35, 0.25, 0.18, 0.13, 0.1, 0.07, 0.05}

// fitFrontEndRate finds how fast the front end works while the engine runs
// steps (simengine.CostParams.FrontEndRateInSteps): the rate whose
// simulation of the restart runs, with the fitted step costs, gives their
// measured median TTFTs best (least squares on the log ratio). On a CPU
// server the compute threads take the cores the HTTP server and tokenizer
// need, and a request arriving amid decode steps waits for them; 1 where
// the runs cannot tell.
func fitFrontEndRate(ctx context.Context, ec simengine.Config, cost simengine.CostParams, runs []restartRun) (float64, error) {
	if len(runs) == 0 || cost.FrontEndNS+int64(cost.FrontEndPerTokenNS) <= 0 {
		return 1, nil
	}
	best, bestErr := 1.0, math.Inf(1)
	for _, rate := range frontEndRates {
		c := cost
		c.FrontEndRateInSteps = rate
		var sq float64
		for _, r := range runs {
			s, err := simulate(ctx, ec, c, sim.Config{
				Gen: fixedLengths{in: r.run.Input, out: r.run.output}, Concurrency: r.run.Batch,
				Duration: r.warm + r.duration, Warmup: r.warm, Ramp: r.warm * 3 / 4,
			})
			if err != nil {
				return 0, fmt.Errorf("simulating the decode points: %w", err)
			}
			if s.Completed == 0 || s.TTFT.P50 <= 0 {
				sq = math.Inf(1)
				break
			}
			d := math.Log(s.TTFT.P50 / r.measuredTTFTP50MS)
			sq += d * d
		}
		if sq < bestErr {
			best, bestErr = rate, sq
		}
	}
	return best, nil
}

// simulate runs sc on ec's engine priced by cost (the fitted one, at
// full speed) and summarizes its records.
func simulate(ctx context.Context, ec simengine.Config, cost simengine.CostParams, sc sim.Config) (stats.Summary, error) {
	return simulateUntil(ctx, ec, cost, sc, 0)
}

// simulateUntil is simulate counting only the requests done by end (0:
// all), as a measured step counts them: it cancels what is in flight when
// it ends, while the simulation lets those finish, with fewer and fewer
// streams beside them and so faster.
func simulateUntil(ctx context.Context, ec simengine.Config, cost simengine.CostParams, sc sim.Config, end time.Duration) (stats.Summary, error) {
	ec.Cost, ec.StepTimeScale = &cost, 1
	sc.Engine = ec
	acc := stats.NewAccumulator(stats.Options{})
	if _, err := sim.Run(ctx, sc, func(r *record.Request) {
		if end <= 0 || r.Done <= end {
			acc.Add(r)
		}
	}); err != nil {
		return stats.Summary{}, err
	}
	return acc.Summary(), nil
}

type fixedLengths struct{ in, out int }

func (f fixedLengths) Lengths(int64) (int, int) { return f.in, f.out }

// estimateE2E is a held-out request's time under the fit: its share of
// prefilling Concurrency prompts at once, then Output decode steps.
func estimateE2E(f Fit, ec simengine.Config, h HoldOutConfig) time.Duration {
	if l := f.Cost.Linear; l != nil {
		n := int64(h.Concurrency)
		prefill := l.LinearStepNS(simengine.PrefillShape(n*int64(h.Input)), 0)
		decode := float64(h.Output) * l.LinearStepNS(simengine.DecodeShape(n, int64(h.Input+h.Output/2)), n)
		return time.Duration(prefill + decode + f.RequestOverheadMS*1e6)
	}
	t0, perSeq := float64(f.Cost.StepOverheadNS), float64(f.Cost.StepPerSeqNS)
	prefill := burstPrefill(ec, h.Concurrency*h.Input, t0, perSeq, f.MemEfficiency, f.ComputeEfficiency)
	decode := float64(h.Output) * stepOf(ec, simengine.DecodeShape(int64(h.Concurrency), int64(h.Input+h.Output/2)), t0, perSeq, f.MemEfficiency, f.ComputeEfficiency)
	return time.Duration(prefill + decode + f.RequestOverheadMS*1e6)
}

// closedLoopTPS is a closed loop's steady output rate by Little's law:
// Concurrency requests always in flight, each making Output tokens in a
// mean end-to-end time. Measured and simulated steps end differently (a
// measured one cancels what is in flight, a simulated one lets it
// finish), so a rate over each step's window would compare its edges.
func closedLoopTPS(h HoldOutConfig, s stats.Summary) float64 {
	if s.E2E.Mean <= 0 {
		return 0
	}
	return float64(h.Concurrency) * float64(s.OutputTokens) / float64(max(s.Completed, 1)) / (s.E2E.Mean / 1e3)
}

func observe(h HoldOutConfig, recs []record.Request) Observed {
	s := stats.Summarize(recs, stats.Options{})
	var in []int
	out := 0
	for i := range recs {
		if r := &recs[i]; r.OK() && !r.Warmup {
			in = append(in, inputTokens(r))
			out = max(out, r.OutputTokens)
		}
	}
	o := Observed{Requests: int(s.Completed), TTFTP50MS: s.TTFT.P50, TPOTP50MS: s.TPOT.P50, OutputTPS: closedLoopTPS(h, s), OutputTokens: out}
	if len(in) > 0 {
		o.InputTokens = median(in)
	}
	return o
}

// decodeGaps collects the inter-token gaps that end after the warm-up, of
// finished requests and of those still streaming when the step ended
// (their gaps are as good): a slow server may finish none in a step. A
// chunk of k tokens counts as k gaps of a k-th of its gap each. ctx is the
// mean context of the sequences over those gaps (prompt + tokens so far):
// streams that started together stay in step, so the mean is not simply
// the prompt plus half the output.
// A gap for which skip (when not nil) says true is left out.
func decodeGaps(recs []record.Request, warm time.Duration, skip func(from, to time.Duration) bool) (gaps []float64, ctx int) {
	var ctxSum float64
	for i := range recs {
		r := &recs[i]
		if !r.OK() && r.Error != record.ErrCanceled {
			continue
		}
		// made counts the tokens generated so far: the first chunk's, then
		// each gap's.
		in, made := inputTokens(r), 1
		if len(r.TokenCounts) > 0 {
			made = int(max(r.TokenCounts[0], 1))
		}
		for j := 1; j < len(r.TokenTimes); j++ {
			k := 1
			if j < len(r.TokenCounts) && r.TokenCounts[j] > 1 {
				k = int(r.TokenCounts[j])
			}
			g := ms(r.TokenTimes[j]-r.TokenTimes[j-1]) / float64(k)
			keep := r.TokenTimes[j] >= warm && (skip == nil || !skip(r.TokenTimes[j-1], r.TokenTimes[j]))
			for range k {
				if keep {
					gaps = append(gaps, g)
					ctxSum += float64(in + made) // the context this step read
				}
				made++
			}
		}
	}
	if len(gaps) > 0 {
		ctx = int(math.Round(ctxSum / float64(len(gaps))))
	}
	return gaps, ctx
}

// maxGapDisagreement is the most a decode point's median and mean gap
// (gapDisagreement) differ by before it is measured again. On knee's own
// server 24 points measured on a quiet machine kept within 0.9%; with two
// busy loops on its 2 cores 5 of 32 went over 2%, among them the one whose
// median was furthest off the server's step (+3.4%).
const maxGapDisagreement = 0.02

// maxFitRMS is the roofline fit's rms relative error beyond which its
// points are called disturbed. Knee's own server, whose steps follow the
// formula, fitted within 1.4% rms in 39 of 40 calibrations on a shared
// 2-core machine without busy loops; the 40th, beside a compile, 6.3%, and
// one with two busy loops whose prefill points were slowed, 2.8%.
const maxFitRMS = 0.02

// gapDisagreement is how far a decode point's median gap, the step the
// fit takes, and the mean of the gaps no other stream's prompt fell into
// differ, relative to the median. Both estimate one pure decode step, and
// they agree when the client sees the server's steps as they were. When
// the client or the server falls behind (a busy machine) and catches up,
// one long gap is followed by short ones: the mean keeps their sum, the
// step's, while the median moves to the short ones (or, with many long
// ones, up). 0 when there are no gaps.
func gapDisagreement(recs []record.Request, warm time.Duration) float64 {
	gaps, _ := decodeGaps(recs, warm, nil)
	pure, _ := decodeGaps(recs, warm, prefillIn(recs))
	if len(gaps) == 0 || len(pure) == 0 {
		return 0
	}
	m := median(gaps)
	return math.Abs(mean(pure)-m) / m
}

// stepTimeCV is the coefficient of variation of a decode point's step
// times, from the interquartile range of their logarithms (a lognormal's
// σ is IQR/1.349): robust to the few gaps a pause of the client or the
// machine stretched, which the mean already counts. ok is false with too
// few gaps to say.
func stepTimeCV(gaps []float64) (cv float64, ok bool) {
	if len(gaps) < 20 {
		return 0, false
	}
	logs := make([]float64, 0, len(gaps))
	for _, g := range gaps {
		if g > 0 {
			logs = append(logs, math.Log(g))
		}
	}
	if len(logs) < 20 {
		return 0, false
	}
	slices.Sort(logs)
	q := func(f float64) float64 { return logs[int(f*float64(len(logs)-1))] }
	sigma := (q(0.75) - q(0.25)) / 1.349
	return math.Sqrt(math.Expm1(sigma * sigma)), true
}

// prefillIn says whether some request's first token arrived at the end
// of the gap (from, to], within half the gap either side: the step that
// ended it also prefilled that request's prompt. (The streams' tokens of
// one step reach the client in some order, a little apart.)
func prefillIn(recs []record.Request) func(from, to time.Duration) bool {
	var firsts []time.Duration
	for i := range recs {
		if recs[i].HasFirstToken() {
			firsts = append(firsts, recs[i].FirstToken)
		}
	}
	slices.Sort(firsts)
	return func(from, to time.Duration) bool {
		half := (to - from) / 2
		i, _ := slices.BinarySearch(firsts, from+half+1)
		return i < len(firsts) && firsts[i] <= to+half
	}
}

func inputTokens(r *record.Request) int {
	if r.InputTokens > 0 {
		return r.InputTokens
	}
	return r.PromptTokensRequested
}

func noData(step string, recs []record.Request) error {
	for i := range recs {
		if r := &recs[i]; !r.OK() && r.Error != record.ErrCanceled {
			return fmt.Errorf("%w in %s: %s: %s", ErrNoData, step, r.Error, r.ErrorMessage)
		}
	}
	return fmt.Errorf("%w in %s (%d requests, none completed)", ErrNoData, step, len(recs))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// median of a non-empty slice (the mean of the middle two for an even count).
func median[T int | float64](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func relErr(pred, meas float64) float64 {
	if meas == 0 || math.IsNaN(pred) {
		return math.NaN()
	}
	return (pred - meas) / meas
}
