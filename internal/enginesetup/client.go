package enginesetup

import (
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/sim"
)

// Client is the benchmark client knee sim predicts for (sim.Client): by
// default knee's own, which keeps up with any server; set, a slower client
// such as another tool's Python harness, whose figures are partly of
// itself (docs/simulator.md, "The client"). ServerChunkCost rides along:
// the server's streaming loop (sim.ServerLoop), the other thread a token
// passes on its way to the records. Its fields are filled by flags.
type Client struct {
	ChunkCost, Gap, Start time.Duration
	ServerChunkCost       time.Duration
}

// Model is the client the choice models, checked against the load it
// applies to.
func (c *Client) Model(closedLoop bool, duration time.Duration) (sim.Client, error) {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"client-chunk-cost", c.ChunkCost}, {"client-gap", c.Gap}, {"client-start", c.Start}} {
		if f.v < 0 {
			return sim.Client{}, badinput.Errorf("--%s %v: want a duration of 0 or more, such as 700us or 2s", f.name, f.v)
		}
	}
	if duration > 0 && c.Start >= duration {
		return sim.Client{}, badinput.Errorf("--client-start %v: the client would start after the run's --duration %v ends; want a shorter start-up", c.Start, duration)
	}
	cl := sim.Client{ChunkCost: c.ChunkCost, Gap: c.Gap, Start: c.Start}
	if cl == (sim.Client{}) {
		return cl, nil
	}
	if !closedLoop && (c.Gap > 0 || c.Start > 0) {
		name := "client-gap"
		if c.Gap == 0 {
			name = "client-start"
		}
		return sim.Client{}, badinput.Errorf("--%s applies to closed loops (--concurrency or --sessions): an open loop's arrivals do not wait for the client", name)
	}
	return cl, nil
}

// ServerLoop checks --server-chunk-cost against the client model and
// the load.
func (c *Client) ServerLoop() (sim.ServerLoop, error) {
	switch {
	case c.ServerChunkCost < 0:
		return sim.ServerLoop{}, badinput.Errorf("--server-chunk-cost %v: want a duration of 0 or more, such as 50us", c.ServerChunkCost)
	case c.ServerChunkCost == 0:
		return sim.ServerLoop{}, nil
	case c.ChunkCost > 0:
		return sim.ServerLoop{}, badinput.Errorf("--server-chunk-cost and --client-chunk-cost are not supported together yet: give one")
	}
	return sim.ServerLoop{ChunkCost: c.ServerChunkCost}, nil
}

// ConfigKV lists the client model for reports, when one is set.
func (c *Client) ConfigKV() [][2]string {
	var kv [][2]string
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{"client_chunk_cost", c.ChunkCost}, {"client_gap", c.Gap}, {"client_start", c.Start}, {"server_chunk_cost", c.ServerChunkCost}} {
		if f.v > 0 {
			kv = append(kv, [2]string{f.key, f.v.String()})
		}
	}
	return kv
}

// Note says, for a report, that the figures include a modelled client's
// own time ("" when none is modelled).
func (c *Client) Note() string {
	var client, notes []string
	for _, p := range c.ConfigKV() {
		if p[0] != "server_chunk_cost" {
			client = append(client, p[0]+" "+p[1])
		}
	}
	if len(client) > 0 {
		notes = append(notes, "client modelled ("+strings.Join(client, ", ")+"): the latencies and throughput are what that client measures, its own time included; server_phases are the server's (docs/simulator.md, \"The client\")")
	}
	if c.ServerChunkCost > 0 {
		notes = append(notes, "server streaming loop modelled (server_chunk_cost "+c.ServerChunkCost.String()+"): tokens leave the server one chunk at a time, several to a chunk when the loop falls behind the engine (docs/simulator.md, \"The server's streaming loop\")")
	}
	return strings.Join(notes, "; ")
}
