package web

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"
)

// The Learn page's claims: each sentence the page states about how the
// service behaves, with the two simulator settings that show it and the
// direction that must hold between them. The page (GET /api/learn) and the
// engine test (learnapi_test.go) read this one table, so the text cannot
// drift from what the engine does.

// learnSection is one section of the Learn page: the settings its live
// element starts from and the claims it makes.
type learnSection struct {
	ID      string       `json:"id"`
	Base    SimParams    `json:"base"`
	Command string       `json:"command"` // the knee command that does the same on a real server
	Claims  []learnClaim `json:"claims"`
}

// learnClaim says: going from the section's Base with From applied to
// Base with To applied, the ratio of Metric (to / from), divided by the
// ratio of Over (1 when Over is empty), is at least AtLeast (when set) and
// at most AtMost (when set).
type learnClaim struct {
	ID      string    `json:"id"`
	Text    string    `json:"text"`
	From    SimParams `json:"from"` // the fields that differ from Base (zero: unchanged)
	To      SimParams `json:"to"`
	Metric  string    `json:"metric"`
	Over    string    `json:"over,omitempty"`
	AtLeast float64   `json:"at_least,omitempty"`
	AtMost  float64   `json:"at_most,omitempty"`
}

// learnMetrics names the figures a claim may compare, as the page shows them.
var learnMetrics = map[string]func(*simFigures) float64{
	"ttft_p50_ms":     func(f *simFigures) float64 { return f.TTFTMS.P50 },
	"ttft_p95_ms":     func(f *simFigures) float64 { return f.TTFTMS.P95 },
	"ttft_p99_ms":     func(f *simFigures) float64 { return f.TTFTMS.P99 },
	"tpot_p50_ms":     func(f *simFigures) float64 { return f.TPOTMS.P50 },
	"e2e_p50_ms":      func(f *simFigures) float64 { return f.E2EMS.P50 },
	"e2e_p99_ms":      func(f *simFigures) float64 { return f.E2EMS.P99 },
	"queue_p50_ms":    func(f *simFigures) float64 { return f.QueueMS.P50 },
	"throughput_rps":  func(f *simFigures) float64 { return f.ThroughputRPS },
	"output_tps":      func(f *simFigures) float64 { return f.OutputTPS },
	"decode_rate_tps": func(f *simFigures) float64 { return f.DecodeRateTPS },
}

// learnBase is the page's starting point: the simulator page's defaults.
func learnBase(load float64) SimParams {
	return SimParams{LoadKind: "concurrency", Load: load, InputTokens: "512", OutputTokens: "128", MaxNumSeqs: 256}
}

var learnSections = func() []learnSection {
	phases := learnBase(16)
	phases.LoadKind, phases.Load, phases.MaxNumSeqs = "rate", 20, 32
	real := learnBase(50)
	real.LoadKind = "rate"
	return []learnSection{
		{ID: "tokens", Base: learnBase(1), Command: "knee bench --url URL --model M --concurrency 1 --input-tokens 4096 --output-tokens 128", Claims: []learnClaim{
			{ID: "prompt-ttft", Text: "Eight times the prompt raises the time to first token several times more than the time per output token: prompt tokens are prefill work, done before the first token.",
				To: SimParams{InputTokens: "4096"}, Metric: "ttft_p50_ms", Over: "tpot_p50_ms", AtLeast: 3},
			{ID: "output-e2e", Text: "Eight times the output raises the end-to-end latency several times more than the time to first token: output tokens are decode steps, one after another after the first.",
				To: SimParams{OutputTokens: "1024"}, Metric: "e2e_p50_ms", Over: "ttft_p50_ms", AtLeast: 3},
			{ID: "output-tpot", Text: "The time per output token hardly moves with eight times the output: each step still makes one token per request.",
				To: SimParams{OutputTokens: "1024"}, Metric: "tpot_p50_ms", AtMost: 1.3},
			{ID: "rps-tokens", Text: "For the same user, eight times the output cuts the requests per second to well under half: a request rate says nothing without its token sizes.",
				To: SimParams{OutputTokens: "1024"}, Metric: "throughput_rps", AtMost: 0.4},
		}},
		{ID: "phases", Base: phases, Command: "knee diagnose --baseline healthy/records.jsonl slow/records.jsonl", Claims: []learnClaim{
			{ID: "queue-not-decode", Text: "With the batch capped at 32 requests, twice the arrivals (past what 32 sequences serve) make p95 TTFT grow many times more than the time per output token: the new time is spent waiting, not decoding.",
				To: SimParams{Load: 40}, Metric: "ttft_p95_ms", Over: "tpot_p50_ms", AtLeast: 3},
			{ID: "queue-forms", Text: "A queue forms once arrivals pass what the batch serves: at twice the arrivals the median request waits in the queue more than ten times as long.",
				To: SimParams{Load: 40}, Metric: "queue_p50_ms", AtLeast: 10},
		}},
		{ID: "curve", Base: learnBase(64), Command: "knee sweep --url URL --model M --concurrency auto --slo 'p95(ttft)<2s'", Claims: []learnClaim{
			{ID: "below-knee", Text: "Below the knee, eight times the users (4 to 32) serve several times the requests per second.",
				From: SimParams{Load: 4}, To: SimParams{Load: 32}, Metric: "throughput_rps", AtLeast: 3},
			{ID: "past-knee", Text: "Past the knee, four times the users (256 to 1,024) raise p95 TTFT many times more than throughput: the extra users queue.",
				From: SimParams{Load: 256}, To: SimParams{Load: 1024}, Metric: "ttft_p95_ms", Over: "throughput_rps", AtLeast: 5},
			{ID: "flat-past-saturation", Text: "Past saturation throughput stays flat: from 256 to 1,024 users it moves by less than 10% either way. The batch is full; more users only lengthen the queue. (A real engine's throughput falls there only when something makes it: KV-cache preemption recomputing requests, or a client that cannot keep up.)",
				From: SimParams{Load: 256}, To: SimParams{Load: 1024}, Metric: "throughput_rps", AtLeast: 0.9, AtMost: 1.1},
		}},
		{ID: "realism", Base: real, Command: "knee bench --url URL --model M --trace production.jsonl", Claims: []learnClaim{
			{ID: "varied-median", Text: "Lengths that vary as production's do, with the same means, leave the median end-to-end latency no higher (the many short answers even lower it)…",
				To: SimParams{InputTokens: "lognormal:512,256", OutputTokens: "lognormal:128,96"}, Metric: "e2e_p50_ms", AtMost: 1.05},
			{ID: "varied-tail", Text: "…but at least double the p99 against the median: a fixed-length benchmark hides the tail.",
				To: SimParams{InputTokens: "lognormal:512,256", OutputTokens: "lognormal:128,96"}, Metric: "e2e_p99_ms", Over: "e2e_p50_ms", AtLeast: 2},
		}},
		{ID: "traps", Base: learnBase(256), Command: "knee sweep --url URL --model M --concurrency auto --slo 'p95(ttft)<2s', then knee diagnose", Claims: []learnClaim{
			{ID: "busy-flat", Text: "At 256 users the batch is full (256 sequences): four times the users serve no more requests per second…",
				To: SimParams{Load: 1024}, Metric: "throughput_rps", AtLeast: 0.9, AtMost: 1.1},
			{ID: "busy-queue", Text: "…but wait in the queue many times longer: a busy GPU says nothing about the users waiting for it.",
				To: SimParams{Load: 1024}, Metric: "queue_p50_ms", AtLeast: 10},
			{ID: "short-prompts", Text: "At the same 256 users, 128-token prompts serve several times the requests per second that 2,048-token prompts do: a short-prompt benchmark oversizes what a server can take.",
				From: SimParams{InputTokens: "128"}, To: SimParams{InputTokens: "2048"}, Metric: "throughput_rps", AtMost: 0.4},
		}},
	}
}()

// applyChange is base with the non-zero fields of change.
func applyChange(base, change SimParams) SimParams {
	p := base
	if change.LoadKind != "" {
		p.LoadKind = change.LoadKind
	}
	if change.Load != 0 {
		p.Load = change.Load
	}
	if change.InputTokens != "" {
		p.InputTokens = change.InputTokens
	}
	if change.OutputTokens != "" {
		p.OutputTokens = change.OutputTokens
	}
	if change.MaxNumSeqs != 0 {
		p.MaxNumSeqs = change.MaxNumSeqs
	}
	return p
}

// claimCheck is a claim run on the engine: the figures on both sides and
// whether the direction held.
type claimCheck struct {
	From      float64 `json:"from"` // Metric
	To        float64 `json:"to"`
	OverFrom  float64 `json:"over_from"` // Over (1 when none)
	OverTo    float64 `json:"over_to"`
	Value     float64 `json:"value"` // ratio of Metric over ratio of Over
	Holds     bool    `json:"holds"`
	ComputeMS float64 `json:"compute_ms"`
}

func (c claimCheck) String() string {
	return fmt.Sprintf("%.4g → %.4g (over %.4g → %.4g): %.3g", c.From, c.To, c.OverFrom, c.OverTo, c.Value)
}

// check runs a claim of section s on the engine.
func (c learnClaim) check(ctx context.Context, s learnSection) (claimCheck, error) {
	var out claimCheck
	run := func(p SimParams) (*simFigures, error) {
		su, err := p.setup()
		if err != nil {
			return nil, err
		}
		o, err := su.run(ctx)
		if err != nil {
			return nil, err
		}
		return &o.Summary, nil
	}
	metric, ok := learnMetrics[c.Metric]
	if !ok {
		return out, fmt.Errorf("claim %s: unknown metric %q", c.ID, c.Metric)
	}
	over := func(*simFigures) float64 { return 1 }
	if c.Over != "" {
		if over, ok = learnMetrics[c.Over]; !ok {
			return out, fmt.Errorf("claim %s: unknown metric %q", c.ID, c.Over)
		}
	}
	a, err := run(applyChange(s.Base, c.From))
	if err != nil {
		return out, err
	}
	b, err := run(applyChange(s.Base, c.To))
	if err != nil {
		return out, err
	}
	out.From, out.To, out.OverFrom, out.OverTo = metric(a), metric(b), over(a), over(b)
	out.Value = (out.To / out.From) / (out.OverTo / out.OverFrom)
	out.Holds = (c.AtLeast == 0 || out.Value >= c.AtLeast) && (c.AtMost == 0 || out.Value <= c.AtMost)
	return out, nil
}

// learnTrace describes the trace knee ui replays, for section 4.
type learnTrace struct {
	Name         string  `json:"name"`
	Format       string  `json:"format"`
	Requests     int     `json:"requests"`
	MeanRateRPS  float64 `json:"mean_rate_rps"` // as recorded
	InputTokens  int64   `json:"mean_input_tokens"`
	OutputTokens int64   `json:"mean_output_tokens"`
}

func (s *Server) apiLearn(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"sections": learnSections}
	if t := s.cfg.Trace; t != nil {
		i := t.Info()
		if i.Kept > 0 {
			out["trace"] = learnTrace{Name: filepath.Base(i.Path), Format: i.Format, Requests: i.Kept, MeanRateRPS: i.MeanRateRPS / i.Speedup,
				InputTokens: i.InputTokens / int64(i.Kept), OutputTokens: i.OutputTokens / int64(i.Kept)}
		}
	}
	reply(w, out, nil)
}

// apiLearnCheck runs one claim on the engine, as the engine test does, so
// the page shows the figures behind every sentence it states.
func (s *Server) apiLearnCheck(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Section string `json:"section"`
		Claim   string `json:"claim"`
	}
	if err := decodeBody(r, &q); err != nil {
		reply(w, nil, err)
		return
	}
	for _, sec := range learnSections {
		for _, c := range sec.Claims {
			if sec.ID == q.Section && c.ID == q.Claim {
				start := time.Now()
				res, err := c.check(r.Context(), sec)
				res.ComputeMS = float64(time.Since(start).Microseconds()) / 1000
				reply(w, res, err)
				return
			}
		}
	}
	reply(w, nil, badf("section %q, claim %q: no such claim (GET /api/learn lists them)", q.Section, q.Claim))
}
