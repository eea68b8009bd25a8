package energy

import (
	"math"
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
