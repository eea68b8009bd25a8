package cli

import (
	"time"

	"github.com/knee-dev/knee/internal/enginesetup"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/spf13/pflag"
)

// simClientFlags model the benchmark client knee sim predicts for, and the
// server's streaming loop (enginesetup.Client).
type simClientFlags struct{ enginesetup.Client }

func (c *simClientFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&c.ChunkCost, "client-chunk-cost", 0, "model a client that spends this long on each streamed chunk, one chunk at a time for all streams (e.g. 700us for a Python harness under one GIL streaming through LiteLLM; 0: knee's own client)")
	fs.DurationVar(&c.Gap, "client-gap", 0, "closed loops: the client's pause between one answer's end and the same user's next request (0: none)")
	fs.DurationVar(&c.ServerChunkCost, "server-chunk-cost", 0, "model the server's streaming loop: this long per chunk sent, one chunk at a time for all streams, a stream's tokens that waited sent as one chunk (vLLM's API server event loop; 0: a loop that keeps up)")
	fs.DurationVar(&c.Start, "client-start", 0, "closed loops: the client's start-up before the users' first requests, inside --duration (0: none)")
}

// The names sim.go and sweep_sim.go call.
func (c *simClientFlags) client(closedLoop bool, duration time.Duration) (sim.Client, error) {
	return c.Model(closedLoop, duration)
}
func (c *simClientFlags) serverLoop() (sim.ServerLoop, error) { return c.ServerLoop() }
func (c *simClientFlags) configKV() [][2]string               { return c.ConfigKV() }
func (c *simClientFlags) note() string                        { return c.Note() }
