package sim

import (
	"errors"
	"time"
)

// Client models the benchmark client whose measurements a run predicts.
// The zero value is an ideal client, knee's own: it sees every token the
// moment the server sends it and sends a closed-loop user's next request the
// moment the last answer ends. Another tool's client can be slower, and
// then what it measures is partly itself (docs/simulator.md, "The client").
type Client struct {
	// ChunkCost is the client's CPU time per streamed chunk (one per output
	// token), spent on one thread for all streams: one chunk at a time, the
	// streams with chunks waiting taken in turn (see clientThread). A token
	// is observed when the client has handled its chunk, so TTFT,
	// inter-token gaps and E2E are taken then, and a closed-loop user's next request waits for the last one. It
	// models a client such as a Python process under one GIL streaming
	// through LiteLLM (~0.4-0.7 ms a chunk).
	ChunkCost time.Duration
	// Gap is a closed-loop user's pause between one answer's end (as the
	// client observed it) and its next request: per-request work of the
	// client that does not hold up other streams. Sessions add it to the
	// think time.
	Gap time.Duration
	// Start delays every closed-loop user's first request by this long from
	// the run's start (the client's start-up: importing its libraries,
	// opening connections), inside the run's duration.
	Start time.Duration
}

// ServerLoop models the server's event loop that streams every answer: one
// thread that sends one chunk at a time for all streams, the streams with
// output waiting taken in turn, and a stream's tokens that queued while it
// waited sent together as one chunk. That is vLLM's API server: one asyncio
// loop in which AsyncLLM.output_handler pushes each engine step's outputs
// into per-request RequestOutputCollectors, which merge the outputs a
// request has not yet taken, and each request's generator turns what it
// takes into one SSE chunk (vllm/v1/engine/async_llm.py,
// vllm/v1/engine/output_processor.py). A loop that falls behind the engine
// so sends fewer, larger chunks: its chunk rate is capped at one per
// ChunkCost, its token rate is not. The zero value is a loop that keeps up.
type ServerLoop struct {
	// ChunkCost is the loop's time per chunk sent (detokenization, the
	// response object, its JSON and the socket write), whatever the
	// number of tokens the chunk carries.
	ChunkCost time.Duration
}

func (c Client) validate(closedLoop bool) error {
	if c.ChunkCost < 0 || c.Gap < 0 || c.Start < 0 {
		return errors.New("sim: client chunk cost, gap and start must not be negative")
	}
	if !closedLoop && (c.Gap > 0 || c.Start > 0) {
		return errors.New("sim: a client gap or start applies to closed loops (concurrency or sessions) only")
	}
	return nil
}

// clientThread is the client's one thread of control (a GIL): it handles
// one chunk at a time, taking the streams that have chunks waiting in turn
// (a Python thread whose socket has data waits for the GIL behind the
// others), so with a backlog each stream sees one token per round of all
// the waiting streams, and a new stream's first token waits one round.
//
// With merge set it is the server's loop (ServerLoop) instead: a turn takes
// every token the stream has waiting, as one chunk of taken tokens.
type clientThread struct {
	cost    int64 // ns per chunk
	merge   bool
	current int   // slot whose chunk is being handled; -1 when idle
	taken   int   // tokens in the chunk being handled
	ring    []int // slots with chunks waiting, in turn order
	head    int
}

// arrive takes a chunk of slot that reached the client at t. If the client
// was idle it starts on it: the time it will be done, for which slot.
func (c *clientThread) arrive(pend []request, slot int, t int64) (int64, int, bool) {
	p := &pend[slot]
	p.chunks++
	if !p.waiting && c.current != slot {
		p.waiting = true
		c.ring = append(c.ring, slot)
	}
	if c.current >= 0 {
		return 0, 0, false
	}
	return c.next(pend, t)
}

// done is the client finishing a chunk of slot at t (more: the slot has
// chunks waiting still); it starts on the next stream's chunk, if any.
func (c *clientThread) done(pend []request, slot int, more bool, t int64) (int64, int, bool) {
	c.current = -1
	if more {
		pend[slot].waiting = true
		c.ring = append(c.ring, slot)
	}
	return c.next(pend, t)
}

func (c *clientThread) next(pend []request, t int64) (int64, int, bool) {
	if c.head == len(c.ring) {
		c.ring, c.head = c.ring[:0], 0
		return 0, 0, false
	}
	slot := c.ring[c.head]
	c.head++
	if c.head >= 1024 && 2*c.head >= len(c.ring) {
		// A client that never catches up never empties its ring.
		c.ring, c.head = c.ring[:copy(c.ring, c.ring[c.head:])], 0
	}
	p := &pend[slot]
	p.waiting = false
	c.taken = 1
	if c.merge {
		c.taken = p.chunks
	}
	p.chunks -= c.taken
	c.current = slot
	return t + c.cost, slot, true
}
