// Package sweep steps the load on a service (or the simulator), and finds in
// the measured curve the knee — where extra load buys little throughput
// while TTFT grows — and the SLO-safe point — the highest load at which every
// SLO holds. The method is described and cited in docs/sweep.md.
//
// Reading order:
//
//   - step.go: Load, Step (one measured load level) and its JSON shape, whose
//     flat field names are also the CSV column names.
//   - knee.go: FindKnee (Kneedle on the throughput envelope, with TTFT growth
//     as evidence) and SafePoint.
//   - analyze.go: Analyze ties knee, safe point and grid warnings into a Result.
//   - csv.go: ReadCSV, points measured by any tool (knee sweep --from).
//   - run.go: Runner, Plan (explicit steps or automatic growth + bisection)
//     and Run.
//   - runners.go: the simulator runner and the real-target runner.
package sweep
