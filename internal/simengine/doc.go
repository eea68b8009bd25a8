// Package simengine is a discrete-event model of a continuous-batching LLM
// serving engine (vLLM V1-like) in virtual time. It imports only the
// standard library.
//
// Reading order:
//   - preset.go: GPU and Model, the embedded presets (presets/*/*.yaml, a
//     flat subset of YAML) and the Catalog that looks them up by alias.
//   - cost.go: the roofline step-cost model (T0, the linear layers' kernels
//     and attention's, each bound by its memory or its arithmetic, and the
//     all-reduce: StepTerms) and the GPU memory plan that sizes the KV cache.
//   - engine.go: the Engine: Submit/Cancel/AdvanceTo/Step/Stats. One Step
//     schedules running requests first, then admits waiting ones FCFS within
//     the token budget, sequence slots and 16-token KV blocks, preempting the
//     newest request by recompute when blocks run out; it advances virtual
//     time by the step's cost and emits one token per request that finished
//     its prefill or decoded.
//   - events.go: the event queue ordered by (time, priority, seq) that
//     simulations built on the Engine use for arrivals, and per-subsystem
//     seeded random sources.
//
// Time is int64 nanoseconds of virtual time; nothing reads the wall clock.
// docs/simulator.md describes the model, its constants and its validation.
package simengine
