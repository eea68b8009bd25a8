// Package sim runs a whole load test in virtual time: a workload (lengths
// and arrivals, open or closed loop, sessions or a trace) against one
// simengine.Engine or a fleet of them behind a router, yielding the same
// record.Request values a real benchmark yields, with exact server phase
// times. It is the batch counterpart of the real-time simulated server
// (simserver); both drive the same unchanged Engine.
//
// There is one event loop (loop.go). Run is RunFleet with one replica, so
// whatever one engine runs a fleet runs too. The loop's methods are the
// steps a request takes, in order:
//
//   - arrive: an arrival, or a closed-loop user's or session's next
//     request, is issued; under MaxConcurrency it may wait in the client.
//     A closed loop's users may be in several pools (a mix's classes with
//     their own concurrency); probes arrive beside the load at a constant
//     rate, outside MaxConcurrency and the request count.
//   - request: its content (a session's history and new message, a
//     workload's shared prefix, or bare lengths).
//   - route: the gateway admits it or refuses it (429), and the router
//     picks a replica.
//   - frontEnd: the replica's front end (HTTP, tokenization) spends its
//     costs on its own clock, slowed while the engine steps on shared cores.
//   - submit or refuse: the engine takes it, or a record says why not
//     (429 queue full, 400 too long).
//   - step: of the replicas with work, the one furthest behind steps; an
//     event at or before its clock comes first.
//   - emit: each token leaves the engine, straight to the client, or
//     through the client's one thread or the replica's streaming loop
//     (chunk, handled), which take the streams in turn.
//   - observe: the client sees a chunk; with the last, the request is over.
//   - complete: its record is handed over, and the user's next request or
//     the session's next turn is scheduled.
//   - finish: the result, with each replica's counters.
//
// Reading order:
//   - sim.go: Config (the workload and the run's limits), Run, Result and
//     Collect.
//   - loop.go: the loop and its steps.
//   - client.go: the measuring client (Client: per-chunk CPU, gaps, start)
//     and the server's streaming loop (ServerLoop), which decide when a
//     token is seen; feclock.go: the front end's clock on shared cores.
//   - fleet.go: FleetConfig, RunFleet and the routers, gateway admission,
//     prefill/decode disaggregation over a KVLink; a fleet of one
//     reproduces Run record for record (TestFleetOfOneIsRun).
//   - fleetfile.go and presets.go: mixed-fleet and GPU/model preset files.
//
// Nothing reads the wall clock: a run is deterministic per seed.
package sim
