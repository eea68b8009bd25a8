package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/diagnose"
	"github.com/knee-dev/knee/internal/lab"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
)

func (s *Server) apiLab(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Scenario string `json:"scenario"`
	}
	if err := decodeBody(r, &q); err != nil {
		reply(w, nil, err)
		return
	}
	sc, err := lab.Lookup(q.Scenario)
	if err != nil {
		reply(w, nil, badf("scenario: %v", err))
		return
	}
	if streamed(r) {
		// A scenario without a sweep streams only its answer.
		streamSteps(w, len(sc.Sweep), func(progress func(sweep.Step)) (any, error) {
			return lab.RunProgress(r.Context(), q.Scenario, progress)
		})
		return
	}
	res, err := lab.Run(r.Context(), q.Scenario)
	reply(w, res, err)
}

// The worked pair: two runs whose requests take the same time end to end
// on average, one because they wait in a queue, one because every decode
// step is slow — and what knee's diagnosis says of each against the same
// healthy baseline. Both are simulated (the lab's engine and workload);
// the slow-decode factor is searched so the mean E2E latencies match.
//
// The engine admits at most pairMaxSeqs requests at once (an admission
// limit, as a deployment sets one), so an overload shows as a queue rather
// than as ever larger, slower batches.
const (
	pairRunFor        = 20 * time.Second
	pairWarmup        = 3 * time.Second
	pairMaxSeqs       = 32
	pairBaselineRPS   = 4
	pairQueueRPS      = 32
	pairSearchSteps   = 14
	pairMaxStepFactor = 5.0
)

type pairSide struct {
	Title     string             `json:"title"`
	Load      string             `json:"load"`
	StepScale float64            `json:"step_time_scale"`
	MeanMS    phaseMeans         `json:"mean_ms"`
	Summary   stats.Summary      `json:"summary"`
	Diagnosis diagnose.Diagnosis `json:"diagnosis"`
}

type phaseMeans struct {
	Queue   float64 `json:"queue"`
	Prefill float64 `json:"prefill"`
	Decode  float64 `json:"decode"`
	E2E     float64 `json:"e2e"`
}

type pairResult struct {
	Engine   string     `json:"engine"`
	Baseline phaseMeans `json:"baseline_mean_ms"`
	Queue    pairSide   `json:"queue_dominated"`
	Decode   pairSide   `json:"decode_dominated"`
	// Lesson is the seed lesson's own pair and load table, through knee's
	// diagnosis and sweep analysis, shown beside the simulated pair.
	Lesson *lessonResult `json:"lesson"`
}

func pairRun(ctx context.Context, ecfg simengine.Config, rate, scale float64) ([]record.Request, error) {
	l, err := lab.NewLengths("512:640", "128", lab.Seed)
	if err != nil {
		return nil, err
	}
	a, err := workload.NewArrivals("poisson", rate, 1, lab.Seed)
	if err != nil {
		return nil, err
	}
	ecfg.StepTimeScale = scale
	recs, _, err := sim.Collect(ctx, sim.Config{Engine: ecfg, Gen: l, Arrivals: a, Duration: pairRunFor, Warmup: pairWarmup})
	return recs, err
}

func meansOf(recs []record.Request) phaseMeans {
	var m phaseMeans
	n := 0
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !r.OK() || r.ServerPhases == nil {
			continue
		}
		e2e, _ := r.E2E()
		m.Queue += ms(r.ServerPhases.Queue + r.Lag())
		m.Prefill += ms(r.ServerPhases.Prefill)
		m.Decode += ms(r.ServerPhases.Decode)
		m.E2E += ms(e2e)
		n++
	}
	if n > 0 {
		m.Queue, m.Prefill, m.Decode, m.E2E = m.Queue/float64(n), m.Prefill/float64(n), m.Decode/float64(n), m.E2E/float64(n)
	}
	return m
}

func buildPair(ctx context.Context) (*pairResult, error) {
	cat := simengine.NewCatalog()
	g, err := cat.LookupGPU(lab.GPU)
	if err != nil {
		return nil, err
	}
	m, err := cat.LookupModel(lab.Model)
	if err != nil {
		return nil, err
	}
	ecfg := simengine.DefaultConfig(g, m, 1)
	ecfg.MaxNumSeqs = pairMaxSeqs
	base, err := pairRun(ctx, ecfg, pairBaselineRPS, 1)
	if err != nil {
		return nil, err
	}
	queue, err := pairRun(ctx, ecfg, pairQueueRPS, 1)
	if err != nil {
		return nil, err
	}
	target := meansOf(queue).E2E
	// Mean E2E grows with the step-time factor: bisect for the factor at
	// which the slow-decode run takes as long as the queued one.
	lo, hi := 1.0, pairMaxStepFactor
	var decode []record.Request
	scale := hi
	for range pairSearchSteps {
		scale = (lo + hi) / 2
		if decode, err = pairRun(ctx, ecfg, pairBaselineRPS, scale); err != nil {
			return nil, err
		}
		if meansOf(decode).E2E < target {
			lo = scale
		} else {
			hi = scale
		}
	}
	bname := "the healthy run (" + trimFloat(pairBaselineRPS) + " req/s)"
	side := func(title string, recs []record.Request, rate, scale float64) pairSide {
		return pairSide{Title: title, Load: workload.ArrivalPoisson + " " + trimFloat(rate) + " req/s", StepScale: scale, MeanMS: meansOf(recs),
			Summary:   stats.Summarize(recs, stats.Options{OfferedRateRPS: rate}),
			Diagnosis: diagnose.Diagnose(recs, diagnose.Options{Baseline: base, BaselineName: bname})}
	}
	lesson, err := buildLesson()
	if err != nil {
		return nil, err
	}
	return &pairResult{Lesson: lesson, Engine: fmt.Sprintf("%s on one %s, at most %d requests in the batch (simulated)", ecfg.Model.Name, ecfg.GPU.Name, pairMaxSeqs), Baseline: meansOf(base),
		Queue:  side("Queue-dominated: arrivals above capacity", queue, pairQueueRPS, 1),
		Decode: side("Decode-dominated: every engine step slower", decode, pairBaselineRPS, scale)}, nil
}

func (s *Server) apiPair(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p := s.pair
	s.mu.Unlock()
	if p == nil {
		var err error
		if p, err = buildPair(r.Context()); err != nil {
			reply(w, nil, err)
			return
		}
		s.mu.Lock()
		s.pair = p
		s.mu.Unlock()
	}
	reply(w, p, nil)
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
