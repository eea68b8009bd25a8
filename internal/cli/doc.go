// Package cli implements knee's subcommands on spf13/cobra. Main takes args
// and writers and returns an exit code, so tests drive the whole CLI with
// buffers.
//
// Reading order:
//   - main.go and root.go: Main, the cobra command tree and exit codes
//     (errors.go: usage errors exit 2, failed SLOs 3).
//   - help.go and constants.go: the help groups every flag is placed in,
//     and help topics.
//   - the shared flag sets each command registers: targetFlags,
//     workloadFlags, sessionFlags, simEngineFlags, runOutputFlags
//     (output_flags.go: SLOs, --out, --json, --detail, JUnit, the store).
//   - one file per subcommand (bench.go, sim.go, sweep.go, serve.go,
//     report.go, runs.go, compare.go, ...): its command, flags and RunE,
//     which turns flags into a loadgen, sim or sweep run and hands the
//     records to report and store.
package cli
