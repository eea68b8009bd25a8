// Package cli implements knee's subcommands. Main takes args and writers and
// returns an exit code, so tests drive the whole CLI with buffers.
//
// Reading order: this file (dispatch, exit codes), errors.go, then one file
// per subcommand (bench.go, sim.go, serve.go, sweep.go, ...).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// Version is knee's version, stamped into every stored run.
var Version = "0.1.0-dev"

// Env is what a subcommand may touch of the outside world.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads environment variables (injected for tests).
	Getenv func(string) string
	// IsTerminal reports whether Stdout is an interactive terminal.
	IsTerminal bool
	// onFlagSet, when set, sees every flag set a command builds (shell
	// completion lists the flags this way, by asking each command for -h).
	onFlagSet func(*flag.FlagSet)
}

type command struct {
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// commands is the table of subcommands; each lives in its own file.
var commands = map[string]command{
	"bench":     {"load-test an OpenAI-compatible streaming endpoint (embedded simulated server by default)", runBench},
	"sweep":     {"step the load to find the knee and the SLO-safe point", runSweep},
	"diagnose":  {"say which phase (queue, prefill, decode) is the bottleneck", runDiagnose},
	"sim":       {"simulate a serving engine in virtual time (knee sim sweep for a curve)", runSim},
	"plan":      {"find the cheapest simulated deployment (GPU, TP, replicas, limits, router) that meets the SLOs at a load", runPlan},
	"serve":     {"run the simulated OpenAI-compatible server", runServe},
	"selftest":  {"measure knee's own measurement error and CPU cost on this machine", runSelftest},
	"calibrate": {"fit the simulator's step costs to a live server; writes a profile for sim and serve", runCalibrate},
	"lab":       {"teaching scenarios: queue, decode, prefill, sweep", runLab},
	"runs":      {"list stored runs", runRuns},
	"report":    {"render a stored run as text, md, csv, json or html", runReport},
	"compare":   {"compare two stored runs metric by metric", runCompare},
	"records":   {"list a stored run's per-request records (--errors: the failures and why); export records.jsonl", runRecords},
	"import":    {"store a vLLM bench serve result or a knee records.jsonl as a run", runImport},
	"ui":        {"the web interface: simulator, request lifecycle, lab, runs and live benches (loopback)", runUI},
	"cluster":   {"print the Kubernetes Indexed Job that runs a bench or sweep as N shards (knee cluster job)", runCluster},
	"version":   {"print knee's version", runVersion},
}

// Main runs knee with args (without the program name) and returns the exit
// code: 0 ok, 1 runtime failure, 2 bad usage or input, 3 an SLO failed.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, IsTerminal: isTerminal(stdout)}
	return MainEnv(ctx, env, args)
}

// MainEnv is Main with an explicit environment.
func MainEnv(ctx context.Context, env *Env, args []string) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-V") {
		return exitCode(env.Stderr, "version", runVersion(ctx, env, args[1:]))
	}
	if len(args) > 1 && args[0] == "help" {
		// knee help bench is knee bench -h (knee help sim sweep: its -h).
		if _, ok := commands[args[1]]; ok {
			return MainEnv(ctx, env, append(append([]string{}, args[1:]...), "-h"))
		}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.Stdout)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		hint := ""
		if strings.HasPrefix(args[0], "-") {
			hint = " (flags come after the command: knee <command> [flags])"
		}
		fmt.Fprintf(env.Stderr, "knee: unknown command %s%s; the commands are listed by knee -h\n", shown(args[0]), hint)
		return ExitUsage
	}
	return exitCode(env.Stderr, args[0], cmd.run(ctx, env, args[1:]))
}

// subcommandError is the error of a subcommand (knee sim sweep), so that
// its message names the command the user typed wherever its word stood
// among the flags.
type subcommandError struct {
	name string
	err  error
}

func (e *subcommandError) Error() string { return e.err.Error() }
func (e *subcommandError) Unwrap() error { return e.err }

// inSubcommand wraps a subcommand's error with its name (nil stays nil).
func inSubcommand(name string, err error) error {
	if err == nil {
		return nil
	}
	return &subcommandError{name: name, err: err}
}

func exitCode(stderr io.Writer, name string, err error) int {
	if err == nil {
		return ExitOK
	}
	if sub := (*subcommandError)(nil); errors.As(err, &sub) {
		name = sub.name
	}
	var ue *UsageError
	var se *SLOError
	var re *RegressionError
	switch {
	case errors.Is(err, errHelp):
		return ExitOK
	case errors.As(err, &re):
		fmt.Fprintf(stderr, "knee %s: %s\n", name, redactSecrets(re.Error()))
		return ExitSLO
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "knee %s: %s\n", name, redactSecrets(se.Error()))
		return ExitSLO
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "knee %s: %s\n", name, redactSecrets(ue.Error()))
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "knee %s: %s\n", name, redactSecrets(err.Error()))
		return ExitFailure
	}
}

func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "version")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %s (knee version takes none)", shown(fs.Arg(0)))
	}
	fmt.Fprintf(env.Stdout, "knee %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
