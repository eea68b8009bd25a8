package enginesetup

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
)

func fleetDefaults() Fleet {
	return Fleet{Replicas: 1, Router: sim.RoundRobin, KVGBps: sim.DefaultKVLink.GBps, KVLatency: sim.DefaultKVLink.Latency}
}

func TestFleetValidate(t *testing.T) {
	one := fleetDefaults()
	if err := one.Validate(); err != nil || one.Active() || one.ConfigKV() != nil {
		t.Errorf("one engine: %v, active %v, config %v", err, one.Active(), one.ConfigKV())
	}
	for _, tc := range []struct {
		set  func(*Fleet)
		want string
	}{
		{func(f *Fleet) { f.Replicas = MaxReplicas + 1 }, "--replicas 1025: want 1 to 1024"},
		{func(f *Fleet) { f.Router = "random" }, `--router "random": want one of`},
		{func(f *Fleet) { f.Prefill = 2 }, "--prefill-replicas 2 --decode-replicas 0: give both"},
		{func(f *Fleet) { f.Prefill, f.Decode, f.Replicas = 1, 1, 3 }, "--replicas with --prefill-replicas/--decode-replicas"},
		{func(f *Fleet) { f.File, f.Replicas = "f.yaml", 2 }, "--fleet-file gives the replicas"},
		{func(f *Fleet) { f.KVGBps = 0 }, "--kv-link-gbps 0 --kv-link-latency"},
	} {
		f := fleetDefaults()
		tc.set(&f)
		if err := f.Validate(); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
}

// A disaggregated fleet names its pools and link in its target and
// config; each replica's line carries its own TTFTs, a disaggregated
// request counting for both its replicas.
func TestFleetDescribes(t *testing.T) {
	c := enginetest.H100Llama8B(t, 1)
	f := fleetDefaults()
	f.Prefill, f.Decode, f.GatewayLimit = 1, 2, 5
	if !f.Active() || !strings.HasPrefix(f.Target(c), "simulated disaggregated fleet: 1 prefill + 2 decode replicas of "+c.Model.Name) {
		t.Errorf("target %q", f.Target(c))
	}
	if kv := f.ConfigKV(); !slices.Contains(kv, [2]string{"decode_replicas", "2"}) || kv[len(kv)-1] != [2]string{"gateway_queue_limit", "5"} {
		t.Errorf("config %v", kv)
	}
	ttfts := ReplicaTTFTs{}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ttfts.Add(&record.Request{Replica: "p0/d1", Sent: 0, FirstToken: ms(40), Done: ms(90)})
	ttfts.Add(&record.Request{Replica: "p0/d0", Sent: 0, FirstToken: ms(20), Done: ms(90), Warmup: true})
	res := sim.FleetResult{Replicas: []sim.ReplicaResult{{Name: "p0", Routed: 1, Completed: 1}, {Name: "d0"}, {Name: "d1", Routed: 1, Completed: 1}}}
	res.End = time.Second
	notes := f.Notes(res, ttfts)
	if len(notes) != 5 || !strings.HasSuffix(notes[2], "TTFT p50 40.0 ms p95 40.0 ms") || strings.Contains(notes[3], "TTFT") ||
		!strings.HasSuffix(notes[4], "TTFT p50 40.0 ms p95 40.0 ms") || !strings.HasPrefix(notes[1], "gateway: 0 arrivals rejected (429) with 5 or more") {
		t.Errorf("notes %q", notes)
	}
}
