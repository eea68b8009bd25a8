package cmdhelp

import (
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/redact"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Summaries are the one-line descriptions knee -h lists, by command path
// without "knee ".
var Summaries = map[string]string{
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

// groupCommands puts root's commands into commandGroups.
func groupCommands(root *cobra.Command) {
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, n := range g.names {
			if c, _, err := root.Find([]string{n}); err == nil && c != root {
				c.GroupID = g.id
			}
		}
	}
}

// SubHelp is "knee sim help TOPIC": help on a subcommand of parent
// (knee sim help sweep) or on a topic of knee's (knee sim help constants).
func SubHelp(parent *cobra.Command) *cobra.Command {
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
			return badinput.Errorf("no help topic %s (see %s -h)", redact.Quoted(strings.Join(args, " ")), parent.CommandPath())
		},
	}
}

// Walk calls fn on c and every command below it.
func Walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		Walk(sub, fn)
	}
}

// UnknownCommand is the error for knee WORD when WORD is no command, with
// cobra's suggestions.
func UnknownCommand(root *cobra.Command, args []string) error {
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
	return badinput.Errorf("unknown command %s%s (the commands are listed by knee -h)", redact.Quoted(word), hint)
}

// LongFlagsWithOneDash rewrites -name into --name for every long flag name
// a command of root defines (knee's first parser took both, and scripts and
// docs use -rate 5): pflag would read -rate as the shorthands r, a, t, e.
// Words after "--" are arguments and stay as they are.
func LongFlagsWithOneDash(root *cobra.Command, args []string) []string {
	names := map[string]bool{"help": true}
	Walk(root, func(c *cobra.Command) {
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
