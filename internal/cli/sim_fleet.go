package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/spf13/pflag"
)

// fleetFlags put several replicas of the simulated engine behind a router.
type fleetFlags struct {
	replicas        int
	router          string
	gatewayLimit    int
	prefill, decode int
	kvGBps          float64
	kvLatency       time.Duration
	file            string
	engines         []simengine.Config // from the fleet file
}

func (f *fleetFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.replicas, "replicas", 1, "engines (replicas) behind a router, each with the same preset, TP and limits")
	fs.StringVar(&f.router, "router", sim.RoundRobin, "how the router picks a replica: "+strings.Join(sim.Routers, ", "))
	fs.IntVar(&f.gatewayLimit, "gateway-queue-limit", 0, "reject an arrival at the gateway (429) while this many requests wait in the fleet (0: no limit)")
	fs.IntVar(&f.prefill, "prefill-replicas", 0, "disaggregate: replicas that only prefill (with --decode-replicas)")
	fs.IntVar(&f.decode, "decode-replicas", 0, "disaggregate: replicas that only decode, each prompt's KV moved to them from a prefill replica")
	fs.Float64Var(&f.kvGBps, "kv-link-gbps", sim.DefaultKVLink.GBps, "disaggregated: KV transfer bandwidth per GPU, GB/s (default: one 400 Gb/s RDMA NIC)")
	fs.DurationVar(&f.kvLatency, "kv-link-latency", sim.DefaultKVLink.Latency, "disaggregated: fixed KV hand-off time per request")
	fs.StringVar(&f.file, "fleet-file", "", "YAML list replicas: of {gpu, tp, count, max_num_seqs, max_num_batched_tokens}: a mixed fleet (docs/plan.md)")
}

// loadFile resolves --fleet-file over the engine the other flags give.
func (f *fleetFlags) loadFile(cat *simengine.Catalog, base simengine.Config) error {
	if f.file == "" {
		return nil
	}
	engines, err := sim.LoadFleetFile(cat, f.file, base)
	if err != nil {
		return Usagef("--fleet-file: %v", err)
	}
	f.engines, f.replicas = engines, len(engines)
	return nil
}

func (f *fleetFlags) disaggregated() bool { return f.prefill > 0 || f.decode > 0 }

// fleetConfig is the fleet the flags describe, around a run's config.
func (f *fleetFlags) fleetConfig(cfg sim.Config) sim.FleetConfig {
	fc := sim.FleetConfig{Config: cfg, Count: f.replicas, Router: f.router, GatewayQueueLimit: f.gatewayLimit, Replicas: f.engines}
	if f.disaggregated() {
		fc.Prefill, fc.Decode = f.prefill, f.decode
		fc.KVLink = sim.KVLink{GBps: f.kvGBps, Latency: f.kvLatency}
	}
	return fc
}

// active reports whether the run is a fleet rather than one engine.
func (f *fleetFlags) active() bool {
	return f.replicas > 1 || f.gatewayLimit > 0 || f.disaggregated() || f.file != ""
}

func (f *fleetFlags) validate() error {
	switch {
	case f.replicas < 1 || f.replicas > maxReplicas:
		return Usagef("--replicas %d: want 1 to %d", f.replicas, maxReplicas)
	case !slices.Contains(sim.Routers, f.router):
		return Usagef("--router %q: want one of %s", f.router, strings.Join(sim.Routers, ", "))
	case f.gatewayLimit < 0:
		return Usagef("--gateway-queue-limit %d: want 0 (none) or more", f.gatewayLimit)
	case f.disaggregated() && (f.prefill < 1 || f.decode < 1 || f.prefill+f.decode > maxReplicas):
		return Usagef("--prefill-replicas %d --decode-replicas %d: give both, at least 1 each", f.prefill, f.decode)
	case f.file != "" && (f.replicas > 1 || f.disaggregated()):
		return Usagef("--fleet-file gives the replicas: leave out --replicas and --prefill-replicas/--decode-replicas")
	case f.disaggregated() && f.replicas > 1:
		return Usagef("--replicas with --prefill-replicas/--decode-replicas: give the pools' sizes, not --replicas")
	case !(f.kvGBps > 0) || f.kvLatency < 0:
		return Usagef("--kv-link-gbps %v --kv-link-latency %v: want a positive bandwidth and a latency >= 0", f.kvGBps, f.kvLatency)
	}
	return nil
}

const maxReplicas = 1024

func (f *fleetFlags) configKV() [][2]string {
	if !f.active() {
		return nil
	}
	kv := [][2]string{{"replicas", strconv.Itoa(f.replicas)}, {"router", f.router}}
	if f.disaggregated() {
		kv = [][2]string{{"prefill_replicas", strconv.Itoa(f.prefill)}, {"decode_replicas", strconv.Itoa(f.decode)}, {"router", f.router},
			{"kv_link_gbps", strconv.FormatFloat(f.kvGBps, 'g', -1, 64)}, {"kv_link_latency", f.kvLatency.String()}}
	}
	if f.gatewayLimit > 0 {
		kv = append(kv, [2]string{"gateway_queue_limit", strconv.Itoa(f.gatewayLimit)})
	}
	return kv
}

// replicaTTFTs keeps each replica's measured TTFTs for its line in the report.
type replicaTTFTs map[string][]float32

func (m replicaTTFTs) add(r *record.Request) {
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

// fleetNotes says what the router did and how each replica fared.
func fleetNotes(f *fleetFlags, res sim.FleetResult, ttfts replicaTTFTs) []string {
	notes := []string{fmt.Sprintf("fleet: %d replicas behind the %s router; fleet prefix-cache hit rate %.1f%%", len(res.Replicas), f.router, 100*res.PrefixHitRate())}
	if f.gatewayLimit > 0 {
		notes = append(notes, fmt.Sprintf("gateway: %d arrivals rejected (429) with %d or more requests waiting in the fleet", res.GatewayRejected, f.gatewayLimit))
	}
	const maxLines = 32 // a big fleet's report lists the first replicas only
	for i, r := range res.Replicas {
		if i == maxLines {
			notes = append(notes, fmt.Sprintf("… and %d more replicas (records name their replica)", len(res.Replicas)-maxLines))
			break
		}
		line := replicaLine(r, res.End, ttfts[r.Name])
		if len(f.engines) > i {
			line = strings.Replace(line, ":", fmt.Sprintf(" (%s TP%d, max_num_seqs %d, max_num_batched_tokens %d):", f.engines[i].GPU.Name, f.engines[i].TP, r.Engine.MaxNumSeqs, r.Engine.MaxNumBatchedTokens), 1)
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
		q := func(p float64) time.Duration {
			return time.Duration(float64(ttfts[int(p*float64(len(ttfts)-1))]) * 1e9)
		}
		line += fmt.Sprintf(", TTFT p50 %s p95 %s", msStr(q(.5)), msStr(q(.95)))
	}
	return line
}

// fleetTarget describes a fleet for reports.
func fleetTarget(f *fleetFlags, c simengine.Config) string {
	if len(f.engines) > 0 {
		var groups []string
		for i := 0; i < len(f.engines); {
			j := i
			for j < len(f.engines) && f.engines[j].GPU.Name == f.engines[i].GPU.Name && f.engines[j].TP == f.engines[i].TP {
				j++
			}
			groups = append(groups, fmt.Sprintf("%d× %s TP%d", j-i, f.engines[i].GPU.Name, f.engines[i].TP))
			i = j
		}
		return fmt.Sprintf("simulated mixed fleet of %s: %s, behind a %s router", c.Model.Name, strings.Join(groups, " + "), f.router)
	}
	if f.disaggregated() {
		return fmt.Sprintf("simulated disaggregated fleet: %d prefill + %d decode replicas of %s on %d× %s, KV over %g GB/s per GPU + %v, %s router",
			f.prefill, f.decode, c.Model.Name, c.TP, c.GPU.Name, f.kvGBps, f.kvLatency, f.router)
	}
	return fmt.Sprintf("simulated fleet: %d× (%s on %d× %s) behind a %s router", f.replicas, c.Model.Name, c.TP, c.GPU.Name, f.router)
}
