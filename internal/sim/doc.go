// Package sim runs a whole load test in virtual time: a workload (lengths
// and arrivals, open or closed loop, sessions or a trace) against one
// simengine.Engine or a fleet of them behind a router, yielding the same
// record.Request values a real benchmark yields, with exact server phase
// times. It is the batch counterpart of the real-time simulated server
// (simserver); both drive the same unchanged Engine.
//
// Reading order:
//   - sim.go: Config (the workload and the run's limits), Run, Result and
//     Collect: one engine, its front end, arrivals or closed-loop users,
//     sessions, and the records built as tokens come out.
//   - client.go: the measuring client (Client: per-chunk CPU, gaps, start)
//     and the server's streaming loop (ServerLoop), which decide when a
//     token is seen; feclock.go: the front end's clock on shared cores.
//   - fleet.go: RunFleet: several replicas on one virtual clock, the
//     routers, gateway admission, prefill/decode disaggregation over a
//     KVLink; a fleet of one reproduces Run record for record
//     (TestFleetOfOneIsRun).
//   - fleetfile.go and presets.go: mixed-fleet and GPU/model preset files.
//
// Nothing reads the wall clock: a run is deterministic per seed.
package sim
