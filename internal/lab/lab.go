package lab

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/diagnose"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
)

// Fixed settings every scenario shares, so the runs are identical on every
// machine.
const (
	GPU      = "h100"
	Model    = "llama-3.1-8b"
	Seed     = 20111
	RunFor   = 60 * time.Second // virtual time per run or sweep step
	Warmup   = 5 * time.Second
	SweepSLO = "p95(ttft)<2s"
)

// run is one simulated load: Poisson arrivals at RateRPS, prompt and output
// length distributions, and a step-time scale for the engine.
type run struct {
	Label     string  `json:"label"`
	RateRPS   float64 `json:"rate_rps"`
	Input     string  `json:"input_tokens"`
	Output    string  `json:"output_tokens"`
	StepScale float64 `json:"step_time_scale"`
	// MaxNumSeqs caps the running batch (0: vLLM's default for the GPU).
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
}

func (r run) String() string {
	s := fmt.Sprintf("Poisson %g req/s, input %s tokens, output %s tokens", r.RateRPS, r.Input, r.Output)
	if r.StepScale != 1 {
		s += fmt.Sprintf(", engine steps ×%g slower", r.StepScale)
	}
	if r.MaxNumSeqs > 0 {
		s += fmt.Sprintf(", at most %d requests in the batch", r.MaxNumSeqs)
	}
	return s
}

// Scenario describes one lesson.
type Scenario struct {
	Name     string
	Title    string
	Lesson   string // what to notice
	Baseline run
	Incident run
	Sweep    []float64 // rates of the sweep scenario
}

// Scenarios lists the lessons in teaching order.
var Scenarios = []Scenario{
	{Name: "queue", Title: "Queue incident: arrivals above capacity",
		Lesson: "The arrival rate rises above what the engine can serve. The batch is capped at 32 requests, as the worked pair's is, so the engine steps and each output token stay about as fast as before; the extra requests pile up in the server's waiting queue, and the queue grows with every second of overload until it is most of what a user waits for. (Without a cap the batch would grow too, and a bigger batch makes each token slower: then the decode slows as well, from the same cause.) The fix is capacity or admission control, not a faster model.",
		// Capped as the worked pair's queue side (32 sequences): uncapped,
		// the overload also grew the batch and the time per token ×11.5,
		// more than the decode incident's, which undercut "a flat decode
		// rate points to a queue".
		Baseline: run{"healthy", 20, "512:640", "128", 1, 32}, Incident: run{"overloaded", 40, "512:640", "128", 1, 32}},
	{Name: "decode", Title: "Decode incident: every engine step twice as slow",
		Lesson:   "The same traffic meets an engine whose steps take twice as long (a slower runtime, throttled GPU or a noisy neighbour). Time per output token more than doubles (slower steps also keep more requests in the batch) while the queue stays a few milliseconds: the fix is in the runtime, model or batch size.",
		Baseline: run{"healthy", 10, "512:640", "128", 1, 0}, Incident: run{"slow decode", 10, "512:640", "128", 2, 0}},
	{Name: "prefill", Title: "Prefill incident: prompts eight times longer",
		Lesson:   "The same request rate, but prompts grow eight-fold (say, a RAG change stuffs more context). Prefill time and TTFT grow with input length, and the long prefill chunks share engine steps with everyone's decode, so tokens come slower too: the fix is prompt size, prefix caching or chunked-prefill tuning.",
		Baseline: run{"healthy", 2, "512:640", "128", 1, 0}, Incident: run{"long prompts", 2, "4096:5120", "128", 1, 0}},
	{Name: "sweep", Title: "Load sweep: where the knee is and what is safe",
		// The lesson is written from the sweep's own figures (sweepLesson).
		Lesson: "Offered load rises step by step.",
		Sweep:  []float64{5, 10, 20, 30, 40, 50, 60, 65, 70, 75, 80, 90, 100, 120}},
}

// Lookup finds a scenario by name.
func Lookup(name string) (Scenario, error) {
	var names []string
	for _, s := range Scenarios {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q: want one of %v", name, names)
}

// Side is one simulated run of an incident scenario.
type Side struct {
	Run     run           `json:"run"`
	Load    string        `json:"load"`
	Summary stats.Summary `json:"summary"`
}

// Result is a scenario's outcome.
type Result struct {
	Scenario  string              `json:"scenario"`
	Title     string              `json:"title"`
	Lesson    string              `json:"lesson"`
	Engine    string              `json:"engine"`
	Seed      uint64              `json:"seed"`
	Baseline  *Side               `json:"baseline,omitempty"`
	Incident  *Side               `json:"incident,omitempty"`
	Diagnosis *diagnose.Diagnosis `json:"diagnosis,omitempty"`
	Sweep     *sweep.Result       `json:"sweep,omitempty"`
	// HighestUnder2s is the highest swept rate whose p95 TTFT is under 2 s.
	HighestUnder2s *float64 `json:"highest_rate_p95_ttft_under_2s_rps,omitempty"`
}

func engineConfig() (simengine.Config, error) {
	c := simengine.NewCatalog()
	g, err := c.LookupGPU(GPU)
	if err != nil {
		return simengine.Config{}, err
	}
	m, err := c.LookupModel(Model)
	if err != nil {
		return simengine.Config{}, err
	}
	return simengine.DefaultConfig(g, m, 1), nil
}

func simulate(ctx context.Context, ecfg simengine.Config, r run) ([]record.Request, error) {
	l, err := NewLengths(r.Input, r.Output, Seed)
	if err != nil {
		return nil, err
	}
	a, err := workload.NewArrivals("poisson", r.RateRPS, 1, Seed)
	if err != nil {
		return nil, err
	}
	ecfg.StepTimeScale = r.StepScale
	if r.MaxNumSeqs > 0 {
		ecfg.MaxNumSeqs = r.MaxNumSeqs
	}
	recs, _, err := sim.Collect(ctx, sim.Config{Engine: ecfg, Gen: l, Arrivals: a, Duration: RunFor, Warmup: Warmup, KeepTokenTimes: true})
	return recs, err
}

// Run plays a scenario on the simulator.
func Run(ctx context.Context, name string) (*Result, error) {
	return RunProgress(ctx, name, nil)
}

// RunProgress is Run, showing a sweep scenario's steps to progress (may be
// nil) as each finishes, for a page that draws them as they come.
func RunProgress(ctx context.Context, name string, progress func(sweep.Step)) (*Result, error) {
	sc, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	ecfg, err := engineConfig()
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: sc.Name, Title: sc.Title, Lesson: sc.Lesson, Seed: Seed,
		Engine: fmt.Sprintf("%s on one %s, vLLM-like defaults (simulated)", ecfg.Model.Name, ecfg.GPU.Name)}
	if sc.Sweep != nil {
		return res, runSweep(ctx, sc, ecfg, res, progress)
	}
	base, err := simulate(ctx, ecfg, sc.Baseline)
	if err != nil {
		return nil, err
	}
	inc, err := simulate(ctx, ecfg, sc.Incident)
	if err != nil {
		return nil, err
	}
	res.Baseline = &Side{Run: sc.Baseline, Load: sc.Baseline.String(), Summary: stats.Summarize(base, stats.Options{OfferedRateRPS: sc.Baseline.RateRPS})}
	res.Incident = &Side{Run: sc.Incident, Load: sc.Incident.String(), Summary: stats.Summarize(inc, stats.Options{OfferedRateRPS: sc.Incident.RateRPS})}
	d := diagnose.Diagnose(inc, diagnose.Options{Baseline: base, BaselineName: "the healthy run (" + sc.Baseline.String() + ")"})
	res.Diagnosis = &d
	return res, nil
}

// sweepOver runs the sweep scenario's load at the given rates, each step
// runFor long.
func sweepOver(ctx context.Context, ecfg simengine.Config, rates []float64, runFor time.Duration, progress func(sweep.Step)) (*sweep.Result, error) {
	l, err := NewLengths("512:640", "128", Seed)
	if err != nil {
		return nil, err
	}
	set, err := slo.ParseAll([]string{SweepSLO})
	if err != nil {
		return nil, err
	}
	r := &sweep.SimRunner{Engine: ecfg, Gen: l, Duration: runFor, Warmup: Warmup, SLOs: set,
		Arrivals: func(rate float64) (sim.Arrivals, error) { return workload.NewArrivals("poisson", rate, 1, Seed) }}
	return sweep.Run(ctx, r, sweep.Plan{Kind: sweep.Rate, Loads: rates}, set, progress)
}

func runSweep(ctx context.Context, sc Scenario, ecfg simengine.Config, res *Result, progress func(sweep.Step)) error {
	sr, err := sweepOver(ctx, ecfg, sc.Sweep, RunFor, progress)
	if err != nil {
		return err
	}
	sr.Notes = append(sr.Notes, fmt.Sprintf("%s; every step %v of Poisson arrivals, input 512:640 tokens, output 128, seed %d", res.Engine, RunFor, Seed))
	res.Sweep = sr
	res.Lesson = sweepLesson(sr)
	steps := append([]sweep.Step(nil), sr.Steps...)
	sort.Slice(steps, func(i, j int) bool { return steps[i].Load.Value > steps[j].Load.Value })
	for _, s := range steps {
		if s.Summary.TTFT.Count > 0 && s.Summary.TTFT.P95 < 2000 {
			v := s.Load.Value
			res.HighestUnder2s = &v
			break
		}
	}
	return nil
}

// DipExplained is the share by which the last step's throughput may fall
// short of the sweep's best before the lesson explains the dip.
const DipExplained = 0.02

// sweepLesson says what the sweep shows from its own figures: a fixed
// "throughput flattens" sat above a table whose throughput fell 7% past
// the knee. The figures are written as the UI's fmt writes them, so the
// sentence and the table beside it read alike.
func sweepLesson(sr *sweep.Result) string {
	if len(sr.Steps) < 2 || !sr.Knee.Found() {
		return "Offered load rises step by step; the knee is where the throughput curve bends, the SLO-safe point the highest load whose p95 TTFT stays under 2 s."
	}
	first, last, knee := sr.Steps[0], sr.Steps[len(sr.Steps)-1], sr.Steps[sr.Knee.Index]
	best := first
	for _, s := range sr.Steps {
		if s.Summary.RequestThroughputRPS > best.Summary.RequestThroughputRPS {
			best = s
		}
	}
	rps := func(s sweep.Step) float64 { return s.Summary.RequestThroughputRPS }
	load := func(s sweep.Step) string { return strconv.FormatFloat(s.Load.Value, 'f', -1, 64) }
	var b strings.Builder
	fmt.Fprintf(&b, "Offered load rises step by step. Throughput grows with load, from %s req/s at %s req/s offered to %s req/s at %s, then stops growing: ",
		uiNum(rps(first)), load(first), uiNum(rps(best)), load(best))
	dip := 1 - rps(last)/rps(best)
	if dip <= DipExplained {
		fmt.Fprintf(&b, "at %s req/s offered it serves %s req/s, within %.0f%% of its best.", load(last), uiNum(rps(last)), 100*DipExplained)
	} else {
		fmt.Fprintf(&b, "at %s req/s offered it serves %s req/s, %.0f%% less. ", load(last), uiNum(rps(last)), 100*dip)
		// Why it dips (TestSweepDipIsTheWarmupBacklog holds this): the
		// engine serves as many requests a second as before, but the step
		// counts only those sent after its warm-up.
		fmt.Fprintf(&b, "The engine serves no fewer requests a second there: each %.0f s step leaves out the requests of its first %.0f s as warm-up, yet past capacity most of them (%d at %s req/s) are still queued when the measured window opens, and the engine spends part of that window serving them uncounted; the deeper the overload, the longer the backlog. Steps five times longer measure the same capacity within a few percent.",
			RunFor.Seconds(), Warmup.Seconds(), last.Summary.Window.ExcludedWarmup, load(last))
	}
	fmt.Fprintf(&b, " Meanwhile p95 TTFT goes from %s at %s req/s to %s at the knee (%s req/s) and %s at %s req/s, as a queue forms. The knee is where the curve bends; the SLO-safe point is the highest load whose p95 TTFT stays under 2 s.",
		uiMS(first.Summary.TTFT.P95), load(first), uiMS(knee.Summary.TTFT.P95), load(knee), uiMS(last.Summary.TTFT.P95), load(last))
	return b.String()
}

// uiNum writes a number as the UI's fmt does (api.js): three significant
// figures or so, whole numbers from 100 up.
func uiNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// uiMS writes milliseconds as the UI's fmt(v, 'ms') does.
func uiMS(v float64) string {
	switch a := math.Abs(v); {
	case a >= 10000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
	case a >= 1000:
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + " s"
	default:
		return uiNum(v) + " ms"
	}
}
