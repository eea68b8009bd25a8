package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// commandSummaries are the one-line descriptions knee -h lists, by command
// path without "knee ".
var commandSummaries = map[string]string{
	"bench":       "load-test an OpenAI-compatible streaming endpoint (embedded simulated server by default)",
	"sweep":       "step the load to find the knee and the SLO-safe point",
	"diagnose":    "say which phase (queue, prefill, decode) is the bottleneck",
	"sim":         "simulate a serving engine in virtual time (knee sim sweep for a curve)",
	"sim sweep":   "predict a whole load curve on the simulator: the knee and the SLO-safe point",
	"plan":        "find the cheapest simulated deployment (GPU, TP, replicas, limits, router) that meets the SLOs at a load",
	"serve":       "run the simulated OpenAI-compatible server",
	"selftest":    "measure knee's own measurement error and CPU cost on this machine",
	"calibrate":   "fit the simulator's step costs to a live server; writes a profile for sim and serve",
	"lab":         "teaching scenarios: queue, decode, prefill, sweep",
	"runs":        "list stored runs",
	"report":      "render a stored run as text, md, csv, json or html",
	"compare":     "compare two stored runs metric by metric",
	"records":     "list a stored run's per-request records (--errors: the failures and why); export records.jsonl",
	"import":      "store a vLLM bench serve result or a knee records.jsonl as a run",
	"ui":          "the web interface: simulator, request lifecycle, lab, runs and live benches (loopback)",
	"version":     "print knee's version",
	"cluster":     "run a bench or sweep as N shards on Kubernetes: knee cluster job prints the Indexed Job",
	"cluster job": "print the Kubernetes Indexed Job that runs a bench or sweep as N shards meeting in PostgreSQL",
}

// commandGroups orders knee -h by what the commands are for; a command in
// no group is listed under "Other", so a new command is never hidden.
var commandGroups = []struct {
	id, title string
	names     []string
}{
	{"measure", "Measure:", []string{"bench", "sweep", "selftest", "calibrate"}},
	{"simulate", "Simulate:", []string{"sim", "serve", "lab", "plan"}},
	{"analyse", "Analyse:", []string{"diagnose"}},
	{"stored", "Stored runs:", []string{"runs", "report", "records", "compare", "import"}},
}

// newCommand is the cobra command for "knee PATH" (PATH: "bench", "sim
// sweep"); its file adds the flags and RunE.
func newCommand(env *Env, path string) *cobra.Command {
	words := strings.Fields(path)
	cmd := &cobra.Command{
		Use:   words[len(words)-1],
		Short: commandSummaries[path],
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
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, n := range g.names {
			if c, _, err := root.Find([]string{n}); err == nil && c != root {
				c.GroupID = g.id
			}
		}
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetIn(env.Stdin)
	root.SetFlagErrorFunc(flagError)
	root.SetHelpCommandGroupID("")
	width := env.helpWidth
	if width <= 0 {
		width = 80
	}
	setHelp(root, width)
	walk(root, func(c *cobra.Command) {
		annotateFlagGroups(c.Flags())
		hideTopicFlags(c.Flags())
		if c.Flags().Lookup(scenarioFileFlag) != nil {
			c.PreRunE = func(c *cobra.Command, _ []string) error { return applyScenarioFile(c) }
		}
	})
	root.AddCommand(newTopicCommands(root)...)
	sim.AddCommand(newSubHelpCmd(sim))
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	addCompletions(root, env)
	return root
}

// newSubHelpCmd is "knee sim help TOPIC": help on a subcommand of parent
// (knee sim help sweep) or on a topic of knee's (knee sim help constants).
func newSubHelpCmd(parent *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "help [command|topic]",
		Short:  "help on a subcommand or a topic (knee help constants)",
		Hidden: true,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return parent.Help()
			}
			for _, from := range []*cobra.Command{parent, c.Root()} {
				if found, rest, err := from.Find(args); err == nil && len(rest) == 0 && found != from {
					return found.Help()
				}
			}
			return Usagef("no help topic %s (see %s -h)", shown(strings.Join(args, " ")), parent.CommandPath())
		},
	}
}

// walk calls fn on c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// Main runs knee with args (without the program name) and returns the exit
// code: 0 ok, 1 runtime failure, 2 bad usage or input, 3 an SLO failed.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, IsTerminal: isTerminal(stdout), helpWidth: terminalWidth(stdout)}
	return MainEnv(ctx, env, args)
}

// terminalWidth is w's width when it is a terminal, else 0 (help then wraps
// at 80).
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// MainEnv is Main with an explicit environment.
func MainEnv(ctx context.Context, env *Env, args []string) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-V") {
		args = append([]string{"version"}, args[1:]...)
	}
	root := newRootCmd(ctx, env)
	if len(args) == 0 {
		// Bare knee is a usage mistake: the command list, exit 2.
		_ = root.Help()
		return ExitUsage
	}
	root.SetArgs(longFlagsWithOneDash(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	name := strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), root.Name()), " ")
	if name == "" {
		if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
			err = unknownCommand(root, args)
		}
	}
	return exitCode(env.Stderr, name, err)
}

// unknownCommand is the error for knee WORD when WORD is no command, with
// cobra's suggestions.
func unknownCommand(root *cobra.Command, args []string) error {
	word := args[0]
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			word = a
			break
		}
	}
	hint := ""
	if near := root.SuggestionsFor(word); len(near) > 0 {
		hint = "; did you mean " + strings.Join(near, " or ") + "?"
	}
	return Usagef("unknown command %s%s (the commands are listed by knee -h)", shown(word), hint)
}

// longFlagsWithOneDash rewrites -name into --name for every long flag name
// knee defines (the hand-written parser took both, and scripts and docs use
// -rate 5): pflag would read -rate as the shorthands r, a, t, e. Words after
// "--" are arguments and stay as they are.
func longFlagsWithOneDash(root *cobra.Command, args []string) []string {
	names := map[string]bool{"help": true}
	walk(root, func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) { names[fl.Name] = true })
	})
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if names[name] {
				out[i] = "-" + a
			}
		}
	}
	return out
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
	var ue *UsageError
	var se *SLOError
	var re *RegressionError
	switch {
	case errors.As(err, &re):
		fmt.Fprintf(stderr, "%s: %s\n", prefix, redactSecrets(re.Error()))
		return ExitSLO
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "%s: %s\n", prefix, redactSecrets(se.Error()))
		return ExitSLO
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s\n", prefix, redactSecrets(ue.Error()))
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "%s: %s\n", prefix, redactSecrets(err.Error()))
		return ExitFailure
	}
}
