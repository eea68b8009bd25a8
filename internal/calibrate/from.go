package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
)

// Observation is one load step measured without knee calibrate (another
// tool's result file, a stored run or sweep step): its load and the
// headline figures a profile must reproduce. FitFrom fits a profile to a
// set of them (knee calibrate --from).
type Observation struct {
	Source string `json:"source"`
	// The load: Concurrency requests kept in flight (closed loop), else
	// RateRPS offered (open loop); with neither, Little's law on the
	// figures gives the requests in flight.
	Concurrency float64 `json:"concurrency,omitempty"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	// Mean tokens of a completed request.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	Requests     int `json:"requests"`
	// Measured figures (0: not in the file).
	TTFTP50MS  float64 `json:"ttft_p50_ms"`
	TPOTP50MS  float64 `json:"tpot_p50_ms"`
	OutputTPS  float64 `json:"output_tokens_per_s"`
	E2EMeanMS  float64 `json:"e2e_mean_ms"`
	RequestRPS float64 `json:"request_rps"`
}

// ObservationOf reads a run's summary as an observation at the load
// given (0, 0 when the file does not say it). A run with no completed
// request, or no token counts, cannot be one.
func ObservationOf(source string, s stats.Summary, concurrency, rateRPS float64) (Observation, error) {
	if s.Completed == 0 {
		return Observation{}, fmt.Errorf("%s: no completed request", source)
	}
	o := Observation{Source: source, Concurrency: concurrency, RateRPS: rateRPS, Requests: s.Completed,
		InputTokens:  int(math.Round(float64(s.InputTokens) / float64(s.Completed))),
		OutputTokens: int(math.Round(float64(s.OutputTokens) / float64(s.Completed))),
		TTFTP50MS:    finiteOr0(s.TTFT.P50), TPOTP50MS: finiteOr0(s.TPOT.P50), OutputTPS: finiteOr0(s.OutputTokenThroughputTPS),
		E2EMeanMS: finiteOr0(s.E2E.Mean), RequestRPS: finiteOr0(s.RequestThroughputRPS)}
	if o.InputTokens < 1 || o.OutputTokens < 1 {
		return Observation{}, fmt.Errorf("%s: the file gives no input and output token counts (%d, %d per request)", source, o.InputTokens, o.OutputTokens)
	}
	if o.TTFTP50MS <= 0 && o.TPOTP50MS <= 0 {
		return Observation{}, fmt.Errorf("%s: neither a TTFT nor a TPOT median to fit", source)
	}
	return o, nil
}

func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// inFlight is the requests the server held at once: the closed loop's
// concurrency, else Little's law (throughput × mean time in the system).
func (o Observation) inFlight() float64 {
	if o.Concurrency > 0 {
		return o.Concurrency
	}
	if o.RequestRPS > 0 && o.E2EMeanMS > 0 {
		return o.RequestRPS * o.E2EMeanMS / 1e3
	}
	return 0
}

// load orders observations for the hold-out's spread.
func (o Observation) load() float64 {
	if f := o.inFlight(); f > 0 {
		return f
	}
	return o.RateRPS
}

// FromConfig is a calibration from measurements already made.
type FromConfig struct {
	// Engine is what the measured server runs (GPU, model, TP, limits);
	// its cost, if any, supplies what the data cannot pin.
	Engine       simengine.Config
	Observations []Observation
	// HoldOut is how many observations to keep out of the fit and only
	// predict, spread over the load range between its ends (0: none).
	HoldOut int
	// SimRequests bounds each reproduction's simulated requests (0: 400).
	SimRequests int
	Seed        uint64
}

// Constant is one profile constant and whether the data pinned it.
type Constant struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"`
	Pinned bool    `json:"pinned"`
	Why    string  `json:"why"`
}

// Comparison is one observation as measured and as the fitted profile
// simulates it; errors are relative, (predicted − measured) / measured,
// and NaN where the file lacks the figure.
type Comparison struct {
	Observation Observation `json:"observation"`
	Predicted   Observed    `json:"predicted"`
	TTFTError   float64     `json:"ttft_p50_rel_error"`
	TPOTError   float64     `json:"tpot_p50_rel_error"`
	TPSError    float64     `json:"throughput_rel_error"`
}

// MetricErrors are median and largest |relative error| per metric.
type MetricErrors struct {
	TTFTMedian, TTFTMax float64
	TPOTMedian, TPOTMax float64
	TPSMedian, TPSMax   float64
}

// FromResult is a calibration from measurements.
type FromResult struct {
	Fit       Fit          `json:"fit"`
	Points    []Point      `json:"points"`
	Constants []Constant   `json:"constants"`
	Fitted    []Comparison `json:"fitted"`
	HeldOut   []Comparison `json:"held_out,omitempty"`
	// FitErrors summarize Fitted, HoldOutErrors HeldOut. Range is the
	// error the profile states for points it has not seen, per metric:
	// twice the worst error on the points it was fitted to, and at least
	// MinStatedRange (a fit's points bound how far it can be trusted
	// elsewhere, not tighter than the simulator's own spread).
	FitErrors     MetricErrors `json:"fit_errors"`
	HoldOutErrors MetricErrors `json:"holdout_errors"`
	Range         MetricErrors `json:"stated_range"`
	Notes         []string     `json:"notes,omitempty"`
}

// MinStatedRange is the smallest relative error FitFrom states for points
// it has not seen.
const MinStatedRange = 0.10

// lowLoad is the most requests in flight at which a TTFT is taken as one
// prompt's prefill plus the front end (no queue, no batch to share).
const lowLoad = 1.5

// ErrTooFewObservations: nothing left to fit.
var ErrTooFewObservations = errors.New("too few usable measurements")

// FitFrom fits the roofline constants to the observations the hold-out
// leaves (each a prefill point when its load is low enough for TTFT to be
// one prompt's, and a decode point from its TPOT: the mean step of its
// batch with its share of other requests' prefills), then simulates every
// observation with the fitted profile to say how well it reproduces them.
func FitFrom(ctx context.Context, cfg FromConfig) (*FromResult, error) {
	eng, err := simengine.NewEngine(cfg.Engine)
	if err != nil {
		return nil, err
	}
	ec := eng.Config()
	def := simengine.DefaultCost
	if ec.Cost != nil {
		def = *ec.Cost
	}
	obs := slices.Clone(cfg.Observations)
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].load() < obs[j].load() })
	held, err := holdOutMask(len(obs), cfg.HoldOut)
	if err != nil {
		return nil, err
	}
	kvCap := eng.Stats().KVCapacityTokens
	var pts []Point
	for i, o := range obs {
		if !held[i] {
			pts = append(pts, pointsOf(ec, kvCap, o)...)
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%w: no measurement has a TPOT with more than one output token, or a TTFT at concurrency 1", ErrTooFewObservations)
	}
	res := &FromResult{Points: pts}
	res.Fit = FitPoints(pts, def)
	if !hasKind(pts, KindPrefill) {
		// No TTFT at low load: the front end is unknown, keep the default.
		res.Fit.Cost.FrontEndNS, res.Fit.Cost.FrontEndPerTokenNS = def.FrontEndNS, def.FrontEndPerTokenNS
		res.Fit.RequestOverheadMS = float64(def.FrontEndNS) / 1e6
		res.Notes = append(res.Notes, "no measurement at concurrency 1 (or a rate low enough for one request at a time): TTFT's front end stays at the default")
	}
	res.Constants = pinned(pts, res.Fit, def)
	n := cfg.SimRequests
	if n <= 0 {
		n = 400
	}
	for i, o := range obs {
		c, err := reproduce(ctx, ec, res.Fit.Cost, o, n, cfg.Seed+uint64(i))
		if err != nil {
			return nil, fmt.Errorf("simulating %s: %w", o.Source, err)
		}
		if held[i] {
			res.HeldOut = append(res.HeldOut, c)
		} else {
			res.Fitted = append(res.Fitted, c)
		}
	}
	res.FitErrors = summarizeErrors(res.Fitted)
	res.HoldOutErrors = summarizeErrors(res.HeldOut)
	stated := func(worst float64) float64 { return max(2*worst, MinStatedRange) }
	f := res.FitErrors
	res.Range = MetricErrors{TTFTMax: stated(f.TTFTMax), TPOTMax: stated(f.TPOTMax), TPSMax: stated(f.TPSMax)}
	return res, nil
}

// holdOutMask marks n of count observations (sorted by load) to keep out
// of the fit, spread evenly between the lowest and the highest load, which
// both stay in: the fit then interpolates.
func holdOutMask(count, n int) ([]bool, error) {
	held := make([]bool, count)
	if n < 0 {
		return nil, fmt.Errorf("hold-out %d: want 0 or more", n)
	}
	if n == 0 {
		return held, nil
	}
	inner := count - 2
	if n > inner {
		return nil, fmt.Errorf("%w: %d measurements have %d between the lowest and the highest load to hold out, not %d", ErrTooFewObservations, count, max(inner, 0), n)
	}
	for k := 1; k <= n; k++ {
		held[int(math.Round(float64(k)*float64(inner+1)/float64(n+1)))] = true
	}
	return held, nil
}

// pointsOf turns an observation into fit points.
func pointsOf(ec simengine.Config, kvCap int, o Observation) []Point {
	var pts []Point
	in, out := int64(o.InputTokens), int64(o.OutputTokens)
	if f := o.inFlight(); o.TTFTP50MS > 0 && f > 0 && f <= lowLoad && in <= int64(ec.MaxNumBatchedTokens) {
		pts = append(pts, newPoint(KindPrefill, o.InputTokens, 1, o.Requests, o.TTFTP50MS,
			simengine.StepCostTerms(ec.GPU, ec.Model, ec.TP, simengine.PrefillShape(in))))
	}
	if o.TPOTP50MS > 0 && out > 1 {
		b := int64(math.Round(o.inFlight()))
		b = max(1, min(b, int64(ec.MaxNumSeqs), int64(kvCap)/max(in+out, 1)))
		ctx := in + out/2
		p := newPoint(KindDecode, int(ctx), int(b), o.Requests, o.TPOTP50MS,
			simengine.StepCostTerms(ec.GPU, ec.Model, ec.TP, simengine.DecodeShape(b, ctx)))
		// Each request prefills its prompt once in its out steps: b/out
		// prompts a step. They come k at a time into a share of the steps
		// (k = 1 while fewer than one a step), the rest decode alone.
		if b > 1 {
			q := float64(b) / float64(out)
			k := max(1, math.Round(q))
			p.PromptShare = min(q/k, 1)
			t := simengine.StepCostTerms(ec.GPU, ec.Model, ec.TP, withPrompts(simengine.DecodeShape(b, ctx), int64(k), in))
			p.PWeightMS, p.PLinearMS, p.PKVMS, p.PAttnMS, p.PArMS = t.WeightNS/1e6, t.LinearNS/1e6, t.KVNS/1e6, t.AttnNS/1e6, t.AllReduceNS/1e6
		}
		pts = append(pts, p)
	}
	return pts
}

// withPrompts adds k whole prompts of in tokens to a decode step.
func withPrompts(s simengine.StepShape, k, in int64) simengine.StepShape {
	s.NewTokens += k * in
	s.CtxTokens += k * in
	s.AttnPairs += k * in * (in + 1) / 2
	return s
}

func hasKind(pts []Point, kind string) bool {
	return slices.ContainsFunc(pts, func(p Point) bool { return p.Kind == kind })
}

// pinned says, constant by constant, what the points determine.
func pinned(pts []Point, f Fit, def simengine.CostParams) []Constant {
	batches := map[int]bool{}
	for _, p := range pts {
		batches[p.seqs()] = true
	}
	undet := f.Undetermined
	memFree := !strings.Contains(undet, "memory")
	cmpFree := !strings.Contains(undet, "compute")
	count := func(kind string) int {
		n := 0
		for _, p := range pts {
			if p.Kind == kind {
				n++
			}
		}
		return n
	}
	pre := count(KindPrefill)
	why := func(ok bool, yes, no string) string {
		if ok {
			return yes
		}
		return no
	}
	return []Constant{
		{"step_overhead", f.StepOverheadMS, "ms", true, fmt.Sprintf("every step: fitted to all %d points", len(pts))},
		{"step_per_seq", f.StepPerSeqUS, "µs", len(batches) >= 2,
			why(len(batches) >= 2, fmt.Sprintf("steps of %d different batch sizes", len(batches)), "every point runs one batch size: it cannot be told from the step overhead (measure more concurrencies)")},
		{"mem_efficiency", f.MemEfficiency, "", memFree, why(memFree, fmt.Sprintf("%d memory-bound points", f.MemoryBound), fmt.Sprintf("kept at the default %.2f: fewer than two memory-bound points", def.MemEfficiency))},
		{"compute_efficiency", f.ComputeEfficiency, "", cmpFree, why(cmpFree, fmt.Sprintf("%d compute-bound points", f.ComputeBound), fmt.Sprintf("kept at the default %.2f: fewer than two compute-bound points (measure longer prompts or larger batches)", def.ComputeEfficiency))},
		{"front_end", max(f.RequestOverheadMS, 0), "ms", pre > 0, why(pre > 0, fmt.Sprintf("TTFT at one request in flight (%d load steps)", pre), fmt.Sprintf("kept at the default %.1f ms: no TTFT at one request in flight", float64(def.FrontEndNS)/1e6))},
		{"all-reduce, KV read efficiency, serial front end, memory reserve", 0, "", false, "not in the data: the defaults"},
	}
}

// reproduce simulates an observation's load with the profile's cost.
func reproduce(ctx context.Context, ec simengine.Config, cost simengine.CostParams, o Observation, n int, seed uint64) (Comparison, error) {
	sc := sim.Config{Gen: fixedLengths{in: o.InputTokens, out: o.OutputTokens}, StreamTokenTimes: true}
	closed := o.Concurrency > 0 || o.RateRPS <= 0
	conc := 0
	if closed {
		conc = max(1, int(math.Round(o.inFlight())))
		sc.Concurrency = conc
		sc.Requests = int64(min(max(8*conc, 64, n/4), 4000))
		sc.WarmupRequests = conc
	} else {
		arr, err := workload.NewArrivals("poisson", o.RateRPS, 1, seed)
		if err != nil {
			return Comparison{}, err
		}
		sc.Arrivals, sc.Requests, sc.WarmupRequests = arr, int64(n), n/10
	}
	s, err := simulate(ctx, ec, cost, sc)
	if err != nil {
		return Comparison{}, err
	}
	tps := s.OutputTokenThroughputTPS
	if closed {
		tps = closedLoopTPS(HoldOutConfig{Concurrency: conc}, s)
	}
	p := Observed{Requests: s.Completed, TTFTP50MS: s.TTFT.P50, TPOTP50MS: s.TPOT.P50, OutputTPS: tps,
		InputTokens: o.InputTokens, OutputTokens: o.OutputTokens}
	rel := func(pred, meas float64) float64 {
		if meas <= 0 || pred <= 0 {
			return math.NaN()
		}
		return relErr(pred, meas)
	}
	return Comparison{Observation: o, Predicted: p, TTFTError: rel(p.TTFTP50MS, o.TTFTP50MS),
		TPOTError: rel(p.TPOTP50MS, o.TPOTP50MS), TPSError: rel(p.OutputTPS, o.OutputTPS)}, nil
}

func summarizeErrors(cs []Comparison) MetricErrors {
	var m MetricErrors
	for _, f := range []struct {
		get       func(Comparison) float64
		med, most *float64
	}{{func(c Comparison) float64 { return c.TTFTError }, &m.TTFTMedian, &m.TTFTMax},
		{func(c Comparison) float64 { return c.TPOTError }, &m.TPOTMedian, &m.TPOTMax},
		{func(c Comparison) float64 { return c.TPSError }, &m.TPSMedian, &m.TPSMax}} {
		var v []float64
		for _, c := range cs {
			if e := f.get(c); !math.IsNaN(e) {
				v = append(v, math.Abs(e))
			}
		}
		if len(v) == 0 {
			*f.med, *f.most = math.NaN(), math.NaN()
			continue
		}
		*f.med, *f.most = median(v), slices.Max(v)
	}
	return m
}

// NewProfileFrom describes a calibration from measurements as a profile
// knee sim --profile loads.
func NewProfileFrom(ec simengine.Config, target string, res *FromResult) Profile {
	f := res.Fit
	p := Profile{
		GPU: ec.GPU.Name, Model: ec.Model.Name, TP: max(ec.TP, 1),
		Cost: ProfileCost{StepOverheadMS: round(f.StepOverheadMS, 1e3), StepPerSeqUS: round(f.StepPerSeqUS, 1e1),
			MemEfficiency: f.MemEfficiency, ComputeEfficiency: f.ComputeEfficiency,
			FrontEndMS: round(max(f.RequestOverheadMS, 0), 1e3)},
		Target:    target,
		Created:   time.Now().UTC().Truncate(time.Second),
		FitPoints: len(res.Points), FitRMSRelError: round(f.RMSRelError, 1e4),
	}
	if len(res.HeldOut) > 0 {
		h := res.HoldOutErrors
		p.HoldOutTTFTError, p.HoldOutTPOTError, p.HoldOutThroughputErr = round(h.TTFTMedian, 1e4), round(h.TPOTMedian, 1e4), round(h.TPSMedian, 1e4)
	}
	var kept []string
	for _, c := range res.Constants {
		if !c.Pinned {
			kept = append(kept, c.Name)
		}
	}
	p.Note = "fitted by knee calibrate --from to measurements made elsewhere; not pinned by them, kept at the default: " + strings.Join(kept, "; ")
	return p
}
