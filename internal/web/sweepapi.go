package web

import (
	"context"
	"math"
	"net/http"
	"sort"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
)

// sweepStepFor is the virtual time of an open-loop sweep step.
const sweepStepFor = 20 * time.Second

// sweepRunner is the sweep package's simulator runner with a request count
// sized per step: a closed-loop step needs several turns of every user.
type sweepRunner struct {
	base sweep.SimRunner
}

func (sr *sweepRunner) Run(ctx context.Context, load sweep.Load) (sweep.Step, error) {
	r := sr.base
	// An open-loop step runs for a fixed virtual time, so an overload has
	// as long to build its queue at every rate and the SLO-safe point is
	// not an artefact of a short run.
	r.Duration, r.Warmup, r.Requests = sweepStepFor, sweepStepFor/10, 2*maxRequests
	if load.Kind == sweep.Concurrency {
		r.Duration, r.Warmup = 0, 0
		// The same steady-state run length as the simulator page's, so the
		// curve and the page's figures agree.
		n, w := closedLoopRun(int(load.Value))
		r.Requests, r.WarmupRequests = int64(n), w
		win := steadyWindow{users: int(load.Value)}
		r.OnRecord = func(_ sweep.Load, rec *record.Request) { win.add(rec) }
		st, err := r.Run(ctx, load)
		applySteady(&st.Summary, &win)
		return st, err
	}
	return r.Run(ctx, load)
}

// sweepLoads is the grid a simulated sweep steps over: powers of two up to
// four times the engine's batch limit for concurrency (at most 1,024); fractions of the engine's
// saturated throughput for rate (found by one closed-loop run at the batch
// limit), so the curve bends inside the grid whatever the preset.
func sweepLoads(ctx context.Context, su *simSetup) ([]float64, error) {
	// The batch limit as the engine resolves it (0 in the config means
	// vLLM's default for the GPU).
	eng, err := simengine.NewEngine(su.engine)
	if err != nil {
		return nil, badf("%v", err)
	}
	// A fleet batches replicas × the engine's limit.
	seqs := eng.Config().MaxNumSeqs * max(su.p.Replicas, 1)
	if su.p.LoadKind == "concurrency" {
		// Independent of the current load (the page reruns the sweep only
		// when something else changes), and covering the whole slider.
		top := min(maxConcurrency, max(64, 4*seqs))
		var loads []float64
		for c := 1; c <= top; c *= 2 {
			loads = append(loads, float64(c))
		}
		return loads, nil
	}
	capSetup := *su
	capSetup.p.LoadKind, capSetup.p.Lifecycle = "concurrency", false
	capSetup.p.Load = float64(min(seqs, 512*max(su.p.Replicas, 1), maxConcurrency))
	capSetup.requests, _ = closedLoopRun(int(capSetup.p.Load))
	out, err := capSetup.run(ctx)
	if err != nil {
		return nil, err
	}
	capRPS := out.Summary.ThroughputRPS
	if capRPS <= 0 {
		return nil, badf("the engine completed nothing at its batch limit: check the model and GPU")
	}
	var loads []float64
	for _, f := range []float64{0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 1, 1.1, 1.25, 1.5} {
		loads = append(loads, roundSig(f*capRPS))
	}
	return loads, nil
}

// roundSig rounds to two significant figures, so the grid reads cleanly.
func roundSig(v float64) float64 {
	if v <= 0 {
		return v
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-1)
	return math.Round(v/p) * p
}

type sweepOutcome struct {
	*sweep.Result
	Current float64 `json:"current_load"`
}

func (s *Server) apiSweep(w http.ResponseWriter, r *http.Request) {
	var p SimParams
	if err := decodeBody(r, &p); err != nil {
		reply(w, nil, err)
		return
	}
	su, err := p.setup()
	if err != nil {
		reply(w, nil, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 4*simTimeout)
	defer cancel()
	loads, err := sweepLoads(ctx, su)
	if err != nil {
		reply(w, nil, simError(err))
		return
	}
	kind := sweep.Concurrency
	if su.p.LoadKind == "rate" {
		kind = sweep.Rate
	}
	seed := su.p.Seed
	runner := &sweepRunner{base: sweep.SimRunner{Engine: su.engine, Gen: su.lengths, SLOs: su.slos,
		Arrivals: func(rate float64) (sim.Arrivals, error) { return workload.NewArrivals("poisson", rate, 1, seed) },
		Replicas: su.p.Replicas, Router: su.p.Router}}
	sort.Float64s(loads)
	res, err := sweep.Run(ctx, runner, sweep.Plan{Kind: kind, Loads: loads}, su.slos, nil)
	if err != nil {
		reply(w, nil, simError(err))
		return
	}
	reply(w, sweepOutcome{Result: res, Current: su.p.Load}, nil)
}
