package web

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"sort"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/sweep"
)

// sweepRunner runs each step of a simulated sweep as the simulator page
// runs one setting: the same run (users started apart, the same request
// count and warm-up, the steady-state throughput), so the page's current
// point lies on the curve at every swept load. The sweep ran a run of its
// own before, with its users in step, and the point sat off the curve
// (64 users: 37.4 req/s against the curve's 33.7).
type sweepRunner struct {
	su *simSetup
}

func (sr *sweepRunner) Run(ctx context.Context, load sweep.Load) (sweep.Step, error) {
	su := *sr.su
	su.p.Load, su.p.Lifecycle, su.trace = load.Value, false, nil
	su.p.LoadKind = "rate"
	if load.Kind == sweep.Concurrency {
		su.p.LoadKind = "concurrency"
	}
	su.requests = runSize(&su.p)
	out, err := su.run(ctx)
	if err != nil {
		return sweep.Step{}, err
	}
	return sweep.Step{Summary: out.sum, Full: true, Warnings: out.Warnings, Energy: out.Energy}, nil
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
	runner := &sweepRunner{su: su}
	sort.Float64s(loads)
	run := func(progress func(sweep.Step)) (any, error) {
		res, err := sweep.Run(ctx, runner, sweep.Plan{Kind: kind, Loads: loads}, su.slos, progress)
		if err != nil {
			return nil, simError(err)
		}
		return sweepOutcome{Result: res, Current: su.p.Load}, nil
	}
	if streamed(r) {
		streamSteps(w, len(loads), run)
		return
	}
	res, err := run(nil)
	reply(w, res, err)
}

// streamed reports whether the page asked for a sweep's steps as they are
// computed (?stream=1) rather than one answer at the end.
func streamed(r *http.Request) bool { return r.URL.Query().Get("stream") == "1" }

// stepLine is one line of a streamed sweep (newline-delimited JSON): a
// step as it finished (Step, its Index from 1 of Of), then one last line
// with the whole answer (Result) or what went wrong (Error).
type stepLine struct {
	Step   *sweep.Step `json:"step,omitempty"`
	Index  int         `json:"index,omitempty"`
	Of     int         `json:"of,omitempty"`
	Result any         `json:"result,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// streamSteps answers a sweep as its steps finish, so the page draws each
// point when the simulator has it (issue 44: a sweep's curve appeared only
// once every step was done). of is the number of steps planned. Errors
// found before the first step are the caller's to answer as usual; once
// the stream began, an error is its last line (the status is already 200).
func streamSteps(w http.ResponseWriter, of int, run func(progress func(sweep.Step)) (any, error)) {
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	send := func(l stepLine) {
		if err := enc.Encode(l); err != nil {
			enc.Encode(stepLine{Error: "encoding the answer: " + err.Error()})
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	n := 0
	res, err := run(func(st sweep.Step) {
		n++
		send(stepLine{Step: &st, Index: n, Of: of})
	})
	if err != nil {
		send(stepLine{Error: err.Error()})
		return
	}
	send(stepLine{Result: res})
}
