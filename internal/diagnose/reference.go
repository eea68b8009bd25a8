package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// Expected is what a reference says the server should do for a run's load
// and shape: the decode time per output token after the first, and the
// prefill time of one mean prompt, in ms (0: unknown).
type Expected struct {
	TPOTMS    float64
	PrefillMS float64
}

// Reference is what a run without a baseline is judged against: a speed
// model (the simulator's presets for a known model and GPU) and objectives.
type Reference struct {
	// Source names the model, e.g. "the simulator's Llama-3.1-8B on 1× H100-SXM".
	Source string
	// Expect gives the expectation for a mean batch (requests in flight),
	// mean input and mean output tokens; nil when there is none.
	Expect func(inFlight, inputTokens, outputTokens float64) Expected
	// SLOs are objectives the window must meet (--slo).
	SLOs slo.Set
}

// Thresholds of the reference rules: the measured phase must be at least
// this many times the expectation (the expectation is the engine's steady
// state; a loaded server adds variation the model does not, hence margins
// wider than the baseline rule's ×1.25).
const (
	DecodeOverExpected  = 1.5
	PrefillOverExpected = 4.0 // a prompt also waits for the step under way and shares steps with others
)

// dominant names the phase that takes the largest share of a mean request:
// queue, prefill or decode with server phases; without them, waiting for
// the first token (queue and prefill together) or decode.
func dominant(w Facts) (phase string, share float64, ev Evidence) {
	if w.Completed == 0 || w.E2EMS <= 0 {
		return "", 0, Evidence{}
	}
	type ph struct {
		name string
		ms   float64
	}
	var phases []ph
	total := w.E2EMS
	if w.ServerPhases {
		phases = []ph{{"queue", w.QueueMS}, {"prefill", w.PrefillMS}, {"decode", w.DecodeMS}}
		total = math.Max(w.QueueMS+w.PrefillMS+w.DecodeMS, 1e-9)
	} else {
		phases = []ph{{"first_token", w.TTFTMS}, {"decode", math.Max(w.E2EMS-w.TTFTMS, 0)}}
	}
	best := phases[0]
	for _, p := range phases[1:] {
		if p.ms > best.ms {
			best = p
		}
	}
	share = best.ms / total
	var parts []string
	for _, p := range phases {
		parts = append(parts, fmt.Sprintf("%s %s (%.0f%%)", strings.ReplaceAll(p.name, "_", " "), msText(p.ms), 100*p.ms/total))
	}
	text := fmt.Sprintf("%s dominates a mean request of %s: %s", phaseTitle(best.name), msText(total), strings.Join(parts, ", "))
	if best.name == "decode" && w.TPOTMS > 0 {
		text += fmt.Sprintf("; %.3g ms per output token after the first, %.0f output tokens", w.TPOTMS, w.OutputMean)
	}
	return best.name, share, Evidence{Metric: "dominant_phase_share", Window: share, Text: text}
}

func phaseTitle(p string) string {
	switch p {
	case "first_token":
		return "Waiting for the first token (queue and prefill)"
	}
	return strings.ToUpper(p[:1]) + p[1:]
}

// judgeReference judges a window that no share rule flagged against the
// reference: its decode (and, with server phases, prefill) speed against
// the expectation, then the objectives. ok is false when nothing is slow.
func judgeReference(d *Diagnosis, w Facts, window []record.Request, ref *Reference) bool {
	if ref == nil {
		return false
	}
	floor := math.Max(DeltaFloorMS, DeltaShareOfE2E*w.E2EMS)
	outAfterFirst := math.Max(w.OutputMean-1, 0)
	if ref.Expect != nil {
		e := ref.Expect(math.Max(w.InFlight, 1), w.InputMean, w.OutputMean)
		type cand struct {
			v       Verdict
			addedMS float64
			ev      Evidence
		}
		var slow []cand
		if e.TPOTMS > 0 && w.TPOTMS > 0 {
			ratio := w.TPOTMS / e.TPOTMS
			added := (w.TPOTMS - e.TPOTMS) * outAfterFirst
			ev := Evidence{Metric: "tpot_ms", Window: w.TPOTMS, Baseline: ptr(e.TPOTMS),
				Text: fmt.Sprintf("decode %.3g ms per output token, ×%.2f the %.3g ms %s predicts at %.0f in flight (%.0f input, %.0f output tokens): adds %+.0f ms to a mean request (slow from ×%.3g and %.0f ms)",
					w.TPOTMS, ratio, e.TPOTMS, ref.Source, math.Max(w.InFlight, 1), w.InputMean, w.OutputMean, added, DecodeOverExpected, floor)}
			if ratio >= DecodeOverExpected && added >= floor {
				slow = append(slow, cand{DecodeSlowdown, added, ev})
			} else {
				d.Evidence = append(d.Evidence, ev)
			}
		}
		if e.PrefillMS > 0 && w.ServerPhases {
			ratio := w.PrefillMS / e.PrefillMS
			added := w.PrefillMS - e.PrefillMS
			ev := Evidence{Metric: "prefill_ms", Window: w.PrefillMS, Baseline: ptr(e.PrefillMS),
				Text: fmt.Sprintf("prefill %s, ×%.2f the %s %s predicts for %.0f input tokens: adds %+.0f ms (slow from ×%.3g and %.0f ms)",
					msText(w.PrefillMS), ratio, msText(e.PrefillMS), ref.Source, w.InputMean, added, PrefillOverExpected, floor)}
			if ratio >= PrefillOverExpected && added >= floor {
				slow = append(slow, cand{PrefillPressure, added, ev})
			} else {
				d.Evidence = append(d.Evidence, ev)
			}
		}
		if len(slow) > 0 {
			best := slow[0]
			for _, c := range slow[1:] {
				if c.addedMS > best.addedMS {
					best = c
				}
			}
			d.Verdict = best.v
			d.Evidence = append([]Evidence{best.ev}, withoutBasis(d.Evidence)...)
			for _, c := range slow {
				if c.v != best.v {
					d.Evidence = append(d.Evidence, c.ev)
				}
			}
			d.Basis = "no baseline: against " + ref.Source
			return true
		}
	}
	if len(ref.SLOs) > 0 {
		sum := stats.Summarize(window, stats.Options{})
		for _, r := range ref.SLOs.Evaluate(sum) {
			if r.Met || r.NoData {
				continue
			}
			v := sloPhase(r.Objective, w)
			d.Verdict = v
			d.Evidence = append([]Evidence{{Metric: "slo", Window: r.Value,
				Text: fmt.Sprintf("%s fails (measured %s): the time goes to %s", r.Objective.String(), r.Objective.Format(r.Value), phaseWord(v))}}, withoutBasis(d.Evidence)...)
			d.Basis = "no baseline: against the objectives"
			return true
		}
	}
	return false
}

// sloPhase is the phase a failed objective points to: inter-token and
// per-token objectives to decode; first-token ones to whichever of queue
// and prefill holds more of the wait; end-to-end ones to the dominant phase.
func sloPhase(o slo.Objective, w Facts) Verdict {
	firstToken := func() Verdict {
		if w.ServerPhases && w.QueueMS > w.PrefillMS {
			return QueuePressure
		}
		if !w.ServerPhases && w.RhoInFlight >= RhoStrong && math.Abs(w.RhoInput) < RhoWeak {
			return QueuePressure
		}
		return PrefillPressure
	}
	switch o.Metric {
	case "itl", "tpot":
		return DecodeSlowdown
	case "ttft", "ttft_sched":
		return firstToken()
	}
	if p, _, _ := dominant(w); p == "decode" {
		return DecodeSlowdown
	} else if p == "queue" {
		return QueuePressure
	}
	return firstToken()
}

// withoutBasis drops the "without a reference ..." remark once a reference
// judged the window.
func withoutBasis(ev []Evidence) []Evidence {
	var out []Evidence
	for _, e := range ev {
		if e.Metric != "basis" {
			out = append(out, e)
		}
	}
	return out
}

// EngineExpectation is what the simulator's cost model says the engine does
// in steady state with inFlight requests of in input and out output tokens.
// Each step makes a token for every running sequence; as sequences finish
// (b/out of them per step) new prompts join, and a step that carries a
// prompt chunk costs what its tokens cost (a prompt makes a memory-bound
// decode step compute-bound). The time per output token is the mean step:
// decode-only steps and prompt-carrying steps in that proportion. A
// prompt's prefill is its prompt-carrying steps. cfg is a resolved engine
// configuration (simengine.NewEngine(cfg).Config()).
func EngineExpectation(cfg simengine.Config) func(inFlight, in, out float64) Expected {
	return func(inFlight, in, out float64) Expected { return engineSpeeds(cfg, inFlight, in, out) }
}

func engineSpeeds(cfg simengine.Config, inFlight, in, out float64) Expected {
	b := math.Max(math.Round(inFlight), 1)
	ctx := in + out/2
	stepNS := func(s simengine.StepShape) float64 {
		c := simengine.DefaultCost
		if cfg.Cost != nil {
			c = *cfg.Cost
		}
		return simengine.StepCostTerms(cfg.GPU, cfg.Model, cfg.TP, s).NS(float64(c.StepOverheadNS), float64(c.StepPerSeqNS), c.MemEfficiency, c.ComputeEfficiency)
	}
	budget := math.Max(float64(cfg.MaxNumBatchedTokens)-(b-1), 1)
	chunks := math.Ceil(in / budget)
	chunkStep := stepNS(simengine.StepShape{Seqs: int64(b), NewTokens: int64(in/chunks + b - 1), Sampled: int64(b), CtxTokens: int64(in + (b-1)*(ctx+1)),
		AttnPairs: int64(in*(in+1)/2/chunks + (b-1)*(ctx+1))})
	decodeStep := stepNS(simengine.DecodeShape(int64(b), int64(ctx)))
	withPrompt := 1.0
	if out > 0 {
		withPrompt = math.Min(b/out*chunks, 1)
	}
	decode := (1-withPrompt)*decodeStep + withPrompt*chunkStep
	prefill := chunks * chunkStep
	return Expected{TPOTMS: decode / 1e6, PrefillMS: prefill / 1e6}
}
