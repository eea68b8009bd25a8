package scrape

import (
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"

	control "github.com/knee-dev/knee/internal/redact"
)

// GPUField is one field of NVIDIA's dcgm-exporter that knee reads, by
// knee's name. The exporter exposes every field as a gauge or counter per
// GPU, labelled gpu (index), UUID, device, modelName and Hostname (its
// etc/default-counters.csv lists the fields; field identifiers in DCGM's
// API reference, dcgmFieldIdentifiers).
type GPUField string

// The fields knee reads.
const (
	GPUPowerW        GPUField = "power_w"        // DCGM_FI_DEV_POWER_USAGE, W
	GPUEnergyMJ      GPUField = "energy_mj"      // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since boot (counter)
	GPUSMActive      GPUField = "sm_active"      // DCGM_FI_PROF_SM_ACTIVE, 0..1
	GPUDRAMActive    GPUField = "dram_active"    // DCGM_FI_PROF_DRAM_ACTIVE, 0..1
	GPUTensorActive  GPUField = "tensor_active"  // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 0..1
	GPUUtilPct       GPUField = "gpu_util_pct"   // DCGM_FI_DEV_GPU_UTIL, %
	GPUFBUsedMiB     GPUField = "fb_used_mib"    // DCGM_FI_DEV_FB_USED, MiB
	GPUFBFreeMiB     GPUField = "fb_free_mib"    // DCGM_FI_DEV_FB_FREE, MiB
	GPUSMClockMHz    GPUField = "sm_clock_mhz"   // DCGM_FI_DEV_SM_CLOCK, MHz
	GPUMemClockMHz   GPUField = "mem_clock_mhz"  // DCGM_FI_DEV_MEM_CLOCK, MHz
	GPUTempC         GPUField = "temp_c"         // DCGM_FI_DEV_GPU_TEMP, °C
	GPUPowerThrottle GPUField = "power_throttle" // DCGM_FI_DEV_POWER_VIOLATION, µs throttled by power (counter)
	GPUThermThrottle GPUField = "therm_throttle" // DCGM_FI_DEV_THERMAL_VIOLATION, µs throttled by heat (counter)
	// GPUThrottleReasons is the clock throttle (event) reasons bitmask,
	// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (DCGM_FI_DEV_CLOCKS_EVENT_REASONS
	// in DCGM 3.3 and later).
	GPUThrottleReasons GPUField = "throttle_reasons"
)

// dcgmNames maps the exporter's metric names onto knee's fields.
var dcgmNames = map[string]GPUField{
	"DCGM_FI_DEV_POWER_USAGE":              GPUPowerW,
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": GPUEnergyMJ,
	"DCGM_FI_PROF_SM_ACTIVE":               GPUSMActive,
	"DCGM_FI_PROF_DRAM_ACTIVE":             GPUDRAMActive,
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":      GPUTensorActive,
	"DCGM_FI_DEV_GPU_UTIL":                 GPUUtilPct,
	"DCGM_FI_DEV_FB_USED":                  GPUFBUsedMiB,
	"DCGM_FI_DEV_FB_FREE":                  GPUFBFreeMiB,
	"DCGM_FI_DEV_SM_CLOCK":                 GPUSMClockMHz,
	"DCGM_FI_DEV_MEM_CLOCK":                GPUMemClockMHz,
	"DCGM_FI_DEV_GPU_TEMP":                 GPUTempC,
	"DCGM_FI_DEV_POWER_VIOLATION":          GPUPowerThrottle,
	"DCGM_FI_DEV_THERMAL_VIOLATION":        GPUThermThrottle,
	"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS":   GPUThrottleReasons,
	"DCGM_FI_DEV_CLOCKS_EVENT_REASONS":     GPUThrottleReasons,
}

// gpuHeadline are the fields whose absence a run's notes mention.
var gpuHeadline = []GPUField{GPUPowerW, GPUEnergyMJ, GPUSMActive, GPUDRAMActive, GPUUtilPct, GPUFBUsedMiB, GPUSMClockMHz, GPUTempC}

// dcgmBlank: DCGM writes a field a GPU does not support as a sentinel
// near the top of its type's range (DCGM_INT64_BLANK, 0x7ffffff0 and up;
// DCGM_FP64_BLANK, 2^47): a reading at or above 2^47 is no reading.
const dcgmBlank = 1 << 47

// GPUReading is one GPU in one scrape.
type GPUReading struct {
	Host   string               `json:"host"`
	GPU    string               `json:"gpu"` // the exporter's gpu label (index)
	UUID   string               `json:"uuid,omitempty"`
	Model  string               `json:"model,omitempty"`
	Values map[GPUField]float64 `json:"values"`
}

// Key names the GPU across scrapes and exporters: its host and UUID (or
// index when the exporter gives no UUID).
func (g *GPUReading) Key() string {
	id := g.UUID
	if id == "" {
		id = "gpu" + g.GPU
	}
	return g.Host + "/" + id
}

// ParseDCGM reads one dcgm-exporter exposition within lim: the fields knee
// knows, per GPU, in the order the GPUs first appear. A GPU's host is its
// Hostname label, else host (the exporter's address). malformed lists the
// lines dropped.
func ParseDCGM(r io.Reader, lim Limits, host string) (gpus []GPUReading, families int, malformed []string, err error) {
	mfs, families, malformed, err := readKnown(r, lim, func(name []byte) bool { _, ok := dcgmNames[string(name)]; return ok })
	if err != nil {
		return nil, families, malformed, err
	}
	names := make([]string, 0, len(mfs))
	for n := range mfs {
		names = append(names, n)
	}
	sort.Strings(names) // a stable order of GPUs whatever the map's
	at := map[string]int{}
	for _, n := range names {
		field := dcgmNames[n]
		for _, m := range mfs[n].GetMetric() {
			v, ok := scalar(m)
			if !ok || math.Abs(v) >= dcgmBlank {
				continue
			}
			g := readingLabels(m, host)
			k := g.Key()
			i, seen := at[k]
			if !seen {
				i = len(gpus)
				at[k] = i
				g.Values = map[GPUField]float64{}
				gpus = append(gpus, g)
			}
			if gpus[i].Model == "" {
				gpus[i].Model = g.Model
			}
			gpus[i].Values[field] = v
		}
	}
	sort.SliceStable(gpus, func(a, b int) bool {
		if gpus[a].Host != gpus[b].Host {
			return gpus[a].Host < gpus[b].Host
		}
		return gpuIndexLess(gpus[a].GPU, gpus[b].GPU)
	})
	return gpus, families, malformed, nil
}

// readingLabels is a series' GPU. Label values come from the exporter:
// bounded and with control characters escaped before any report shows them.
func readingLabels(m *dto.Metric, host string) GPUReading {
	g := GPUReading{Host: host}
	mig := ""
	for _, l := range m.GetLabel() {
		v := l.GetValue()
		if len(v) > maxLabelBytes {
			v = v[:maxLabelBytes]
		}
		v = control.Control(v)
		switch l.GetName() {
		case "gpu":
			g.GPU = v
		case "UUID":
			g.UUID = v
		case "modelName":
			g.Model = v
		case "Hostname":
			if v != "" {
				g.Host = v
			}
		case "GPU_I_ID":
			mig = v
		}
	}
	if mig != "" {
		// A MIG instance: its own series beside its GPU's others.
		g.GPU += "/mig" + mig
		if g.UUID != "" {
			g.UUID += "/mig" + mig
		}
	}
	return g
}

// maxLabelBytes bounds a label value kept from an exporter.
const maxLabelBytes = 128

func gpuIndexLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b) // "2" before "10"
	}
	return a < b
}

// hostOf is a URL's host:port, the name of an exporter's GPUs that carry
// no Hostname label.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "exporter"
	}
	return u.Host
}

// GPUView is what the GPUs' exporters showed during a run: per GPU its
// gauges over the run and its energy, per exporter a timeline, and the
// run's energy over all GPUs.
type GPUView struct {
	Exporters []GPUExporter `json:"exporters"`
	GPUs      []GPUStats    `json:"gpus"`
	// EnergyJ is all GPUs' energy over the run; EnergySource says how it
	// was read (energy counter, power integral, or both); ExtrapolatedJ
	// is the part of it estimated at a GPU's mean power for time its
	// exporter did not cover (an exporter that died, or started late).
	EnergyJ       float64 `json:"energy_j"`
	EnergySource  string  `json:"energy_source,omitempty"`
	ExtrapolatedJ float64 `json:"extrapolated_j,omitempty"`
	// SpanS is the run's time the energy is for, s.
	SpanS float64  `json:"span_s"`
	Notes []string `json:"notes,omitempty"`
}

// GPUExporter is one --gpu-metrics-url: its scrapes and a timeline of its
// GPUs' sums and means.
type GPUExporter struct {
	URL      string     `json:"url"`
	Scrapes  int        `json:"scrapes"`
	Failed   int        `json:"failed"`
	Timeline []GPUPoint `json:"timeline,omitempty"`
}

// GPUPoint is one scrape of one exporter: its GPUs' total power and
// memory, mean activity and clock, hottest temperature (nil: no GPU gave
// the field).
type GPUPoint struct {
	TMS        float64  `json:"t_ms"`
	GPUs       int      `json:"gpus"`
	PowerW     *float64 `json:"power_w,omitempty"`
	SMActive   *float64 `json:"sm_active,omitempty"`
	DRAMActive *float64 `json:"dram_active,omitempty"`
	UtilPct    *float64 `json:"gpu_util_pct,omitempty"`
	FBUsedMiB  *float64 `json:"fb_used_mib,omitempty"`
	SMClockMHz *float64 `json:"sm_clock_mhz,omitempty"`
	TempC      *float64 `json:"temp_c,omitempty"`
	// ThrottleReasons is the union of the GPUs' throttle reasons masks
	// (a set of bits, never a mean; ThrottleReasonNames names them).
	ThrottleReasons uint64 `json:"throttle_reasons,omitempty"`
	// Throttled: some GPU gave a reason that slows it (Slowed: any but
	// GPU idle).
	Throttled bool `json:"throttled,omitempty"`
}

// GPUStats is one GPU over the run.
type GPUStats struct {
	Host    string `json:"host"`
	GPU     string `json:"gpu"`
	UUID    string `json:"uuid,omitempty"`
	Model   string `json:"model,omitempty"`
	Scrapes int    `json:"scrapes"`
	// FromMS and ToMS bound the readings (run time).
	FromMS float64 `json:"from_ms"`
	ToMS   float64 `json:"to_ms"`
	// EnergyJ over [FromMS, ToMS], by EnergySource ("" and 0: neither the
	// counter nor power was read twice).
	EnergyJ      float64 `json:"energy_j"`
	EnergySource string  `json:"energy_source,omitempty"`
	// CounterResets counts falls of the energy counter (a reboot or a
	// driver reload), each read as a restart from zero.
	CounterResets int                     `json:"counter_resets,omitempty"`
	Fields        map[GPUField]GaugeStats `json:"fields,omitempty"`
	Throttle      map[GPUField]float64    `json:"throttle_us,omitempty"` // throttled time in the run, µs, by cause
	Missing       []GPUField              `json:"missing,omitempty"`
	ThrottleMasks []uint64                `json:"throttle_reasons,omitempty"` // distinct non-zero masks seen
	byTime        []gpuAt                 // readings in time order
}

type gpuAt struct {
	t float64
	v map[GPUField]float64
}

// MaxGPUSamples bounds a GPU scrape's samples: a node of 8 GPUs costs
// about 8 KB a scrape, so a long run at a short interval would grow
// without bound. At the bound every other sample is dropped (the first and
// the last kept): the energy counter's delta stays exact (but for a reset
// between two kept samples), and gauges and
// the power integral read at half the resolution.
var MaxGPUSamples = 4096

// halveSamples keeps the even samples and the last.
func halveSamples(s []Sample) []Sample {
	last := s[len(s)-1]
	n := 0
	for i := 0; i < len(s); i += 2 {
		s[n] = s[i]
		n++
	}
	if (len(s)-1)%2 != 0 {
		s[n] = last
		n++
	}
	clear(s[n:])
	return s[:n]
}

// Energy sources, as GPUView and GPUStats name them.
const (
	energyCounter  = "energy counter"
	powerIntegral  = "power integral"
	energyBoth     = "energy counter and power integral"
	maxTimelinePts = 240
)

// NewGPUView joins the exporters' series over a run of spanMS (run time,
// from 0): nil when no exporter gave a GPU reading.
func NewGPUView(series []*Series, spanMS float64) *GPUView {
	v := &GPUView{SpanS: spanMS / 1000}
	byKey := map[string]*GPUStats{}
	var order []string
	for _, s := range series {
		ex := GPUExporter{URL: s.URL}
		for i := range s.Samples {
			smp := &s.Samples[i]
			if !smp.OK() {
				ex.Failed++
				continue
			}
			ex.Scrapes++
			if len(smp.GPUs) > 0 {
				ex.Timeline = append(ex.Timeline, point(smp))
			}
			for j := range smp.GPUs {
				g := &smp.GPUs[j]
				k := g.Key()
				st := byKey[k]
				if st == nil {
					st = &GPUStats{Host: g.Host, GPU: g.GPU, UUID: g.UUID, Model: g.Model}
					byKey[k] = st
					order = append(order, k)
				}
				st.byTime = append(st.byTime, gpuAt{t: smp.TMS, v: g.Values})
			}
		}
		ex.Timeline = thin(ex.Timeline, maxTimelinePts)
		v.Exporters = append(v.Exporters, ex)
		for _, n := range s.Notes {
			v.Notes = append(v.Notes, n)
		}
	}
	if len(order) == 0 {
		if len(series) == 0 {
			return nil
		}
		for _, ex := range v.Exporters {
			if ex.Scrapes > 0 {
				v.Notes = append(v.Notes, fmt.Sprintf("%s answered with no dcgm-exporter GPU fields (DCGM_FI_*): no GPU view", ex.URL))
			}
		}
		if len(v.Notes) == 0 {
			return nil
		}
		return v
	}
	counter, integral := 0, 0
	for _, k := range order {
		st := byKey[k]
		st.summarize()
		if strings.Contains(st.GPU, "/mig") {
			// A MIG instance has activity fields only: power, energy,
			// memory and clocks are its GPU's.
			st.Missing = nil
			continue
		}
		if st.CounterResets > 0 {
			v.Notes = append(v.Notes, fmt.Sprintf("GPU %s on %s: its energy counter fell %d time(s) (a reboot or driver reload?); each fall read as a restart from zero", st.GPU, st.Host, st.CounterResets))
		}
		if len(st.Missing) > 0 {
			names := make([]string, len(st.Missing))
			for i, m := range st.Missing {
				names[i] = string(m)
			}
			v.Notes = append(v.Notes, fmt.Sprintf("GPU %s on %s: no %s readings (not in the exporter's counters, or unsupported on this GPU)", st.GPU, st.Host, strings.Join(names, ", ")))
		}
		switch st.EnergySource {
		case energyCounter:
			counter++
		case powerIntegral:
			integral++
		default:
			v.Notes = append(v.Notes, fmt.Sprintf("GPU %s on %s: neither the energy counter nor power was read twice; its energy is left out", st.GPU, st.Host))
			continue
		}
		v.EnergyJ += st.EnergyJ
		// Time of the run the readings did not cover: at the GPU's mean
		// power, said so.
		if covered := st.ToMS - st.FromMS; covered > 0 && spanMS > 0 {
			missing := math.Max(0, st.FromMS) + math.Max(0, spanMS-st.ToMS)
			if missing > 0.05*spanMS {
				x := st.EnergyJ / covered * missing
				v.ExtrapolatedJ += x
				v.EnergyJ += x
				v.Notes = append(v.Notes, fmt.Sprintf("GPU %s on %s: readings cover %.1f of the run's %.1f s (the exporter stopped answering, or started late); %.0f J added for the rest at its mean power", st.GPU, st.Host, covered/1000, spanMS/1000, x))
			}
		}
	}
	switch {
	case counter > 0 && integral > 0:
		v.EnergySource = energyBoth
	case counter > 0:
		v.EnergySource = energyCounter
	case integral > 0:
		v.EnergySource = powerIntegral
	}
	for _, k := range order {
		st := byKey[k]
		st.byTime = nil
		v.GPUs = append(v.GPUs, *st)
	}
	return v
}

// summarize fills a GPU's statistics from its readings.
func (st *GPUStats) summarize() {
	r := st.byTime
	st.Scrapes = len(r)
	st.FromMS, st.ToMS = r[0].t, r[len(r)-1].t
	seen := map[GPUField]bool{}
	var vals = map[GPUField][]float64{}
	masks := map[uint64]bool{}
	for _, x := range r {
		for f, val := range x.v {
			seen[f] = true
			switch f {
			case GPUEnergyMJ, GPUPowerThrottle, GPUThermThrottle:
			case GPUThrottleReasons:
				if m, ok := throttleMask(val); ok && m != 0 && !masks[m] && len(masks) < 16 {
					masks[m] = true
					st.ThrottleMasks = append(st.ThrottleMasks, m)
				}
			default:
				vals[f] = append(vals[f], val)
			}
		}
	}
	for f, xs := range vals {
		g := GaugeStats{N: len(xs), First: xs[0], Last: xs[len(xs)-1]}
		g.Max = math.Inf(-1)
		for _, y := range xs {
			g.Mean += y
			g.Max = math.Max(g.Max, y)
		}
		g.Mean /= float64(len(xs))
		if st.Fields == nil {
			st.Fields = map[GPUField]GaugeStats{}
		}
		st.Fields[f] = g
	}
	for _, f := range gpuHeadline {
		if !seen[f] {
			st.Missing = append(st.Missing, f)
		}
	}
	for _, f := range []GPUField{GPUPowerThrottle, GPUThermThrottle} {
		if d, _ := counterDelta(r, f); d > 0 {
			if st.Throttle == nil {
				st.Throttle = map[GPUField]float64{}
			}
			st.Throttle[f] = d
		}
	}
	if d, resets := counterDelta(r, GPUEnergyMJ); resets >= 0 {
		st.EnergyJ, st.EnergySource, st.CounterResets = d/1000, energyCounter, resets
		return
	}
	// The power integral: trapezoids between readings with power.
	var prevT, prevW float64
	n := 0
	for _, x := range r {
		w, ok := x.v[GPUPowerW]
		if !ok {
			continue
		}
		if n > 0 {
			st.EnergyJ += (w + prevW) / 2 * (x.t - prevT) / 1000
		}
		prevT, prevW = x.t, w
		n++
	}
	if n >= 2 {
		st.EnergySource = powerIntegral
	} else {
		st.EnergyJ = 0
	}
}

// counterDelta is a counter's increase over readings that have it, a fall
// read as a restart from zero (resets counts them); resets is -1 when
// fewer than two readings have it.
func counterDelta(r []gpuAt, f GPUField) (d float64, resets int) {
	n := 0
	var prev float64
	for _, x := range r {
		v, ok := x.v[f]
		if !ok {
			continue
		}
		if n > 0 {
			if v >= prev {
				d += v - prev
			} else {
				d += v
				resets++
			}
		}
		prev = v
		n++
	}
	if n < 2 {
		return 0, -1
	}
	return d, resets
}

func point(smp *Sample) GPUPoint {
	p := GPUPoint{TMS: smp.TMS, GPUs: len(smp.GPUs)}
	// total is f summed over the GPUs that gave it, and their count.
	total := func(f GPUField) (float64, int) {
		t, n := 0.0, 0
		for i := range smp.GPUs {
			if v, ok := smp.GPUs[i].Values[f]; ok {
				t += v
				n++
			}
		}
		return t, n
	}
	sum := func(f GPUField) *float64 {
		if t, n := total(f); n > 0 {
			return &t
		}
		return nil
	}
	mean := func(f GPUField) *float64 {
		if t, n := total(f); n > 0 {
			t /= float64(n)
			return &t
		}
		return nil
	}
	p.PowerW, p.FBUsedMiB = sum(GPUPowerW), sum(GPUFBUsedMiB)
	p.SMActive, p.DRAMActive, p.UtilPct, p.SMClockMHz = mean(GPUSMActive), mean(GPUDRAMActive), mean(GPUUtilPct), mean(GPUSMClockMHz)
	for i := range smp.GPUs {
		if v, ok := smp.GPUs[i].Values[GPUTempC]; ok && (p.TempC == nil || v > *p.TempC) {
			p.TempC = &v
		}
		if m, ok := throttleMask(smp.GPUs[i].Values[GPUThrottleReasons]); ok {
			p.ThrottleReasons |= m
		}
	}
	p.Throttled = Slowed(p.ThrottleReasons)
	return p
}

// thin keeps at most n points of a timeline, evenly spaced, the first and
// last included.
// Thinned is v with its exporters' timelines thinned to about total points
// in all (at least minPerExporter each): what a run database keeps, so a
// stored run's GPU panel draws the run's shape at a bounded size however
// many exporters it had. v is not changed.
func (v *GPUView) Thinned(total, minPerExporter int) *GPUView {
	if v == nil {
		return nil
	}
	c := *v
	c.Exporters = append([]GPUExporter(nil), v.Exporters...)
	per := minPerExporter
	if n := len(c.Exporters); n > 0 {
		per = max(per, total/n)
	}
	for i := range c.Exporters {
		c.Exporters[i].Timeline = slices.Clone(thin(c.Exporters[i].Timeline, max(per, 2)))
	}
	return &c
}

func thin(p []GPUPoint, n int) []GPUPoint {
	if len(p) <= n {
		return p
	}
	out := make([]GPUPoint, 0, n)
	for i := range n {
		out = append(out, p[i*(len(p)-1)/(n-1)])
	}
	return out
}
