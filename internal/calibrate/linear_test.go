package calibrate

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"

	"github.com/knee-dev/knee/internal/simengine"
)

// linearPoints prices calibrate's default linear measurements with the
// engine's own formula (LinearStepNS, pinned by simengine's
// TestLinearStepCost), plus the request overhead on TTFT.
func linearPoints(lin simengine.LinearStepCost, reqMS float64) []Point {
	var pts []Point
	for _, n := range DefaultLinearPrefillLengths {
		y := lin.LinearStepNS(simengine.PrefillShape(int64(n)), 0)/1e6 + reqMS
		pts = append(pts, Point{Kind: KindPrefill, InputTokens: n, Batch: 1, MeasuredMS: y})
	}
	for _, d := range DefaultLinearDecodePoints(4) {
		y := lin.LinearStepNS(simengine.DecodeShape(int64(d.Batch), int64(d.Input)), int64(d.Batch)) / 1e6
		pts = append(pts, Point{Kind: KindDecode, InputTokens: d.Input, Batch: d.Batch, MeasuredMS: y})
	}
	return pts
}

func TestFitLinearRecoversTheModel(t *testing.T) {
	want := simengine.LinearStepCost{BaseNS: 1.8e6, PerPrefillTokenNS: 0.9e6, PerDecodeSeqNS: 2.2e6, PerAttentionPairNS: 3.5}
	const reqMS = 21
	f := FitLinear(linearPoints(want, reqMS), simengine.DefaultCost)
	got := *f.Cost.Linear
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"base", got.BaseNS, want.BaseNS}, {"per prompt token", got.PerPrefillTokenNS, want.PerPrefillTokenNS},
		{"per decoding sequence", got.PerDecodeSeqNS, want.PerDecodeSeqNS}, {"per attention pair", got.PerAttentionPairNS, want.PerAttentionPairNS},
		{"request overhead", f.RequestOverheadMS, reqMS},
	} {
		if math.Abs(c.got-c.want) > 1e-6*c.want {
			t.Errorf("%s: fitted %v, want %v", c.name, c.got, c.want)
		}
	}
	if f.RMSRelError > 1e-9 || f.Undetermined != "" || f.StepModel != StepModelLinear {
		t.Errorf("rms %g, undetermined %q, step model %q: want an exact, determined linear fit", f.RMSRelError, f.Undetermined, f.StepModel)
	}
	if f.Cost.FrontEndNS != reqMS*1e6 || f.Cost.FrontEndPerTokenNS != 0 {
		t.Errorf("front end %d ns + %g ns/token, want the request overhead alone", f.Cost.FrontEndNS, f.Cost.FrontEndPerTokenNS)
	}
}

// A coefficient the data would make negative is held at 0 and named, and
// one no measurement separates (a single batch size) is not invented.
func TestFitLinearConstraints(t *testing.T) {
	lin := simengine.LinearStepCost{BaseNS: 2e6, PerPrefillTokenNS: 1e6, PerDecodeSeqNS: 2e6}
	pts := linearPoints(lin, 10)
	for i := range pts {
		if pts[i].Kind == KindDecode && pts[i].InputTokens > 100 {
			pts[i].MeasuredMS *= 0.9 // long contexts faster: a negative per-context cost, unphysical
		}
	}
	f := FitLinear(pts, simengine.DefaultCost)
	if f.Cost.Linear.PerAttentionPairNS != 0 || !strings.Contains(f.Undetermined, "per attention pair") {
		t.Errorf("per attention pair %g ns, undetermined %q: want 0, named", f.Cost.Linear.PerAttentionPairNS, f.Undetermined)
	}
	for _, c := range []float64{f.Cost.Linear.BaseNS, f.Cost.Linear.PerPrefillTokenNS, f.Cost.Linear.PerDecodeSeqNS, f.RequestOverheadMS} {
		if c < 0 {
			t.Errorf("negative coefficient in %+v, request overhead %g", *f.Cost.Linear, f.RequestOverheadMS)
		}
	}

	var one []Point
	for _, p := range linearPoints(lin, 10) {
		if p.Kind == KindDecode && p.Batch == 4 && p.InputTokens < 100 {
			one = append(one, p)
		}
	}
	f = FitLinear(one, simengine.DefaultCost)
	if y := f.Cost.Linear.LinearStepNS(simengine.DecodeShape(4, int64(one[0].InputTokens)), 4) / 1e6; math.Abs(y-one[0].MeasuredMS) > 1e-9 {
		t.Errorf("one decode point: fitted %g ms, measured %g ms", y, one[0].MeasuredMS)
	}
	for _, name := range []string{"request overhead", "per prompt token"} {
		if !strings.Contains(f.Undetermined, name) {
			t.Errorf("one decode point: undetermined %q, want %s named", f.Undetermined, name)
		}
	}
}

// A linear profile written and loaded again gives the same step cost and
// the server's parallel slots; a broken one is refused with its field named.
func TestLinearProfileRoundTrip(t *testing.T) {
	ec := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ec.MaxNumSeqs = 4
	lin := simengine.LinearStepCost{BaseNS: 1.8e6, PerPrefillTokenNS: 0.9e6, PerDecodeSeqNS: 2.2e6, PerAttentionPairNS: 3.5}
	res := &Result{Fit: FitLinear(linearPoints(lin, 21), simengine.DefaultCost)}
	prof := NewProfile(ec, "http://127.0.0.1:11434", res)
	var buf bytes.Buffer
	if err := prof.Write(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cpu.yaml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfile(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	c := p.CostParams(simengine.DefaultCost)
	if p.MaxNumSeqs != 4 || c.Linear == nil || c.FrontEndNS != 21e6 {
		t.Fatalf("loaded max_num_seqs %d, linear %v, front end %d ns; want 4, the model, 21 ms\n%s", p.MaxNumSeqs, c.Linear, c.FrontEndNS, buf.String())
	}
	for _, s := range []struct {
		shape  simengine.StepShape
		decode int64
	}{{simengine.PrefillShape(300), 0}, {simengine.DecodeShape(3, 700), 3}} {
		if got, want := c.Linear.LinearStepNS(s.shape, s.decode), lin.LinearStepNS(s.shape, s.decode); math.Abs(got-want) > 1e-3*want {
			t.Errorf("step %+v: %.0f ns after the round trip, %.0f ns fitted", s.shape, got, want)
		}
	}
	if strings.Contains(buf.String(), "mem_efficiency") {
		t.Errorf("a linear profile carries roofline efficiencies:\n%s", buf.String())
	}
	// The loaded profile runs an engine.
	ec.Cost = &c
	if _, err := simengine.NewEngine(ec); err != nil {
		t.Fatal(err)
	}

	bad := strings.Replace(buf.String(), "per_decoding_seq_ms: 2.2", "per_decoding_seq_ms: -2.2", 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadProfile(path); err == nil || !strings.Contains(err.Error(), "cost.linear.per_decoding_seq_ms") {
		t.Errorf("negative per-sequence cost: %v, want an error naming cost.linear.per_decoding_seq_ms", err)
	}
}

// A linear fit's decode gaps leave out those that ended with another
// stream's first token (its prompt was in that step), whichever of the
// two arrived first.
func TestPrefillInGap(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * 1e6) }
	recs := []record.Request{
		{FirstToken: ms(10), TokenTimes: []time.Duration{ms(10), ms(20), ms(30), ms(70), ms(80)}},
		{FirstToken: ms(69.9), TokenTimes: []time.Duration{ms(69.9), ms(79.9)}}, // prefilled in the 30→70 step
	}
	gaps, _ := decodeGaps(recs[:1], 0, prefillIn(recs))
	if want := []float64{10, 10, 10}; !slices.Equal(gaps, want) {
		t.Errorf("gaps %v, want %v (the 40 ms gap that carried the second prompt left out)", gaps, want)
	}
	recs[1].FirstToken = ms(70.1) // the same step, its token read just after
	if gaps, _ := decodeGaps(recs[:1], 0, prefillIn(recs)); !slices.Equal(gaps, []float64{10, 10, 10}) {
		t.Errorf("first token just after the gap's end: gaps %v, want the 40 ms one left out", gaps)
	}
}

// The prompt curve passes through each measured length's step (TTFT less
// the request overhead and attention), averages lengths measured twice,
// and pools what noise put out of order instead of letting a longer
// prompt be faster.
func TestPromptCurve(t *testing.T) {
	coef := [linearTerms]float64{5, 0, 0, 0, 0.001} // request overhead 5 ms, attention 1 µs a pair
	pts := []Point{
		{Kind: KindPrefill, InputTokens: 10, MeasuredMS: 5 + 20 + 0.1},
		{Kind: KindPrefill, InputTokens: 20, MeasuredMS: 5 + 30 + 0.4},
		{Kind: KindPrefill, InputTokens: 40, MeasuredMS: 5 + 26 + 1.6}, // faster than 20: noise
		{Kind: KindPrefill, InputTokens: 80, MeasuredMS: 5 + 70 + 6.4},
		{Kind: KindPrefill, InputTokens: 80, MeasuredMS: 5 + 90 + 6.4},
		{Kind: KindDecode, InputTokens: 40, Batch: 4, MeasuredMS: 9}, // not a prompt step
	}
	got := promptCurve(pts, coef)
	want := []simengine.CurvePoint{{Tokens: 10, NS: 20e6}, {Tokens: 20, NS: 28e6}, {Tokens: 40, NS: 28e6}, {Tokens: 80, NS: 80e6}}
	checkCurve(t, got, want)
	if c := promptCurve(pts[:1], coef); c != nil {
		t.Errorf("one length: curve %v, want none", c)
	}
}

// The decode curve passes through each batch size's step (the gap less
// attention), averages a batch measured at two contexts, and pools a
// batch that noise made faster than a smaller one.
func TestDecodeCurve(t *testing.T) {
	coef := [linearTerms]float64{5, 0, 0, 0, 0.001} // attention 1 µs a pair
	att := func(b, ctx float64) float64 { return 0.001 * b * b * (ctx + 1) }
	pts := []Point{
		{Kind: KindDecode, InputTokens: 40, Batch: 1, MeasuredMS: 4.5 + att(1, 40)},
		{Kind: KindDecode, InputTokens: 40, Batch: 2, MeasuredMS: 7 + att(2, 40)},
		{Kind: KindDecode, InputTokens: 40, Batch: 3, MeasuredMS: 6.6 + att(3, 40)}, // faster than 2: noise
		{Kind: KindDecode, InputTokens: 40, Batch: 4, MeasuredMS: 10 + att(4, 40)},
		{Kind: KindDecode, InputTokens: 280, Batch: 4, MeasuredMS: 11 + att(4, 280)},
		{Kind: KindPrefill, InputTokens: 40, Batch: 1, MeasuredMS: 60}, // not a decode step
	}
	got := decodeCurve(pts, coef)
	want := []simengine.CurvePoint{{Tokens: 1, NS: 4.5e6}, {Tokens: 2, NS: 6.8e6}, {Tokens: 3, NS: 6.8e6}, {Tokens: 4, NS: 10.5e6}}
	checkCurve(t, got, want)
	if c := decodeCurve(pts[3:], coef); c != nil {
		t.Errorf("one batch size: curve %v, want none", c)
	}
}

func checkCurve(t *testing.T, got, want []simengine.CurvePoint) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("curve %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Tokens != want[i].Tokens || math.Abs(got[i].NS-want[i].NS) > 1 {
			t.Errorf("point %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// The step-time spread of lognormal gaps is their coefficient of
// variation, and a few gaps a pause stretched barely move it.
func TestStepTimeCV(t *testing.T) {
	var gaps []float64
	const sigma = 0.2
	for i := 1; i <= 2000; i++ {
		// Lognormal quantiles at evenly spaced probabilities.
		z := math.Sqrt2 * math.Erfinv(2*(float64(i)-0.5)/2000-1)
		gaps = append(gaps, 10*math.Exp(sigma*z))
	}
	want := math.Sqrt(math.Expm1(sigma * sigma))
	cv, ok := stepTimeCV(gaps)
	if !ok || math.Abs(cv-want) > 0.01 {
		t.Errorf("spread %.4f (ok %v), want %.4f", cv, ok, want)
	}
	for i := range 20 {
		gaps[i] = 500 // a stalled client
	}
	if cv2, _ := stepTimeCV(gaps); math.Abs(cv2-want) > 0.02 {
		t.Errorf("with 1%% of gaps stretched 50x: spread %.4f, want about %.4f", cv2, want)
	}
	if _, ok := stepTimeCV(gaps[:10]); ok {
		t.Error("10 gaps: want no estimate")
	}
}

// fitFrontEndRate recovers the front end's speed during steps from the
// restarts of decode runs: runs simulated with a known rate are told
// apart from the other rates it tries.
func TestFitFrontEndRate(t *testing.T) {
	ec := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ec.MaxNumSeqs = 4
	cost := simengine.DefaultCost
	cost.Linear = &simengine.LinearStepCost{BaseNS: 4e6, PerPrefillTokenNS: 0.6e6, PerDecodeSeqNS: 2e6, PerAttentionPairNS: 1000}
	cost.FrontEndNS, cost.FrontEndPerTokenNS = 6e6, 0
	measured := func(rate float64, b int) restartRun {
		c := cost
		c.FrontEndRateInSteps = rate
		e := ec
		e.Cost = &c
		run := restartRun{run: decodeRun{DecodePoint: DecodePoint{Batch: b, Input: 16}, output: 48}, duration: 4 * time.Second, warm: 2 * time.Second}
		recs, _, err := sim.Collect(context.Background(), sim.Config{Engine: e, Gen: fixedLengths{in: 16, out: 48}, Concurrency: b,
			Duration: run.warm + run.duration, Warmup: run.warm, Ramp: run.warm * 3 / 4})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := newRestartRun(run.run, recs, run.duration, run.warm)
		if !ok {
			t.Fatalf("rate %v, %d streams: no restart run from %d records", rate, b, len(recs))
		}
		return r
	}
	for _, rate := range []float64{1, 0.25, 0.1} {
		got, err := fitFrontEndRate(context.Background(), ec, cost, []restartRun{measured(rate, 2), measured(rate, 4)})
		if err != nil {
			t.Fatal(err)
		}
		if got != rate {
			t.Errorf("runs simulated at rate %v: fitted %v", rate, got)
		}
	}
}

// A linear profile carries the prompt curve, the step-time spread and the
// front end's speed during steps to knee sim, and refuses values that
// cannot be.
func TestLinearProfileRefinements(t *testing.T) {
	ec := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ec.MaxNumSeqs = 4
	lin := simengine.LinearStepCost{BaseNS: 1.8e6, PerPrefillTokenNS: 0.9e6, PerDecodeSeqNS: 2.2e6, PerAttentionPairNS: 3.5}
	res := &Result{Fit: FitLinear(linearPoints(lin, 21), simengine.DefaultCost)}
	res.Fit.StepTimeCV, res.Fit.FrontEndRateInSteps = 0.12, 0.25
	var buf bytes.Buffer
	if err := NewProfile(ec, "http://127.0.0.1:11434", res).Write(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cpu.yaml")
	load := func(text string) (Profile, error) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadProfile(path)
	}
	p, err := load(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	c := p.CostParams(simengine.DefaultCost)
	if c.StepTimeCV != 0.12 || c.FrontEndRateInSteps != 0.25 || len(c.Linear.PromptCurve) != len(DefaultLinearPrefillLengths) {
		t.Errorf("loaded spread %v, front-end rate %v, %d curve points; want 0.12, 0.25, %d\n%s",
			c.StepTimeCV, c.FrontEndRateInSteps, len(c.Linear.PromptCurve), len(DefaultLinearPrefillLengths), buf.String())
	}
	// The curve reproduces the fitted prompt steps.
	for _, n := range DefaultLinearPrefillLengths {
		s := simengine.PrefillShape(int64(n))
		if got, want := c.Linear.LinearStepNS(s, 0), lin.LinearStepNS(s, 0); math.Abs(got-want) > 1e-3*want {
			t.Errorf("%d-token prompt step: %.0f ns from the profile's curve, %.0f ns fitted", n, got, want)
		}
	}
	for _, bad := range []struct{ from, to, want string }{
		{"step_time_cv: 0.12", "step_time_cv: -1", "cost.step_time_cv"},
		{"front_end_rate_in_steps: 0.25", "front_end_rate_in_steps: 1.5", "cost.front_end_rate_in_steps"},
		{"tokens: " + fmt.Sprint(DefaultLinearPrefillLengths[1]), "tokens: 1", "cost.linear.prompt_curve[1]"},
	} {
		text := strings.Replace(buf.String(), bad.from, bad.to, 1)
		if text == buf.String() {
			t.Fatalf("%q not in the profile:\n%s", bad.from, buf.String())
		}
		if _, err := load(text); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s → %s: %v, want an error naming %s", bad.from, bad.to, err, bad.want)
		}
	}
}
