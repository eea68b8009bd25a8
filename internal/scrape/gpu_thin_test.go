package scrape

import "testing"

// A run database keeps a bounded GPU timeline: about total points over all
// exporters, at least the minimum each, first and last scrape kept, the
// view it came from unchanged.
func TestGPUViewThinned(t *testing.T) {
	view := func(exporters, points int) *GPUView {
		v := &GPUView{EnergyJ: 7}
		for range exporters {
			var tl []GPUPoint
			for i := range points {
				tl = append(tl, GPUPoint{TMS: float64(i)})
			}
			v.Exporters = append(v.Exporters, GPUExporter{URL: "x", Timeline: tl})
		}
		return v
	}
	for _, c := range []struct{ exporters, points, want int }{
		{1, 240, 240}, {1, 100, 100}, {3, 240, 80}, {64, 240, 16}, {2, 10, 10},
	} {
		v := view(c.exporters, c.points)
		got := v.Thinned(240, 16)
		for i, ex := range got.Exporters {
			if len(ex.Timeline) != c.want || ex.Timeline[0].TMS != 0 || ex.Timeline[len(ex.Timeline)-1].TMS != float64(c.points-1) {
				t.Errorf("%d exporters of %d points: exporter %d keeps %d (%v…%v), want %d from first to last", c.exporters, c.points, i, len(ex.Timeline),
					ex.Timeline[0].TMS, ex.Timeline[len(ex.Timeline)-1].TMS, c.want)
			}
			if len(v.Exporters[i].Timeline) != c.points {
				t.Errorf("the original view changed: %d points", len(v.Exporters[i].Timeline))
			}
		}
		if got.EnergyJ != 7 {
			t.Errorf("figures lost: %+v", got)
		}
	}
	if (*GPUView)(nil).Thinned(240, 16) != nil {
		t.Error("a nil view thinned is not nil")
	}
}
