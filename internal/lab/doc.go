// Package lab builds knee's teaching scenarios from the simulator with
// fixed seeds — the numbers come from running the model, never from typed
// tables: a queue incident, a decode slowdown, a prefill incident (each a
// baseline run and an incident run, diagnosed), and a load sweep that shows
// throughput flattening while p95 TTFT climbs.
//
// Reading order: lab.go (Scenarios, Run), text.go (rendering), lengths.go.
package lab
