package cli

import (
	"strings"

	"github.com/knee-dev/knee/internal/enginesetup"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/spf13/pflag"
)

// fleetFlags put several replicas of the simulated engine behind a router
// (enginesetup.Fleet).
type fleetFlags struct{ enginesetup.Fleet }

func (f *fleetFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.Replicas, "replicas", 1, "engines (replicas) behind a router, each with the same preset, TP and limits")
	fs.StringVar(&f.Router, "router", sim.RoundRobin, "how the router picks a replica: "+strings.Join(sim.Routers, ", "))
	fs.IntVar(&f.GatewayLimit, "gateway-queue-limit", 0, "reject an arrival at the gateway (429) while this many requests wait in the fleet (0: no limit)")
	fs.IntVar(&f.Prefill, "prefill-replicas", 0, "disaggregate: replicas that only prefill (with --decode-replicas)")
	fs.IntVar(&f.Decode, "decode-replicas", 0, "disaggregate: replicas that only decode, each prompt's KV moved to them from a prefill replica")
	fs.Float64Var(&f.KVGBps, "kv-link-gbps", sim.DefaultKVLink.GBps, "disaggregated: KV transfer bandwidth per GPU, GB/s (default: one 400 Gb/s RDMA NIC)")
	fs.DurationVar(&f.KVLatency, "kv-link-latency", sim.DefaultKVLink.Latency, "disaggregated: fixed KV hand-off time per request")
	fs.StringVar(&f.File, "fleet-file", "", "YAML list replicas: of {gpu, tp, count, max_num_seqs, max_num_batched_tokens}: a mixed fleet (docs/plan.md)")
}

// maxReplicas bounds --replicas and plan's --max-replicas.
const maxReplicas = enginesetup.MaxReplicas
