package report

// The GPUs in reports: energy per token and request (from the simulator's
// power model or the GPUs' telemetry) and what the dcgm-exporters showed.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/scrape"
)

// maxTimelineRows bounds the GPU timeline a text report prints per
// exporter (JSON keeps the whole, itself bounded by the scraper).
const maxTimelineRows = 12

func gpuSections(v *scrape.GPUView, e *energy.Figures) []section {
	var out []section
	if e != nil {
		out = append(out, section{title: "Energy", kv: e.Lines()})
	}
	if v == nil {
		return out
	}
	if len(v.GPUs) > 0 {
		t := &table{header: []string{"host", "gpu", "model", "power W mean", "max", "SM active", "DRAM active", "util %", "memory MiB", "SM MHz", "temp °C", "energy J", "energy from"}, left: 3}
		for _, g := range v.GPUs {
			f := func(field scrape.GPUField, scale float64, d int, useMax bool) string {
				s, ok := g.Fields[field]
				if !ok {
					return none
				}
				if useMax {
					return fnum(s.Max*scale, d)
				}
				return fnum(s.Mean*scale, d)
			}
			src := g.EnergySource
			if src == "" {
				src = none
			}
			t.rows = append(t.rows, []string{g.Host, g.GPU, g.Model, f(scrape.GPUPowerW, 1, 1, false), f(scrape.GPUPowerW, 1, 1, true),
				f(scrape.GPUSMActive, 100, 1, false) + pctSign(g, scrape.GPUSMActive), f(scrape.GPUDRAMActive, 100, 1, false) + pctSign(g, scrape.GPUDRAMActive),
				f(scrape.GPUUtilPct, 1, 1, false), f(scrape.GPUFBUsedMiB, 1, 0, true), f(scrape.GPUSMClockMHz, 1, 0, false), f(scrape.GPUTempC, 1, 0, true),
				fnum(g.EnergyJ, 1), src})
		}
		out = append(out, section{title: "GPUs (dcgm-exporter; means over the run, max for power, memory and temperature)", table: t})
	}
	var bullets []string
	for _, g := range v.GPUs {
		slowed := false
		for _, m := range g.ThrottleMasks {
			slowed = slowed || scrape.Slowed(m)
		}
		if len(g.Throttle) > 0 || slowed {
			var parts []string
			if us := g.Throttle[scrape.GPUPowerThrottle]; us > 0 {
				parts = append(parts, fmt.Sprintf("%s s by power", fnum(us/1e6, 2)))
			}
			if us := g.Throttle[scrape.GPUThermThrottle]; us > 0 {
				parts = append(parts, fmt.Sprintf("%s s by temperature", fnum(us/1e6, 2)))
			}
			for _, m := range g.ThrottleMasks {
				parts = append(parts, "reasons "+scrape.ThrottleMaskString(m))
			}
			bullets = append(bullets, fmt.Sprintf("GPU %s on %s throttled its clocks: %s", g.GPU, g.Host, strings.Join(parts, ", ")))
		}
	}
	for _, ex := range v.Exporters {
		if len(ex.Timeline) < 2 {
			continue
		}
		throttled := false
		for _, p := range ex.Timeline {
			throttled = throttled || p.Throttled
		}
		t := &table{header: []string{"t s", "GPUs", "power W (sum)", "SM active %", "DRAM active %", "memory MiB (sum)", "SM MHz", "temp °C (max)"}}
		if throttled {
			t.header = append(t.header, "throttled")
		}
		step := max(1, (len(ex.Timeline)+maxTimelineRows-1)/maxTimelineRows)
		for i := 0; i < len(ex.Timeline); i += step {
			p := ex.Timeline[i]
			if i+step >= len(ex.Timeline) {
				p = ex.Timeline[len(ex.Timeline)-1] // end on the last reading
			}
			row := []string{fnum(p.TMS/1000, 1), strconv.Itoa(p.GPUs), opt(p.PowerW, 1, 1), opt(p.SMActive, 100, 1), opt(p.DRAMActive, 100, 1),
				opt(p.FBUsedMiB, 1, 0), opt(p.SMClockMHz, 1, 0), opt(p.TempC, 1, 0)}
			if throttled {
				thr := ""
				if p.Throttled {
					thr = "yes"
					if p.ThrottleReasons != 0 {
						thr = scrape.ThrottleMaskString(p.ThrottleReasons)
					}
				}
				row = append(row, thr)
			}
			t.rows = append(t.rows, row)
		}
		out = append(out, section{title: fmt.Sprintf("GPU timeline (%s: %d scrapes, %d failed)", ex.URL, ex.Scrapes, ex.Failed), table: t})
	}
	bullets = append(bullets, v.Notes...)
	if len(bullets) > 0 {
		out = append(out, section{title: "GPU notes", bullets: bullets})
	}
	return out
}

func pctSign(g scrape.GPUStats, f scrape.GPUField) string {
	if _, ok := g.Fields[f]; ok {
		return "%"
	}
	return ""
}

func opt(v *float64, scale float64, d int) string {
	if v == nil {
		return none
	}
	return fnum(*v*scale, d)
}
