package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// SimRunner measures a load level on the simulator in virtual time: every
// step is a fresh engine, the same workload (lengths are a function of the
// request index) and, for rate steps, a fresh arrival schedule from the
// same seed — so steps differ only in load.
type SimRunner struct {
	Engine simengine.Config
	Gen    sim.Lengths
	// Arrivals builds the open-loop schedule for a rate step.
	Arrivals func(rateRPS float64) (sim.Arrivals, error)
	// Per step: requests and/or virtual duration (whichever ends first),
	// and the warm-up excluded from statistics.
	Requests       int64
	Duration       time.Duration
	Warmup         time.Duration
	WarmupRequests int
	SLOs           slo.Set // for goodput
	// OnRecord, when set, sees every record of every step (reused: copy
	// what you keep), e.g. to write records.jsonl.
	OnRecord func(load Load, r *record.Request)
	// Replicas > 1 runs each step against that many copies of Engine behind
	// Router (sim.RunFleet); the load is the fleet's.
	Replicas int
	Router   string
	// Client is the benchmark client the steps are measured by (sim.Client;
	// zero: knee's own). A chunk cost needs token times for the
	// inter-token statistics, which StreamTokenTimes gives.
	Client sim.Client
	// ServerLoop is the server's streaming loop (sim.ServerLoop; zero: one
	// that keeps up).
	ServerLoop sim.ServerLoop
	// Class names request i's traffic class and LoRA adapter (sim.Config's),
	// and Classes the classes each step is summarised and judged by (a
	// --mix; nil: none).
	Class   func(i int64) (name string, adapter int32)
	Classes *Classes
	// Probes are sent beside every step (sim.Probes); their p95 TTFT is the
	// step's ProbeTTFTP95, and the step's figures are the main load's.
	Probes sim.Probes
	// Pools and Pool are a mix's own-concurrency classes (sim.Config's):
	// user pools beside every concurrency step's users, the same at every
	// step (a rate step refuses them: a run is open or closed loop).
	Pools []int
	Pool  func(id int64, pool int)
	// GPUPriceUSDPerHour prices each step's GPU time (--gpu-price; 0: no
	// dollar figures).
	GPUPriceUSDPerHour float64
}

// Run simulates one step.
func (sr *SimRunner) Run(ctx context.Context, load Load) (Step, error) {
	cfg := sim.Config{Engine: sr.Engine, Gen: sr.Gen, Requests: sr.Requests, Duration: sr.Duration,
		Warmup: sr.Warmup, WarmupRequests: sr.WarmupRequests, StreamTokenTimes: true, Client: sr.Client, ServerLoop: sr.ServerLoop,
		Class: sr.Class, Probes: sr.Probes, Pools: sr.Pools, Pool: sr.Pool}
	opts := stats.Options{}
	if len(sr.SLOs) > 0 {
		opts.Good = sr.SLOs.Good
	}
	switch load.Kind {
	case Concurrency:
		cfg.Concurrency = int(load.Value)
	case Rate:
		if sr.Arrivals == nil {
			return Step{}, fmt.Errorf("simulator: no arrival schedule for rate steps")
		}
		a, err := sr.Arrivals(load.Value)
		if err != nil {
			return Step{}, err
		}
		cfg.Arrivals = a
		opts.OfferedRateRPS = load.Value
		// A replayed trace is its own workload: lengths with arrivals.
		if l, ok := a.(sim.Lengths); ok {
			cfg.Gen = l
		}
		if c, ok := a.(interface{ Close() }); ok {
			defer c.Close()
		}
	}
	acc, probes := stats.NewAccumulator(opts), stats.NewAccumulator(stats.Options{})
	classes := sr.Classes.Accumulate(opts, sr.SLOs)
	onRecord := func(r *record.Request) {
		if r.Class == record.ProbeClass {
			probes.Add(r)
		} else {
			acc.Add(r)
			classes.Add(r)
		}
		if sr.OnRecord != nil {
			sr.OnRecord(load, r)
		}
	}
	var err error
	var res sim.Result
	if sr.Replicas > 1 {
		var fr sim.FleetResult
		fr, err = sim.RunFleet(ctx, sim.FleetConfig{Config: cfg, Count: sr.Replicas, Router: sr.Router}, onRecord)
		res = fr.Result
	} else {
		res, err = sim.Run(ctx, cfg, onRecord)
	}
	if err != nil {
		return Step{}, err
	}
	sum := acc.Summary()
	step := Step{Load: load, Summary: sum, Full: true, Classes: classes.Steps(&sum),
		Energy: energy.New(energy.SourceModel, res.Engine.GPUs, res.End.Seconds(), res.Engine.EnergyJ, res.Tokens, res.Completed, sr.GPUPriceUSDPerHour)}
	if p := probes.Summary(); p.TTFT.Count > 0 {
		step.ProbeTTFTP95 = &p.TTFT.P95
	}
	return step, nil
}
