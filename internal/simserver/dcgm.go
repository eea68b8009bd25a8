package simserver

import (
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DCGMPath is where the server exposes its simulated GPUs the way NVIDIA's
// dcgm-exporter exposes real ones (its field names, types, units and
// labels), so knee bench --gpu-metrics-url runs end to end without a GPU.
// It is a path of its own, not /metrics, as a real deployment scrapes the
// exporter (port 9400) apart from the engine.
const DCGMPath = "/dcgm/metrics"

// The simulated exporter's constants: what a real exporter reads from the
// hardware and the simulator does not model.
const (
	// dcgmHost is the Hostname label of the simulated GPUs.
	dcgmHost = "knee-serve"
	// dcgmIdleClockMHz is an idle GPU's SM clock (what dcgm-exporter read
	// of two idle L40S: internal/scrape/testdata/dcgm).
	dcgmIdleClockMHz = 210
	// A stand-in for temperature, which the simulator does not model:
	// ambient plus a rise in proportion to power over TDP.
	dcgmAmbientC, dcgmRiseAtTDPC = 30.0, 45.0
)

// gpuState is the engine's GPU figures at one instant (virtual ns), per
// GPU: its energy and the time it was busy, running kernels, computing
// and moving memory.
type gpuState struct {
	t                     int64
	energyJ               float64
	busy, sm, cmp, dramNS float64
}

// dcgmCollector computes the exporter's fields at each scrape from the
// engine's own counters. Ratios and power are averages since the previous
// scrape (a real exporter's are over its sampling interval); the energy
// counter is exact.
type dcgmCollector struct {
	s     *Server
	descs map[string]*prometheus.Desc
	uuids []string

	mu        sync.Mutex
	prev      gpuState
	hasPrev   bool
	lastPower float64
	lastShare [4]float64 // util, sm, dram, tensor of the last window
}

// dcgmFields are the exposed fields: name, type, help.
var dcgmFields = []struct {
	name    string
	counter bool
	help    string
}{
	{"DCGM_FI_DEV_SM_CLOCK", false, "SM clock frequency (in MHz)."},
	{"DCGM_FI_DEV_GPU_TEMP", false, "GPU temperature (in C)."},
	{"DCGM_FI_DEV_POWER_USAGE", false, "Power draw (in W)."},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", true, "Total energy consumption since boot (in mJ)."},
	{"DCGM_FI_DEV_GPU_UTIL", false, "GPU utilization (in %)."},
	{"DCGM_FI_DEV_FB_FREE", false, "Frame buffer memory free (in MiB)."},
	{"DCGM_FI_DEV_FB_USED", false, "Frame buffer memory used (in MiB)."},
	{"DCGM_FI_PROF_SM_ACTIVE", false, "The ratio of cycles an SM has at least 1 warp assigned."},
	{"DCGM_FI_PROF_DRAM_ACTIVE", false, "Ratio of cycles the device memory interface is active sending or receiving data."},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", false, "Ratio of cycles the tensor (HMMA) pipe is active."},
}

var dcgmLabels = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}

func newDCGM(s *Server) *dcgmCollector {
	c := &dcgmCollector{s: s, descs: map[string]*prometheus.Desc{}}
	for _, f := range dcgmFields {
		c.descs[f.name] = prometheus.NewDesc(f.name, f.help, dcgmLabels, nil)
	}
	// Stable per model and GPU preset, like a real GPU's UUID per board.
	for i := range s.cfg.Engine.TP {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%s/%d/%d", s.cfg.Engine.GPU.Name, s.model, s.cfg.Seed, i)
		x, y := h.Sum64(), h.Sum64()*0x9e3779b97f4a7c15
		c.uuids = append(c.uuids, fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", uint32(x>>32), uint16(x>>16), uint16(x), uint16(y>>48), y&0xffffffffffff))
	}
	return c
}

func (c *dcgmCollector) handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// Describe sends the fields' descriptors.
func (c *dcgmCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// state is the engine's per-GPU figures now: an idle engine's clock lags
// the wall clock (it advances at the next arrival), so idle time up to now
// is added at idle power; a step under way counts whole, from its start.
func (s *Server) gpuState() (gpuState, bool) {
	s.mu.Lock()
	st := s.eng.Stats()
	now := s.clk.toVirtual(s.now())
	s.mu.Unlock()
	if st.IdlePowerW <= 0 || st.GPUs <= 0 {
		return gpuState{}, false
	}
	t := max(now, st.Now)
	idle := float64(t-st.Now) / 1e9 * st.IdlePowerW
	return gpuState{t: t, energyJ: st.EnergyJ/float64(st.GPUs) + idle, busy: float64(st.BusyNS), sm: st.SMActiveNS, cmp: st.ComputeActiveNS, dramNS: st.DRAMActiveNS}, true
}

// GPUEnergyJ is all the simulated GPUs' energy from the server's start to
// now, as its dcgm endpoint's counters sum it (0: the GPU preset has no
// power model).
func (s *Server) GPUEnergyJ() float64 {
	g, ok := s.gpuState()
	if !ok {
		return 0
	}
	return g.energyJ * float64(s.cfg.Engine.TP)
}

// Collect computes the fields for every simulated GPU (all TP ranks run
// the same steps, so they read alike but for their labels).
func (c *dcgmCollector) Collect(ch chan<- prometheus.Metric) {
	g, ok := c.s.gpuState()
	if !ok {
		return // no power model: an exporter with nothing to say
	}
	gpu := c.s.cfg.Engine.GPU
	c.mu.Lock()
	p := c.prev
	if !c.hasPrev {
		p = gpuState{} // the first window: since the server started
	}
	if dt := float64(g.t - p.t); dt > 0 {
		share := func(a, b float64) float64 { return math.Min(1, math.Max(0, (a-b)/dt)) }
		c.lastPower = (g.energyJ - p.energyJ) / (dt / 1e9)
		c.lastShare = [4]float64{share(g.busy, p.busy), share(g.sm, p.sm), share(g.dramNS, p.dramNS), share(g.cmp, p.cmp)}
		c.prev, c.hasPrev = g, true
	} else if !c.hasPrev {
		c.lastPower = gpu.IdlePowerW()
	}
	power, sh := c.lastPower, c.lastShare
	c.mu.Unlock()

	clock := float64(dcgmIdleClockMHz)
	if sh[0] > 0 && gpu.BoostClockMHz > 0 {
		clock = gpu.BoostClockMHz
	}
	memUtil := c.s.cfg.Engine.GPUMemoryUtilization
	if memUtil <= 0 {
		memUtil = 0.9
	}
	total := gpu.MemoryGiB * 1024
	used := math.Round(total * memUtil)
	vals := map[string]float64{
		"DCGM_FI_DEV_GPU_TEMP":                 math.Round(dcgmAmbientC + dcgmRiseAtTDPC*power/gpu.TDPWatts),
		"DCGM_FI_DEV_POWER_USAGE":              power,
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": math.Round(g.energyJ * 1000),
		"DCGM_FI_DEV_GPU_UTIL":                 math.Round(100 * sh[0]),
		"DCGM_FI_DEV_FB_FREE":                  math.Round(total - used),
		"DCGM_FI_DEV_FB_USED":                  used,
		"DCGM_FI_PROF_SM_ACTIVE":               sh[1],
		"DCGM_FI_PROF_DRAM_ACTIVE":             sh[2],
		"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":      sh[3],
	}
	if gpu.BoostClockMHz > 0 {
		vals["DCGM_FI_DEV_SM_CLOCK"] = clock
	}
	for i, uuid := range c.uuids {
		idx := strconv.Itoa(i)
		lv := []string{idx, uuid, fmt.Sprintf("00000000:%02X:00.0", 0x18+i), "nvidia" + idx, gpu.Name + " (knee simulated)", dcgmHost}
		for _, f := range dcgmFields {
			v, ok := vals[f.name]
			if !ok {
				continue
			}
			vt := prometheus.GaugeValue
			if f.counter {
				vt = prometheus.CounterValue
			}
			ch <- prometheus.MustNewConstMetric(c.descs[f.name], vt, v, lv...)
		}
	}
}
