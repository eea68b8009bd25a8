// Package diagnose says which phase of the request lifecycle is the
// bottleneck — queue, prefill or decode — or that errors or the client
// itself are, with the evidence and the action it points to.
//
// Reading order:
//
//   - facts.go: Facts, the per-window numbers a verdict is reasoned from
//     (phase means, per-token decode time, TTFT, lag, correlations).
//   - diagnose.go: Diagnose, the rules: errors, client lag, rejections, then
//     where the added latency went against a baseline (server phases when
//     the records have them, else TTFT split by what input length explains,
//     and the per-token decode time), or phase shares and correlations
//     without one. docs/diagnosis.md states the rules and their limits.
//   - window.go: baseline and window selection within one run.
//   - input.go: Read for knee records.jsonl, per-request phase tables (CSV
//     or JSONL) and vLLM bench serve result JSON.
package diagnose
