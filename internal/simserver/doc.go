// Package simserver is knee's simulated OpenAI-compatible server: an
// http.Handler whose tokens leave at the times the simulation engine
// (internal/simengine) says, in real time, under real concurrency. It is the
// embedded default target of `knee bench`, the `knee serve` command and the
// ground truth of `knee selftest`.
//
// Reading order:
//   - server.go: Config, New, StartLocal, Describe, Close and routing.
//   - handler.go + request.go: request parsing and validation, the life of
//     one request (submit, wait, cancel on disconnect, faults). On the
//     server's own listener (Start, StartLocal) a streaming request takes
//     over its connection right after submission; its handler goroutine then
//     watches the connection (a departed client is canceled at once) and
//     hands it back for keep-alive when the stream ends (recycle.go).
//   - recycle.go + kstamp_linux.go: the listener that takes connections back,
//     and arrival stamps: a request's receipt time is when its first bytes
//     reached the socket (the kernel's SO_TIMESTAMPNS on Linux), not when a
//     busy process got round to parsing it.
//   - pacer.go: the one goroutine that runs the engine against the wall
//     clock. Server time is the time since the server started; the engine's
//     virtual time maps onto it (identity, or slower after the slow-decode
//     fault). A step is computed when it starts and its tokens are handed to
//     the writers when its end time arrives on the wall clock.
//   - writer.go + chunks.go: a few writer goroutines (one per CPU) that own
//     the streams of their shard and write each token as a pre-built SSE
//     chunk, one write(2) per stream per step (with the HTTP chunked framing
//     written directly on a taken-over connection); no encoding/json per
//     token, no goroutine wake-up per token. First tokens go first in a
//     step's burst. One clock read per write, just before the write(2),
//     stamps the tokens it carries: that is their actual write time (sent in
//     knee_timing) and, against the simulated time, their pacing lag
//     (PacingLag).
//   - faults.go: deterministic, seeded fault injection.
//   - metrics.go: /metrics with vLLM's metric names.
//   - errors.go: OpenAI-style error bodies.
//   - pacer.go sleeps with internal/wake's Waker, which wakes on whichever
//     comes first of a Go timer and a timerfd: Go's timers can fire up to a
//     millisecond late on an idle process (the netpoller sleeps in whole
//     milliseconds), and a ready timerfd can go unnoticed for up to 10 ms
//     on a busy one (the netpoller is consulted only when a P runs out of
//     work).
//
// Per-request truth goes to the client: headers X-Knee-Queue-Ms and
// X-Knee-Prefill-Ms (sent with the first token) and a "knee_timing" object
// on the final chunk: queue_ms, prefill_ms, decode_ms, token_times_ms (the
// intended, simulated emission time of every token) and write_times_ms
// (when each token's bytes were actually written), both as offsets from the
// server's receipt of the request. A client's measurement error is judged
// against write_times_ms; write − intended is the server's pacing lag.
package simserver
