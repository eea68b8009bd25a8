package cli

import (
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/sim"
	"github.com/spf13/pflag"
)

// simClientFlags model the benchmark client knee sim predicts for
// (sim.Client): by default knee's own, which keeps up with any server; set,
// a slower client such as another tool's Python harness, whose figures are
// partly of itself (docs/simulator.md, "The client").
//
// --server-chunk-cost rides along: the server's streaming loop
// (sim.ServerLoop), the other thread a token passes on its way to the
// records.
type simClientFlags struct {
	chunkCost, gap, start time.Duration
	serverChunkCost       time.Duration
}

func (c *simClientFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&c.chunkCost, "client-chunk-cost", 0, "model a client that spends this long on each streamed chunk, one chunk at a time for all streams (e.g. 700us for a Python harness under one GIL streaming through LiteLLM; 0: knee's own client)")
	fs.DurationVar(&c.gap, "client-gap", 0, "closed loops: the client's pause between one answer's end and the same user's next request (0: none)")
	fs.DurationVar(&c.serverChunkCost, "server-chunk-cost", 0, "model the server's streaming loop: this long per chunk sent, one chunk at a time for all streams, a stream's tokens that waited sent as one chunk (vLLM's API server event loop; 0: a loop that keeps up)")
	fs.DurationVar(&c.start, "client-start", 0, "closed loops: the client's start-up before the users' first requests, inside --duration (0: none)")
}

// client validates the flags against the load they apply to.
func (c *simClientFlags) client(closedLoop bool, duration time.Duration) (sim.Client, error) {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"client-chunk-cost", c.chunkCost}, {"client-gap", c.gap}, {"client-start", c.start}} {
		if f.v < 0 {
			return sim.Client{}, Usagef("--%s %v: want a duration of 0 or more, such as 700us or 2s", f.name, f.v)
		}
	}
	if duration > 0 && c.start >= duration {
		return sim.Client{}, Usagef("--client-start %v: the client would start after the run's --duration %v ends; want a shorter start-up", c.start, duration)
	}
	cl := sim.Client{ChunkCost: c.chunkCost, Gap: c.gap, Start: c.start}
	if cl == (sim.Client{}) {
		return cl, nil
	}
	if !closedLoop && (c.gap > 0 || c.start > 0) {
		name := "client-gap"
		if c.gap == 0 {
			name = "client-start"
		}
		return sim.Client{}, Usagef("--%s applies to closed loops (--concurrency or --sessions): an open loop's arrivals do not wait for the client", name)
	}
	return cl, nil
}

// serverLoop validates --server-chunk-cost against the client model and
// the load.
func (c *simClientFlags) serverLoop() (sim.ServerLoop, error) {
	switch {
	case c.serverChunkCost < 0:
		return sim.ServerLoop{}, Usagef("--server-chunk-cost %v: want a duration of 0 or more, such as 50us", c.serverChunkCost)
	case c.serverChunkCost == 0:
		return sim.ServerLoop{}, nil
	case c.chunkCost > 0:
		return sim.ServerLoop{}, Usagef("--server-chunk-cost and --client-chunk-cost are not supported together yet: give one")
	}
	return sim.ServerLoop{ChunkCost: c.serverChunkCost}, nil
}

// configKV lists the client model for reports, when one is set.
func (c *simClientFlags) configKV() [][2]string {
	var kv [][2]string
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{"client_chunk_cost", c.chunkCost}, {"client_gap", c.gap}, {"client_start", c.start}, {"server_chunk_cost", c.serverChunkCost}} {
		if f.v > 0 {
			kv = append(kv, [2]string{f.key, f.v.String()})
		}
	}
	return kv
}

// note says, for a report, that the figures include a modelled client's
// own time ("" when none is modelled).
func (c *simClientFlags) note() string {
	var client, notes []string
	for _, p := range c.configKV() {
		if p[0] != "server_chunk_cost" {
			client = append(client, p[0]+" "+p[1])
		}
	}
	if len(client) > 0 {
		notes = append(notes, "client modelled ("+strings.Join(client, ", ")+"): the latencies and throughput are what that client measures, its own time included; server_phases are the server's (docs/simulator.md, \"The client\")")
	}
	if c.serverChunkCost > 0 {
		notes = append(notes, "server streaming loop modelled (server_chunk_cost "+c.serverChunkCost.String()+"): tokens leave the server one chunk at a time, several to a chunk when the loop falls behind the engine (docs/simulator.md, \"The server's streaming loop\")")
	}
	return strings.Join(notes, "; ")
}
