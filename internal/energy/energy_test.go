package energy

import (
	"math"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	t.Parallel()
	// 2 GPUs, 10 s, 6000 J: 300 W each; 3000 tokens, 30 requests; $2/GPU-hour.
	f := New(SourceCounter, 2, 10, 6000, 3000, 30, 2)
	if f.AvgPowerWPerGPU != 300 || *f.JPerOutputToken != 2 || *f.OutputTokensPerJ != 0.5 || *f.JPerRequest != 200 {
		t.Errorf("figures %+v", f)
	}
	// 2 GPUs × 10 s = 1/180 GPU-hour = $0.0111 for 3000 tokens: $3.70/M.
	if got, want := *f.USDPerMOutputTokens, 2*2*10.0/3600/3000*1e6; math.Abs(got-want) > 1e-9 {
		t.Errorf("$/M %v, want %v", got, want)
	}
	if f.Estimate {
		t.Error("a measured energy marked as an estimate")
	}
	if New(SourceModel, 1, 1, 1, 0, 0, 0).JPerOutputToken != nil {
		t.Error("J per token without tokens")
	}
	for _, bad := range []*Figures{New(SourceModel, 0, 1, 1, 1, 1, 0), New(SourceModel, 1, 0, 1, 1, 1, 0), New(SourceModel, 1, 1, 0, 1, 1, 0), New(SourceModel, 1, 1, math.NaN(), 1, 1, 0)} {
		if bad != nil {
			t.Errorf("figures from nothing: %+v", bad)
		}
	}
	if n := len(New(SourceModel, 1, 1, 1, 1, 1, 1).Lines()); n != 5 {
		t.Errorf("%d lines, want 5", n)
	}
}

// A power-model estimate's ranges: energy per token's from the held-out
// energy errors, $ per token's the throughput's inverted, power's both
// multiplied; a measured figure gets none.
func TestWithRanges(t *testing.T) {
	t.Parallel()
	// 1 GPU, 10 s, 5000 J, 50,000 tokens: 0.1 J per token, 500 W; $3/GPU-hour: $0.1667/M.
	f := New(SourceModel, 1, 10, 5000, 50000, 100, 3)
	f.WithRanges(0.8, 1.25, true, "H100-SXM", 0)
	jl, jh := JPerTokenFactors(HeldOutLevel)
	if !(jl < 1 && jh > 1) {
		t.Fatalf("factors %v–%v do not bracket the prediction", jl, jh)
	}
	r := f.Ranges
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("%s %v, want %v", name, got, want)
		}
	}
	near("J/token low", r.JPerOutputToken.Low, 0.1*jl)
	near("J/token high", r.JPerOutputToken.High, 0.1*jh)
	near("tokens/J low", r.OutputTokensPerJ.Low, 10/jh)
	near("power low", r.AvgPowerWPerGPU.Low, 500*jl*0.8)
	near("power high", r.AvgPowerWPerGPU.High, 500*jh*1.25)
	usd := *f.USDPerMOutputTokens
	near("$ low", r.USDPerMOutputTokens.Low, usd/1.25)
	near("$ high", r.USDPerMOutputTokens.High, usd/0.8)
	if strings.Contains(r.Basis, "no published energy") || r.Share != RangeShare {
		t.Errorf("basis %q share %v", r.Basis, r.Share)
	}
	lines := map[string]string{}
	for _, kv := range f.Lines() {
		lines[kv[0]] = kv[1]
	}
	for k, want := range map[string]string{
		"energy per output token":        "0.1000 J; " + num(0.1*jl, 4) + "–" + num(0.1*jh, 4) + " J",
		"average power":                  "500.0 W per GPU; " + num(500*jl*0.8, 0) + "–" + num(500*jh*1.25, 0) + " W",
		"cost per million output tokens": "$0.167; $" + num(usd/1.25, 3) + "–$" + num(usd/0.8, 3),
	} {
		if !strings.HasPrefix(lines[k], want) {
			t.Errorf("%s: %q, want it to start %q", k, lines[k], want)
		}
	}
	if g := f.Glance(); !strings.Contains(g, "80% ranges") || !strings.Contains(g, "0.100 J per output token ("+num(0.1*jl, 3)) {
		t.Errorf("glance %q", g)
	}

	// A GPU without a published row says so; a throughput without a range
	// leaves $ without one and power with energy per token's.
	g := New(SourceModel, 1, 10, 5000, 50000, 100, 3)
	g.WithRanges(0, 0, false, "L4", 0)
	if g.Ranges.USDPerMOutputTokens != nil || !strings.Contains(g.Ranges.Basis, "no published energy measurement on L4") {
		t.Errorf("ranges %+v", g.Ranges)
	}
	near("power low without throughput", g.Ranges.AvgPowerWPerGPU.Low, 500*jl)

	// The power range stops at the TDP.
	c := New(SourceModel, 1, 10, 5000, 50000, 100, 3)
	c.WithRanges(0.8, 1.25, true, "H100-SXM", 600)
	if c.Ranges.AvgPowerWPerGPU.High != 600 || !strings.Contains(c.Ranges.Basis, "at most the TDP") {
		t.Errorf("power range %+v (%s), want it capped at 600 W", c.Ranges.AvgPowerWPerGPU, c.Ranges.Basis)
	}

	m := New(SourceCounter, 1, 10, 5000, 50000, 100, 3)
	m.WithRanges(0.8, 1.25, true, "H100-SXM", 700)
	if m.Ranges != nil {
		t.Error("a measured energy given a model's range")
	}
}
