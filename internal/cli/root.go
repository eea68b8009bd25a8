package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/knee-dev/knee/internal/cmdhelp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newCommand is the cobra command for "knee PATH" (PATH: "bench", "sim
// sweep"); its file adds the flags and RunE.
func newCommand(env *Env, path string) *cobra.Command {
	words := strings.Fields(path)
	cmd := &cobra.Command{
		Use:   words[len(words)-1],
		Short: cmdhelp.Summaries[path],
		// Each command checks its own positional arguments with a message
		// naming them; cobra's generic one would not.
		Args: cobra.ArbitraryArgs,
	}
	// Messages name the command as the user typed it ("knee sim sweep").
	cmd.Flags().Init("knee "+path, pflag.ContinueOnError)
	return cmd
}

// helpText captures what print writes: a command's help header.
func helpText(print func(w io.Writer)) string {
	var b bytes.Buffer
	print(&b)
	return strings.TrimRight(b.String(), "\n")
}

// newRootCmd builds knee's command tree. It is built afresh for every run:
// each command's flag values live in its constructor's variables.
func newRootCmd(ctx context.Context, env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "knee",
		Short:         "knee — load-test, simulate and diagnose LLM serving",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	sim := newSimCmd(ctx, env)
	sim.AddCommand(newSimSweepCmd(ctx, env))
	root.AddCommand(
		newBenchCmd(ctx, env), newSweepCmd(ctx, env), newDiagnoseCmd(env), sim, newPlanCmd(ctx, env),
		newServeCmd(ctx, env), newSelftestCmd(ctx, env), newCalibrateCmd(ctx, env), newLabCmd(ctx, env),
		newRunsCmd(env), newReportCmd(env), newCompareCmd(env), newRecordsCmd(env), newImportCmd(env),
		newUICmd(ctx, env), newVersionCmd(env), newClusterCmd(env),
	)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetIn(env.Stdin)
	cmdhelp.Install(root, env.helpWidth)
	cmdhelp.Walk(root, func(c *cobra.Command) {
		if c.Flags().Lookup(scenarioFileFlag) != nil {
			c.PreRunE = func(c *cobra.Command, _ []string) error { return applyScenarioFile(c) }
		}
	})
	sim.AddCommand(cmdhelp.SubHelp(sim))
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	addCompletions(root, env)
	return root
}

// Main runs knee with args (without the program name) and returns the exit
// code: 0 ok, 1 runtime failure, 2 bad usage or input, 3 an SLO failed.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, IsTerminal: cmdhelp.IsTerminal(stdout), helpWidth: cmdhelp.TerminalWidth(stdout)}
	return MainEnv(ctx, env, args)
}

// MainEnv is Main with an explicit environment.
func MainEnv(ctx context.Context, env *Env, args []string) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	env.escapeOutput()
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-V") {
		args = append([]string{"version"}, args[1:]...)
	}
	root := newRootCmd(ctx, env)
	if len(args) == 0 {
		// Bare knee is a usage mistake: the command list, exit 2.
		_ = root.Help()
		return ExitUsage
	}
	root.SetArgs(cmdhelp.LongFlagsWithOneDash(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	name := strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), root.Name()), " ")
	if name == "" {
		if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
			err = cmdhelp.UnknownCommand(root, args)
		}
	}
	return exitCode(env.Stderr, name, err)
}

// exitCode prints err, if any, as "knee NAME: message" ("knee: message"
// before any command) and returns its exit code.
func exitCode(stderr io.Writer, name string, err error) int {
	if err == nil {
		return ExitOK
	}
	prefix := "knee " + name
	if name == "" {
		prefix = "knee"
	}
	// The message is the error that decides the code: a wrapped SLO or
	// usage error speaks for itself.
	code, msg := ExitFailure, err
	var ec exitCoder
	var ue *UsageError
	switch {
	case errors.As(err, &ec):
		code, msg = ec.ExitCode(), ec
	case errors.As(err, &ue):
		code, msg = ExitUsage, ue
	}
	fmt.Fprintf(stderr, "%s: %s\n", prefix, redactSecrets(msg.Error()))
	return code
}

// exitCoder is an error that carries its exit code (SLOError,
// RegressionError); bad input (badinput) exits 2, any other error 1.
type exitCoder interface {
	error
	ExitCode() int
}
