// Package simserver is knee's simulated OpenAI-compatible server: an
// http.Handler whose tokens leave at the times the simulation engine
// (internal/simengine) says, in real time, under real concurrency. It is the
// embedded default target of `knee bench`, the `knee serve` command and the
// ground truth of `knee selftest`.
//
// Reading order:
//   - server.go: Config, New, StartLocal, Describe, Close and routing.
//   - handler.go + request.go: request parsing and validation, the life of
//     one request (submit, wait, cancel on disconnect, faults).
//   - pacer.go: the one goroutine that runs the engine against the wall
//     clock. Server time is the time since the server started; the engine's
//     virtual time maps onto it (identity, or slower after the slow-decode
//     fault). A step is computed when it starts and its tokens are handed to
//     the writers when its end time arrives on the wall clock.
//   - writer.go + chunks.go: a few writer goroutines (one per CPU) that own
//     the streams of their shard and write each token as a pre-built SSE
//     chunk, one write and flush per stream per step; no encoding/json per
//     token. Each write's lateness against the simulated time is recorded
//     (PacingLag).
//   - faults.go: deterministic, seeded fault injection.
//   - metrics.go: /metrics with vLLM's metric names.
//   - errors.go: OpenAI-style error bodies.
//   - waker_linux.go: a timerfd wait, because Go's own timers can fire up
//     to a millisecond late on an idle process (the netpoller sleeps in
//     whole milliseconds).
//
// Per-request truth goes to the client: headers X-Knee-Queue-Ms and
// X-Knee-Prefill-Ms (sent with the first token) and a "knee_timing" object
// on the final chunk with the intended emission time of every token as an
// offset from the server's receipt of the request.
package simserver
