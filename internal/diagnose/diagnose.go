package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/knee-dev/knee/internal/record"
)

// Verdict names the bottleneck.
type Verdict string

// The verdicts of SPEC §3.
const (
	Healthy          Verdict = "healthy"
	QueuePressure    Verdict = "queue_pressure"
	PrefillPressure  Verdict = "prefill_pressure"
	DecodeSlowdown   Verdict = "decode_slowdown"
	Errors           Verdict = "errors"
	ClientBottleneck Verdict = "client_bottleneck"
	// DecodeBound and PrefillBound are the verdicts of a run with nothing to
	// compare against in which one phase is most of a request of a second or
	// more: knee cannot call the phase slow, but it is where the time goes
	// and what to check first.
	DecodeBound  Verdict = "decode_bound"
	PrefillBound Verdict = "prefill_bound"
)

// Actions maps each verdict to what it points to.
var Actions = map[Verdict]string{
	Healthy:          "no action: no phase grew beyond the thresholds",
	QueuePressure:    "capacity or admission control: requests wait to be admitted. Add replicas or batch slots (max_num_seqs, KV memory) if memory allows, cap the offered load at the SLO-safe point (knee sweep), or shed load early with a bounded queue",
	PrefillPressure:  "prompt size and chunking: processing the input dominates. Shorten or deduplicate prompts, enable prefix caching for shared prefixes, tune chunked prefill (max_num_batched_tokens), or separate prefill from decode",
	DecodeSlowdown:   "runtime, model or batch: each output token takes longer. Check GPU clocks, other tenants, a runtime or kernel change, quantization and model size, and whether max_num_seqs packs more sequences per step than the latency target allows",
	Errors:           "fix the errors first: failed requests make every latency figure unreliable. See the error kinds and the server's logs",
	DecodeBound:      "decode is where the time goes: compare its ms per output token with the model's expected decode speed (--gpu and --model give the simulator's expectation, --baseline a known-good run, or an objective such as --slo 'mean(tpot)<20ms'); if it is slower, look at the runtime, the model (size, quantization) and the batch (max_num_seqs)",
	PrefillBound:     "prefill is where the time goes: compare it with the model's expected prefill time for these prompts (--gpu and --model, --baseline, or a --slo on ttft); if it is slower, look at prompt size, prefix caching and the chunked-prefill budget",
	ClientBottleneck: "the load generator fell behind its own schedule: give it more CPU, run fewer streams per process or several clients (knee selftest shows the overhead floor); server figures are not trustworthy until then",
}

// Evidence is one observation behind a verdict.
type Evidence struct {
	Metric   string   `json:"metric"`             // what was measured, with its unit (queue_ms, ttft_in_flight_rho, ...)
	Window   float64  `json:"window"`             // its value in the window
	Baseline *float64 `json:"baseline,omitempty"` // its value in the baseline, when there is one
	Text     string   `json:"text"`               // the observation in words
}

// Diagnosis is the documented output: {"verdict", "evidence", "action"}
// plus the basis of comparison and the facts of each side.
type Diagnosis struct {
	Verdict  Verdict    `json:"verdict"`
	Evidence []Evidence `json:"evidence"`
	Action   string     `json:"action"`
	Basis    string     `json:"basis"` // what the window was compared against
	// DominantPhase is where a mean request's time goes: queue, prefill,
	// decode, or first_token (queue and prefill together, without server
	// phases); DominantShare its share.
	DominantPhase string  `json:"dominant_phase,omitempty"`
	DominantShare float64 `json:"dominant_share,omitempty"`
	Window        Facts   `json:"window_facts"`
	Baseline      *Facts  `json:"baseline_facts,omitempty"`
	// Server is the server's scraped view of the window, when given.
	Server *ServerFacts `json:"server_facts,omitempty"`
	// Classes judges a mix's classes on their own: which suffers, and why
	// (nil: fewer than two classes).
	Classes *ClassDiagnosis `json:"classes,omitempty"`
}

// Options steer Diagnose.
type Options struct {
	// Baseline is a healthy reference: another run, or an earlier window of
	// the same run. Without one, Diagnose judges phase shares and
	// correlations within the window, then its trend (last third against
	// first third).
	Baseline []record.Request
	// BaselineName says where the baseline came from, for Basis.
	BaselineName string
	// Reference judges the window's phase speeds when there is no baseline
	// (the simulator's expectation for a known model and GPU, objectives).
	Reference *Reference
	// Server and BaselineServer are what the server's own metrics said
	// during the window and the baseline (nil: not scraped). They stand in
	// for per-request server phases when the records have none, and their
	// gauges (running, waiting, KV usage) are cited as evidence.
	Server, BaselineServer *ServerFacts
	// ClassOrder lists a mix's classes in its file's order, and Adapters
	// each class's LoRA adapter name (its model, "" for the base model);
	// both nil when the mix file is not given (classes still come from
	// the records, in name order, with no adapter known).
	ClassOrder []string
	Adapters   map[string]string
}

// Thresholds of the rules (docs/diagnosis.md explains each).
const (
	ErrorRateThreshold = 0.05 // failed (not rejected) share that makes errors the verdict
	RejectionThreshold = 0.05 // rejected (429/503) share that means the queue is full
	LagFloorMS         = 50.0 // client lag (p95) below this is never a client bottleneck
	LagShareOfTTFT     = 0.25 // ... nor when it is below this share of mean TTFT
	GrowthRatio        = 1.25 // a phase must grow at least this much against the baseline
	DeltaFloorMS       = 10.0 // ... and by at least this many ms
	DeltaShareOfE2E    = 0.05 // ... and by at least this share of the baseline's mean E2E
	QueueShare         = 0.20 // without baseline: queue at least this share of E2E
	BoundShare         = 0.60 // without baseline or reference: one phase at least this share of E2E ...
	BoundFloorMS       = 2000 // ... of a mean request at least this long (multi-second) is decode_bound or prefill_bound
	PrefillShare       = 0.50 // without baseline: prefill at least this share of E2E
	RhoStrong          = 0.5  // a rank correlation at least this strong counts
	RhoWeak            = 0.3  // ... and one below this does not
	TrendMinRequests   = 30   // completed requests needed to compare a run's thirds
	LoadGrowth         = 1.3  // send rate grown this much: the added latency is load-driven
	InputGrowth        = 2.0  // prompts grown this much: the added latency is prefill-driven
)

// Diagnose judges window against opts.Baseline (or on its own), and says
// which phase dominates a mean request whatever the verdict.
func Diagnose(window []record.Request, opts Options) Diagnosis {
	d := diagnose(window, opts)
	if opts.Server != nil && d.Verdict != Errors && d.Verdict != ClientBottleneck && d.Window.Requests > 0 {
		d.Server = opts.Server
		d.Evidence = append(d.Evidence, serverGaugeEvidence(opts.Server, opts.BaselineServer)...)
	}
	if phase, share, ev := dominant(d.Window); phase != "" {
		d.DominantPhase, d.DominantShare = phase, share
		d.Evidence = append(d.Evidence, ev)
	}
	d.Classes = Classes(window, opts.ClassOrder, opts.Adapters)
	return d
}

func diagnose(window []record.Request, opts Options) Diagnosis {
	w := facts(window)
	if opts.Baseline != nil {
		b := facts(opts.Baseline)
		name := opts.BaselineName
		if name == "" {
			name = "the baseline"
		}
		var srv [2]*ServerFacts
		if opts.Server.phases() && opts.BaselineServer.phases() {
			srv = [2]*ServerFacts{opts.Server, opts.BaselineServer}
		}
		return compare(w, b, "against "+name, srv)
	}
	if d, ok := gate(w, nil); ok {
		d.Basis = "no baseline"
		return d
	}
	if !w.ServerPhases && opts.Server != nil {
		// The server's own metrics replace the client-side inference.
		d := Diagnosis{Window: w, Basis: "no baseline: the server's scraped queue and prefill times against the window's mean request"}
		d.Verdict, d.Evidence = absoluteServer(w, opts.Server)
		if d.Verdict != Healthy {
			return finish(d)
		}
	}
	if d := absolute(w); d.Verdict != Healthy {
		return d
	}
	d := absolute(w)
	if judgeReference(&d, w, window, opts.Reference) {
		return finish(d)
	}
	if first, last, ok := thirds(window); ok {
		t := compare(facts(last), facts(first), "trend: the last third of the run (by send time) against its first third", [2]*ServerFacts{})
		if t.Verdict != Healthy {
			t.Window, t.Baseline = w, nil
			return t
		}
	}
	if opts.Reference != nil {
		// Judged against the reference and found within it: say so instead
		// of "cannot be told".
		d.Evidence = withoutBasis(d.Evidence)
		d.Basis = "no baseline: phase shares, and speeds against " + opts.Reference.Source
		return finish(d)
	}
	bound(&d, w)
	return finish(d)
}

// bound names the phase that holds most of a long request when nothing says
// what its speed should be: "healthy" would tell the reader the time is
// well spent, which a run alone cannot show.
func bound(d *Diagnosis, w Facts) {
	phase, share, _ := dominant(w)
	if share < BoundShare || w.E2EMS < BoundFloorMS {
		return
	}
	switch {
	case phase == "decode":
		d.Verdict = DecodeBound
		d.Evidence = append(d.Evidence, Evidence{Metric: "decode_share", Window: share,
			Text: fmt.Sprintf("decode is %.0f%% of a mean request of %s (%.3g ms per output token): without a reference knee cannot say whether that is slow, only that decode is where the time goes", 100*share, msText(w.E2EMS), w.TPOTMS)})
	case phase == "prefill":
		d.Verdict = PrefillBound
		d.Evidence = append(d.Evidence, Evidence{Metric: "prefill_share", Window: share,
			Text: fmt.Sprintf("prefill is %.0f%% of a mean request of %s (%.0f input tokens)", 100*share, msText(w.E2EMS), w.InputMean)})
	case phase == "first_token" && w.InFlight > 0 && w.InFlight <= 1:
		// Every request was alone on the server: there was nothing to queue
		// behind, so the wait for the first token is prefill (and network).
		d.Verdict = PrefillBound
		d.Evidence = append(d.Evidence, Evidence{Metric: "ttft_share", Window: share,
			Text: fmt.Sprintf("the wait for the first token is %.0f%% of a mean request of %s with one request in flight at a time: nothing to queue behind, so it is prefill (%.0f input tokens)", 100*share, msText(w.E2EMS), w.InputMean)})
	}
}

func finish(d Diagnosis) Diagnosis {
	d.Action = Actions[d.Verdict]
	if d.Evidence == nil {
		d.Evidence = []Evidence{}
	}
	return d
}

func ptr(v float64) *float64 { return &v }

// gate applies the rules that come before any phase reasoning: errors, a
// lagging client, rejections.
func gate(w Facts, b *Facts) (Diagnosis, bool) {
	d := Diagnosis{Window: w, Baseline: b}
	if w.Requests == 0 && w.ItemAnswers > 0 {
		d.Verdict = Healthy
		d.Evidence = []Evidence{{Metric: "item_answers", Text: fmt.Sprintf("the window's %d completed requests are embeddings or rerank answers, answered whole: diagnosis reads the phases of streamed answers (TTFT, prefill, decode), which they do not have; nothing to diagnose", w.ItemAnswers)}}
		return finish(d), true
	}
	if w.Requests == 0 {
		d.Verdict = Healthy
		d.Evidence = []Evidence{{Metric: "requests", Text: "no measured requests in the window: nothing to diagnose"}}
		return finish(d), true
	}
	base := func(get func(f *Facts) float64) *float64 {
		if b == nil {
			return nil
		}
		return ptr(get(b))
	}
	if er := w.ErrorRate; er >= ErrorRateThreshold && (b == nil || er-b.ErrorRate >= ErrorRateThreshold) {
		d.Verdict = Errors
		d.Evidence = append(d.Evidence, Evidence{Metric: "error_rate", Window: er, Baseline: base(func(f *Facts) float64 { return f.ErrorRate }),
			Text: fmt.Sprintf("%.1f%% of %d requests failed (%s)%s", 100*er, w.Requests, kinds(w.ErrorKinds), vsPct(b, func(f *Facts) float64 { return f.ErrorRate }))})
		return finish(d), true
	}
	if w.LagP95MS >= LagFloorMS && w.LagP95MS >= LagShareOfTTFT*w.TTFTMS && (b == nil || w.LagP95MS-b.LagP95MS >= LagFloorMS) {
		ev := Evidence{Metric: "lag_p95_ms", Window: w.LagP95MS, Baseline: base(func(f *Facts) float64 { return f.LagP95MS })}
		if w.Lagged > 0 && float64(w.LaggedAtCap) >= 0.8*float64(w.Lagged) {
			d.Verdict = QueuePressure
			ev.Text = fmt.Sprintf("client lag p95 %s: %d of %d late requests waited for a free slot at the in-flight cap, so requests queue in the client (the server is not keeping up with the offered rate)",
				msText(w.LagP95MS), w.LaggedAtCap, w.Lagged)
		} else {
			d.Verdict = ClientBottleneck
			ev.Text = fmt.Sprintf("client lag p95 %s (%.0f%% of mean TTFT %s) with in-flight slots free: the client sent requests late",
				msText(w.LagP95MS), 100*w.LagP95MS/math.Max(w.TTFTMS, 1e-9), msText(w.TTFTMS))
		}
		d.Evidence = append(d.Evidence, ev)
		return finish(d), true
	}
	if rr := w.RejectionRate; rr >= RejectionThreshold && (b == nil || rr-b.RejectionRate >= RejectionThreshold) {
		d.Verdict = QueuePressure
		d.Evidence = append(d.Evidence, Evidence{Metric: "rejection_rate", Window: rr, Baseline: base(func(f *Facts) float64 { return f.RejectionRate }),
			Text: fmt.Sprintf("%.1f%% of requests were rejected at admission (429/503): the waiting queue is full%s", 100*rr, vsPct(b, func(f *Facts) float64 { return f.RejectionRate }))})
		return finish(d), true
	}
	if w.Completed == 0 {
		d.Verdict = Errors
		d.Evidence = append(d.Evidence, Evidence{Metric: "completed", Text: fmt.Sprintf("none of %d requests completed (%s)", w.Requests, kinds(w.ErrorKinds))})
		return finish(d), true
	}
	return d, false
}

// part is one phase's share of the latency added against the baseline.
type part struct {
	verdict     Verdict
	metric      string
	w, b        float64 // the phase's measure in window and baseline
	ratio       float64 // w / b (Inf when b is 0 and w is not)
	deltaMS     float64 // milliseconds the phase added to a mean request
	significant bool
	text        string
}

// compare attributes the latency the window added over the baseline to
// queue, prefill and decode, and gives the verdict of the largest
// significant contribution.
func compare(w, b Facts, basis string, srv [2]*ServerFacts) Diagnosis {
	if d, ok := gate(w, &b); ok {
		d.Basis = basis
		return d
	}
	d := Diagnosis{Window: w, Baseline: &b, Basis: basis}
	if b.Completed == 0 {
		d.Verdict = Healthy
		d.Evidence = []Evidence{{Metric: "baseline_completed", Text: "the baseline has no completed requests: nothing to compare against"}}
		return finish(d)
	}
	var parts []part
	floor := math.Max(DeltaFloorMS, DeltaShareOfE2E*b.E2EMS)
	outW := math.Max(w.OutputMean-1, 0)
	if w.ServerPhases && b.ServerPhases {
		parts = append(parts,
			part{verdict: QueuePressure, metric: "server_queue_ms", w: w.QueueMS, b: b.QueueMS, deltaMS: w.QueueMS - b.QueueMS,
				text: "server queue (waiting for admission)"},
			part{verdict: PrefillPressure, metric: "server_prefill_ms", w: w.PrefillMS, b: b.PrefillMS, deltaMS: w.PrefillMS - b.PrefillMS,
				text: fmt.Sprintf("server prefill (input %.0f tokens, baseline %.0f)", w.InputMean, b.InputMean)})
	} else if srv[0] != nil {
		parts = append(parts, serverParts(srv[0], srv[1])...)
	} else {
		// Without server phases TTFT is queue + prefill; the baseline's TTFT
		// against input length says how much of the change the window's
		// prompt lengths explain (prefill); the rest is waiting (queue).
		a, slope := b.prefillFit()
		expect := a + slope*w.InputMean
		dT := w.TTFTMS - b.TTFTMS
		dP := math.Min(math.Max(expect-b.TTFTMS, 0), math.Max(dT, 0))
		parts = append(parts,
			part{verdict: QueuePressure, metric: "ttft_unexplained_ms", w: w.TTFTMS, b: expect, deltaMS: dT - dP,
				text: fmt.Sprintf("TTFT beyond what input length explains (the baseline's TTFT at %.0f input tokens would be %s)", w.InputMean, msText(expect))},
			part{verdict: PrefillPressure, metric: "ttft_from_input_ms", w: expect, b: b.TTFTMS, deltaMS: dP,
				text: fmt.Sprintf("TTFT explained by input length (%.0f tokens, baseline %.0f)", w.InputMean, b.InputMean)})
	}
	if w.TPOTMS > 0 && b.TPOTMS > 0 {
		parts = append(parts, part{verdict: DecodeSlowdown, metric: "tpot_ms", w: w.TPOTMS, b: b.TPOTMS, deltaMS: (w.TPOTMS - b.TPOTMS) * outW,
			text: fmt.Sprintf("decode time per output token (× %.0f tokens after the first)", outW)})
	}
	best := -1
	for i := range parts {
		p := &parts[i]
		p.ratio = math.Inf(1)
		if p.b > 0 {
			p.ratio = p.w / p.b
		} else if p.w == 0 {
			p.ratio = 1
		}
		p.significant = p.deltaMS >= floor && p.ratio >= GrowthRatio
		if p.significant && (best < 0 || p.deltaMS > parts[best].deltaMS) {
			best = i
		}
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].deltaMS > parts[j].deltaMS })
	d.Verdict = Healthy
	if best >= 0 {
		d.Verdict = parts[0].verdict
		for _, p := range parts {
			if p.significant {
				d.Verdict = p.verdict
				break
			}
		}
		// A changed workload explains a slower phase better than the phase
		// itself: longer prompts slow everyone's decode steps (prefill
		// chunks share them) and cut capacity; more arrivals make bigger
		// batches and queues.
		inRatio := w.InputMean / math.Max(b.InputMean, 1e-9)
		rateRatio := 0.0
		if w.SendRateRPS > 0 && b.SendRateRPS > 0 {
			rateRatio = w.SendRateRPS / b.SendRateRPS
		}
		switch {
		case d.Verdict != PrefillPressure && b.InputMean > 0 && inRatio >= InputGrowth:
			d.Evidence = append(d.Evidence, Evidence{Metric: "input_tokens", Window: w.InputMean, Baseline: ptr(b.InputMean),
				Text: fmt.Sprintf("prompts are ×%.1f longer (%.0f → %.0f tokens): the added %s time follows from the added prefill work (prefill chunks share decode steps and take capacity)",
					inRatio, b.InputMean, w.InputMean, phaseWord(d.Verdict))})
			d.Verdict = PrefillPressure
		case d.Verdict == DecodeSlowdown && rateRatio >= LoadGrowth:
			d.Evidence = append(d.Evidence, Evidence{Metric: "send_rate_rps", Window: w.SendRateRPS, Baseline: ptr(b.SendRateRPS),
				Text: fmt.Sprintf("the arrival rate grew ×%.2f (%.3g → %.3g req/s): decode slowed because batches grew with the load, a capacity problem rather than a slower runtime",
					rateRatio, b.SendRateRPS, w.SendRateRPS)})
			d.Verdict = QueuePressure
		}
	}
	for _, p := range parts {
		unit := "ms"
		if p.metric == "tpot_ms" {
			unit = "ms per token"
		}
		mark := "below the thresholds"
		if p.significant {
			mark = "significant"
		}
		d.Evidence = append(d.Evidence, Evidence{Metric: p.metric, Window: p.w, Baseline: ptr(p.b),
			Text: fmt.Sprintf("%s: %s → %s %s (%s), adds %+.0f ms to a mean request — %s (needs ×%.3g and ≥ %.0f ms)",
				p.text, short(p.b), short(p.w), unit, ratioText(p.ratio), p.deltaMS, mark, GrowthRatio, floor)})
	}
	d.Evidence = append(d.Evidence, Evidence{Metric: "e2e_ms", Window: w.E2EMS, Baseline: ptr(b.E2EMS),
		Text: fmt.Sprintf("mean end-to-end latency %s → %s", msText(b.E2EMS), msText(w.E2EMS))})
	d.Evidence = append(d.Evidence, correlationEvidence(w)...)
	return finish(d)
}

// absolute judges a window with no baseline: phase shares with server
// phases, correlations without.
func absolute(w Facts) Diagnosis {
	d := Diagnosis{Window: w, Verdict: Healthy, Basis: "no baseline: phase shares and correlations within the window"}
	if w.ServerPhases {
		total := w.QueueMS + w.PrefillMS + w.DecodeMS
		share := func(v float64) float64 { return v / math.Max(total, 1e-9) }
		d.Evidence = append(d.Evidence,
			Evidence{Metric: "queue_ms", Window: w.QueueMS, Text: fmt.Sprintf("server queue %s, %.0f%% of a mean request (queue_pressure from %.0f%%)", msText(w.QueueMS), 100*share(w.QueueMS), 100*QueueShare)},
			Evidence{Metric: "prefill_ms", Window: w.PrefillMS, Text: fmt.Sprintf("server prefill %s for %.0f input tokens, %.0f%% (prefill_pressure from %.0f%%)", msText(w.PrefillMS), w.InputMean, 100*share(w.PrefillMS), 100*PrefillShare)},
			Evidence{Metric: "decode_ms", Window: w.DecodeMS, Text: fmt.Sprintf("server decode %s for %.0f output tokens (%.3g ms per token), %.0f%%", msText(w.DecodeMS), w.OutputMean, w.TPOTMS, 100*share(w.DecodeMS))})
		switch {
		case share(w.QueueMS) >= QueueShare && w.QueueMS >= DeltaFloorMS:
			d.Verdict = QueuePressure
		case share(w.PrefillMS) >= PrefillShare:
			d.Verdict = PrefillPressure
		}
	} else {
		d.Evidence = append(d.Evidence, correlationEvidence(w)...)
		spread := w.TTFTP90MS >= 2*math.Max(quantile(w.ttfts, 0.5), 1e-9)
		switch {
		case w.RhoInFlight >= RhoStrong && math.Abs(w.RhoInput) < RhoWeak && spread:
			d.Verdict = QueuePressure
			d.Evidence = append(d.Evidence, Evidence{Metric: "ttft_p90_ms", Window: w.TTFTP90MS,
				Text: fmt.Sprintf("TTFT grows with the number in flight but not with input length, and p90 TTFT (%s) is at least twice the median: requests wait", msText(w.TTFTP90MS))})
		case w.RhoInput >= RhoStrong && w.TTFTMS >= PrefillShare*w.E2EMS:
			d.Verdict = PrefillPressure
			d.Evidence = append(d.Evidence, Evidence{Metric: "ttft_ms", Window: w.TTFTMS,
				Text: fmt.Sprintf("TTFT grows with input length and takes %.0f%% of a mean request: processing prompts dominates", 100*w.TTFTMS/w.E2EMS)})
		}
	}
	if d.Verdict == Healthy {
		d.Evidence = append(d.Evidence, Evidence{Metric: "basis", Text: "without a reference a slower decode or prefill cannot be told from a normal one: " +
			"give --baseline or --split, --gpu and --model (the simulator's expectation), or an --slo such as 'mean(tpot)<20ms'"})
	}
	return finish(d)
}

func correlationEvidence(w Facts) []Evidence {
	var ev []Evidence
	if w.InFlight > 0 {
		ev = append(ev, Evidence{Metric: "ttft_in_flight_rho", Window: w.RhoInFlight,
			Text: fmt.Sprintf("rank correlation of TTFT with requests in flight at send: %+.2f (mean %.1f in flight)", w.RhoInFlight, w.InFlight)})
	}
	ev = append(ev, Evidence{Metric: "ttft_input_tokens_rho", Window: w.RhoInput,
		Text: fmt.Sprintf("rank correlation of TTFT with input tokens: %+.2f (mean %.0f tokens)", w.RhoInput, w.InputMean)})
	return ev
}

func phaseWord(v Verdict) string {
	switch v {
	case QueuePressure:
		return "queue"
	case DecodeSlowdown:
		return "decode"
	}
	return "prefill"
}

func ratioText(r float64) string {
	if math.IsInf(r, 1) {
		return "from zero"
	}
	return fmt.Sprintf("×%.2f", r)
}

func vsPct(b *Facts, get func(f *Facts) float64) string {
	if b == nil {
		return ""
	}
	return fmt.Sprintf("; baseline %.1f%%", 100*get(b))
}

func kinds(m map[string]int) string {
	var parts []string
	for _, k := range record.ErrorKinds {
		if n := m[string(k)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	if len(parts) == 0 {
		return "no kinds"
	}
	return strings.Join(parts, ", ")
}

// short prints a value with four significant digits, without exponents.
func short(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func msText(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.3g s", v/1000)
	}
	return fmt.Sprintf("%.3g ms", v)
}
