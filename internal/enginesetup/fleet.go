package enginesetup

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
)

// MaxReplicas bounds a simulated fleet (and a plan's deployment).
const MaxReplicas = 1024

// Fleet puts several replicas of the simulated engine behind a router;
// its fields are filled by flags.
type Fleet struct {
	Replicas        int
	Router          string
	GatewayLimit    int
	Prefill, Decode int
	KVGBps          float64
	KVLatency       time.Duration
	File            string             // --fleet-file
	Engines         []simengine.Config // from File
}

// LoadFile resolves the fleet file over the engine the other flags give.
func (f *Fleet) LoadFile(cat *simengine.Catalog, base simengine.Config) error {
	if f.File == "" {
		return nil
	}
	engines, err := sim.LoadFleetFile(cat, f.File, base)
	if err != nil {
		return badinput.Errorf("--fleet-file: %v", err)
	}
	f.Engines, f.Replicas = engines, len(engines)
	return nil
}

func (f *Fleet) disaggregated() bool { return f.Prefill > 0 || f.Decode > 0 }

// Config is the fleet around a run's config.
func (f *Fleet) Config(cfg sim.Config) sim.FleetConfig {
	fc := sim.FleetConfig{Config: cfg, Count: f.Replicas, Router: f.Router, GatewayQueueLimit: f.GatewayLimit, Replicas: f.Engines}
	if f.disaggregated() {
		fc.Prefill, fc.Decode = f.Prefill, f.Decode
		fc.KVLink = sim.KVLink{GBps: f.KVGBps, Latency: f.KVLatency}
	}
	return fc
}

// Active reports whether the run is a fleet rather than one engine.
func (f *Fleet) Active() bool {
	return f.Replicas > 1 || f.GatewayLimit > 0 || f.disaggregated() || f.File != ""
}

// Validate refuses a fleet that cannot be built.
func (f *Fleet) Validate() error {
	switch {
	case f.Replicas < 1 || f.Replicas > MaxReplicas:
		return badinput.Errorf("--replicas %d: want 1 to %d", f.Replicas, MaxReplicas)
	case !slices.Contains(sim.Routers, f.Router):
		return badinput.Errorf("--router %q: want one of %s", f.Router, strings.Join(sim.Routers, ", "))
	case f.GatewayLimit < 0:
		return badinput.Errorf("--gateway-queue-limit %d: want 0 (none) or more", f.GatewayLimit)
	case f.disaggregated() && (f.Prefill < 1 || f.Decode < 1 || f.Prefill+f.Decode > MaxReplicas):
		return badinput.Errorf("--prefill-replicas %d --decode-replicas %d: give both, at least 1 each", f.Prefill, f.Decode)
	case f.File != "" && (f.Replicas > 1 || f.disaggregated()):
		return badinput.Errorf("--fleet-file gives the replicas: leave out --replicas and --prefill-replicas/--decode-replicas")
	case f.disaggregated() && f.Replicas > 1:
		return badinput.Errorf("--replicas with --prefill-replicas/--decode-replicas: give the pools' sizes, not --replicas")
	case !(f.KVGBps > 0) || f.KVLatency < 0:
		return badinput.Errorf("--kv-link-gbps %v --kv-link-latency %v: want a positive bandwidth and a latency >= 0", f.KVGBps, f.KVLatency)
	}
	return nil
}

// ConfigKV lists the fleet for reports (nothing for one engine).
func (f *Fleet) ConfigKV() [][2]string {
	if !f.Active() {
		return nil
	}
	kv := [][2]string{{"replicas", strconv.Itoa(f.Replicas)}, {"router", f.Router}}
	if f.disaggregated() {
		kv = [][2]string{{"prefill_replicas", strconv.Itoa(f.Prefill)}, {"decode_replicas", strconv.Itoa(f.Decode)}, {"router", f.Router},
			{"kv_link_gbps", strconv.FormatFloat(f.KVGBps, 'g', -1, 64)}, {"kv_link_latency", f.KVLatency.String()}}
	}
	if f.GatewayLimit > 0 {
		kv = append(kv, [2]string{"gateway_queue_limit", strconv.Itoa(f.GatewayLimit)})
	}
	return kv
}

// ReplicaTTFTs keeps each replica's measured TTFTs for its line in the
// report.
type ReplicaTTFTs map[string][]float32

// Add notes r's TTFT under its replica.
func (m ReplicaTTFTs) Add(r *record.Request) {
	if r.Warmup || r.Replica == "" {
		return
	}
	if ttft, ok := r.TTFT(); ok && r.OK() {
		// A disaggregated request ("p0/d1") counts for both its replicas.
		for _, name := range strings.Split(r.Replica, "/") {
			m[name] = append(m[name], float32(ttft.Seconds()))
		}
	}
}

// Notes say what the router did and how each replica fared.
func (f *Fleet) Notes(res sim.FleetResult, ttfts ReplicaTTFTs) []string {
	notes := []string{fmt.Sprintf("fleet: %d replicas behind the %s router; fleet prefix-cache hit rate %.1f%%", len(res.Replicas), f.Router, 100*res.PrefixHitRate())}
	if f.GatewayLimit > 0 {
		notes = append(notes, fmt.Sprintf("gateway: %d arrivals rejected (429) with %d or more requests waiting in the fleet", res.GatewayRejected, f.GatewayLimit))
	}
	const maxLines = 32 // a big fleet's report lists the first replicas only
	for i, r := range res.Replicas {
		if i == maxLines {
			notes = append(notes, fmt.Sprintf("… and %d more replicas (records name their replica)", len(res.Replicas)-maxLines))
			break
		}
		line := replicaLine(r, res.End, ttfts[r.Name])
		if len(f.Engines) > i {
			line = strings.Replace(line, ":", fmt.Sprintf(" (%s TP%d, max_num_seqs %d, max_num_batched_tokens %d):", f.Engines[i].GPU.Name, f.Engines[i].TP, r.Engine.MaxNumSeqs, r.Engine.MaxNumBatchedTokens), 1)
		}
		notes = append(notes, line)
	}
	return notes
}

func replicaLine(r sim.ReplicaResult, end time.Duration, ttfts []float32) string {
	s := r.Engine
	busy := 0.0
	if end > 0 {
		busy = 100 * float64(s.BusyNS) / float64(end)
	}
	line := fmt.Sprintf("replica %s: %d routed, %d completed, %d rejected, %d preemptions, busy %.0f%%", r.Name, r.Routed, r.Completed, r.Rejected, s.Preemptions, busy)
	if s.PrefixCacheQueries > 0 {
		line += fmt.Sprintf(", prefix hits %.1f%%", 100*float64(s.PrefixCacheHits)/float64(s.PrefixCacheQueries))
	}
	if len(ttfts) > 0 {
		slices.Sort(ttfts)
		q := func(p float64) float64 { // in ms, through a Duration as the live view's
			return float64(time.Duration(float64(ttfts[int(p*float64(len(ttfts)-1))])*1e9)) / 1e6
		}
		line += fmt.Sprintf(", TTFT p50 %.1f ms p95 %.1f ms", q(.5), q(.95))
	}
	return line
}

// Target describes the fleet for reports.
func (f *Fleet) Target(c simengine.Config) string {
	if len(f.Engines) > 0 {
		var groups []string
		for i := 0; i < len(f.Engines); {
			j := i
			for j < len(f.Engines) && f.Engines[j].GPU.Name == f.Engines[i].GPU.Name && f.Engines[j].TP == f.Engines[i].TP {
				j++
			}
			groups = append(groups, fmt.Sprintf("%d× %s TP%d", j-i, f.Engines[i].GPU.Name, f.Engines[i].TP))
			i = j
		}
		return fmt.Sprintf("simulated mixed fleet of %s: %s, behind a %s router", c.Model.Name, strings.Join(groups, " + "), f.Router)
	}
	if f.disaggregated() {
		return fmt.Sprintf("simulated disaggregated fleet: %d prefill + %d decode replicas of %s on %d× %s, KV over %g GB/s per GPU + %v, %s router",
			f.Prefill, f.Decode, c.Model.Name, c.TP, c.GPU.Name, f.KVGBps, f.KVLatency, f.Router)
	}
	return fmt.Sprintf("simulated fleet: %d× (%s on %d× %s) behind a %s router", f.Replicas, c.Model.Name, c.TP, c.GPU.Name, f.Router)
}
