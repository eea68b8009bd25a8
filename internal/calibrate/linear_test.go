package calibrate

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"

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
