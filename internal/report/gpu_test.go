package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/scrape"
)

// A run with GPU telemetry shows its energy, a row per GPU, the
// exporter's timeline and why a GPU throttled, in text, Markdown and HTML.
func TestGPUSectionsRender(t *testing.T) {
	t.Parallel()
	w := 410.0
	sm := 0.62
	v := &scrape.GPUView{
		Exporters: []scrape.GPUExporter{{URL: "http://n1:9400/metrics", Scrapes: 3, Failed: 1, Timeline: []scrape.GPUPoint{
			{TMS: 0, GPUs: 1, PowerW: &w, SMActive: &sm}, {TMS: 1000, GPUs: 1, PowerW: &w, SMActive: &sm, Throttled: true, ThrottleReasons: 0x24}}}},
		GPUs: []scrape.GPUStats{{Host: "n1", GPU: "0", Model: "NVIDIA H100 80GB HBM3", EnergyJ: 820, EnergySource: "energy counter",
			Fields:   map[scrape.GPUField]scrape.GaugeStats{scrape.GPUPowerW: {Mean: 410, Max: 690, N: 3}, scrape.GPUSMActive: {Mean: 0.62, Max: 0.9, N: 3}},
			Throttle: map[scrape.GPUField]float64{scrape.GPUPowerThrottle: 1.5e6}, ThrottleMasks: []uint64{0x1, 0x4}}},
		EnergyJ: 820, EnergySource: "energy counter", SpanS: 2, Notes: []string{"1 of 4 scrapes of http://n1:9400/metrics failed"},
	}
	run := &Run{Kind: "bench", GPU: v, Energy: energy.New(energy.SourceCounter, 1, 2, 820, 4100, 20, 3)}
	var txt, md, html bytes.Buffer
	if err := Text(&txt, run); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, run); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, run); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String(), "html": html.String()} {
		for _, want := range []string{"Energy", "0.2000 J (5.000 output tokens per J; 4100 tokens)", "GPUs (dcgm-exporter", "NVIDIA H100 80GB HBM3",
			"690.0", "62.0%", "GPU timeline", "1.50 s by power", "1 of 4 scrapes",
			"reasons 0x1 (GPU idle), reasons 0x4 (power", "0x24 (power cap (software), thermal (software))"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s report lacks %q", name, want)
			}
		}
	}
}
