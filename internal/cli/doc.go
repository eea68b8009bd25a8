// Package cli implements knee's subcommands on spf13/cobra. Main takes args
// and writers and returns an exit code, so tests drive the whole CLI with
// buffers.
//
// Reading order:
//   - main.go and root.go: Main, the cobra command tree and exit codes
//     (errors.go: bad input, internal/badinput, exits 2; failed SLOs 3).
//     internal/cmdhelp renders help (flag groups, topics), flag errors and
//     completion values on cobra's templates.
//   - the shared flag sets each command registers: targetFlags,
//     workloadFlags, sessionFlags, simEngineFlags, runOutputFlags
//     (output_flags.go: SLOs, --out, --json, --detail, JUnit, the store).
//   - one file per subcommand (bench.go, sim.go, sweep.go, serve.go,
//     report.go, runs.go, compare.go, ...): its command, flags and RunE,
//     which turns flags into a loadgen, sim or sweep run and hands the
//     records to report and store.
//
// Logic lives in library packages with their own tests; a command file
// declares flags and wires: internal/runs (the run database: open, load,
// list, export, import), internal/liveview (bench's progress),
// internal/scenario (scenario files), internal/enginesetup (the simulated
// engine, fleet and client the flags choose), internal/prompttok (prompts
// in the server's tokens), and calibrate, compare, ingest, junit, report
// and selftest for their commands' checks and text.
package cli
