package scrape

import (
	"slices"
	"strings"
	"testing"
)

// The reasons mask is named bit by bit with NVML's documented values, and
// a bit NVML had not documented is still shown.
func TestThrottleReasonNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mask uint64
		want string
	}{
		{0x0, "0x0"},
		{0x1, "0x1 (GPU idle)"},
		{0x4, "0x4 (power cap (software))"},
		{0x24, "0x24 (power cap (software), thermal (software))"},
		{0x48, "0x48 (hardware slowdown, thermal (hardware))"},
		{0x80 | 0x100, "0x180 (power brake (hardware), display clocks setting)"},
		{0x2 | 0x10, "0x12 (applications clocks setting, sync boost)"},
		{0x800 | 0x4, "0x804 (power cap (software), bit 11)"},
	} {
		if got := ThrottleMaskString(c.mask); got != c.want {
			t.Errorf("mask %#x: %q, want %q", c.mask, got, c.want)
		}
	}
	if Slowed(ThrottleGPUIdle) || !Slowed(ThrottleGPUIdle|ThrottleSWPowerCap) || Slowed(0) {
		t.Error("only a reason other than GPU idle slows a GPU")
	}
	for _, v := range []float64{-4, 4.5, 1e300} {
		if _, ok := throttleMask(v); ok {
			t.Errorf("%v read as a mask", v)
		}
	}
}

// A payload whose GPU reports its throttle reasons over a run (the old
// exporter's real payload, testdata/dcgm, with the field's line added as
// the exporter writes it, by its DCGM 3.3 name): idle at first, then held
// by the power cap, then by the power cap and heat. The GPU's distinct
// masks are kept as sets, not averaged, and named; the timeline says which
// reasons held at each point; an idle-only mask is not throttling.
func TestThrottleReasonsFromAPayload(t *testing.T) {
	t.Parallel()
	masks := []string{"1", "1", "4", "36", "4"}
	text := dcgmPayload(t, "v2.0.13-one-gpu.txt") +
		"# HELP DCGM_FI_DEV_CLOCKS_EVENT_REASONS Current clock event reasons (bitmask of DCGM_CLOCKS_EVENT_REASON_*)\n" +
		"# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge\n" +
		`DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="0", UUID="GPU-8c16e996-bd76-aa91-17e7-b48bcd0208ba", device="nvidia0"} MASK` + "\n"
	s := gpuSeries(t, "http://a:9400/metrics", text, "a:9400", []float64{0, 1000, 2000, 3000, 4000},
		func(i int, s string) string { return strings.Replace(s, "} MASK", "} "+masks[i], 1) })
	v := NewGPUView([]*Series{s}, 4000)
	if v == nil || len(v.GPUs) != 1 {
		t.Fatalf("view %+v", v)
	}
	g := v.GPUs[0]
	if !slices.Equal(g.ThrottleMasks, []uint64{0x1, 0x4, 0x24}) {
		t.Errorf("distinct masks %#x, want 0x1, 0x4, 0x24 in order seen", g.ThrottleMasks)
	}
	if _, averaged := g.Fields[GPUThrottleReasons]; averaged {
		t.Errorf("the mask was averaged as a gauge: %+v", g.Fields[GPUThrottleReasons])
	}
	var got []string
	for _, p := range v.Exporters[0].Timeline {
		got = append(got, ThrottleMaskString(p.ThrottleReasons)+map[bool]string{true: " slowed", false: ""}[p.Throttled])
	}
	want := []string{"0x1 (GPU idle)", "0x1 (GPU idle)", "0x4 (power cap (software)) slowed",
		"0x24 (power cap (software), thermal (software)) slowed", "0x4 (power cap (software)) slowed"}
	if !slices.Equal(got, want) {
		t.Errorf("timeline reasons\n got %q\nwant %q", got, want)
	}
}
