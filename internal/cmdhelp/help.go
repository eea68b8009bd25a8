// Package cmdhelp is how knee's cobra commands present themselves: help a
// person can scan (on stdout, wrapped to the terminal, flags in groups, the
// finer flags on topic pages), one-line flag errors with a did-you-mean,
// the command catalogue knee -h lists, and shell-completion values. The
// cli package declares flags and wires; Install puts all of this on cobra's
// templates and hooks.
package cmdhelp

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Help goes to stdout, wrapped to the terminal (80 columns when stdout is
// not one): knee -h lists the commands by what they are for; knee <command>
// -h prints a header and the flags in groups. The groups are flag
// annotations set from FlagGroups, so every command shares them.

// flagGroupAnnotation is the pflag annotation naming a flag's help group.
const flagGroupAnnotation = "knee_help_group"

// widthAnnotation carries the help width on the root command, where the
// template functions (global in cobra) find it.
const widthAnnotation = "knee_help_width"

// flagGroup is a help section: its title and the names of its flags.
type flagGroup struct {
	title string
	names []string
}

// FlagGroups places each flag in a help section by name; a flag in none is
// listed under "Other flags" (which no command has: internal/cli TestHelpHasNoOtherFlags).
var FlagGroups = []flagGroup{
	{"Target", []string{"url", "model", "api", "api-key-env", "served-model", "served-model-name", "tokenizer-endpoint", "request-timeout", "grace", "ignore-eos", "connect-retries", "retries", "temperature", "continuous-usage"}},
	{"Endpoints", []string{"batch-size", "documents", "rerank-path", "images", "image-size", "image-format", "image-tokens"}},
	{"Load", []string{"concurrency", "rate", "arrival", "burstiness", "max-concurrency", "requests", "duration", "warmup", "ramp",
		"auto", "min", "max", "factor", "refine", "trace", "sessions", "turns", "think-time",
		"trace-format", "trace-start", "trace-end", "trace-speedup", "trace-rate", "trace-max-context", "trace-sample"}},
	{"Workload", []string{"input-tokens", "output-tokens", "dataset", "tokenizer", "shared-prefix", "prefix-groups", "prefix-tokens", "seed", "scenario-file", "save-scenario"}},
	{"Traffic classes", []string{"probe-rate", "probe-input-tokens", "probe-output-tokens", "mix", "lora-modules", "max-loras", "max-lora-rank", "lora-load-ms", "stop-oversaturated"}},
	{"Objectives", []string{"slo", "knee-metric", "objective"}},
	{"Server metrics (Prometheus)", []string{"metrics-url", "metrics-interval", "no-metrics", "gpu-metrics-url"}},
	{"Engine (simulated server)", []string{"gpu", "tp", "model-config", "kv-cache-dtype", "gpu-file", "model-file", "preset-file", "profile", "server-profile", "max-num-seqs", "max-num-batched-tokens",
		"gpu-memory-utilization", "max-model-len", "queue-limit", "no-chunked-prefill", "no-prefix-caching", "step-time-scale", "default-max-tokens",
		"replicas", "router", "gateway-queue-limit", "prefill-replicas", "decode-replicas", "fleet-file",
		"fault-error-rate", "fault-cut-rate", "fault-malformed-rate", "fault-stall", "fault-stall-rate", "fault-slow-after", "fault-slow-factor"}},
	{"Shards (docs/cluster.md)", []string{"shards", "shard", "run-name", "shard-timeout"}},
	{"Output", []string{"out", "json", "detail", "format", "quiet", "label", "db", "no-store", "list", "runtime-trace"}},
	{"CI and dashboards", []string{"junit", "metrics-addr", "metrics-linger", "otlp-endpoint", "otlp-protocol", "otlp-traces"}},
}

// CommandFlagGroups places a command's own flags, by its path, ahead of
// FlagGroups: their names mean different things in different commands
// (--target filters knee runs but names what knee import measured; --step
// picks a step in diagnose and filters records). A flag whose name
// FlagGroups holds but which means something else in a command belongs
// here, or it lands in the shared group (--model filters knee runs; it is
// not a Target there). A section titled as a shared one joins it. Their
// sections come after the shared ones, before Output.
var CommandFlagGroups = map[string][]flagGroup{
	"knee calibrate": {
		{"Input", []string{"from", "db"}},
		{"Measurements", []string{"prefill-lengths", "prefill-requests", "decode-points", "decode-duration", "decode-output-tokens"}},
		{"Held-out check", []string{"holdout", "holdout-concurrency", "holdout-duration", "holdout-input-tokens", "holdout-output-tokens"}},
		{"Step model", []string{"step-model", "parallel"}},
	},
	"knee selftest": {{"Self-test", []string{"slow-steps", "profile-dir"}}},
	"knee sweep":    {{"Input", []string{"from"}}, {"Guided sweep", []string{"guided", "bisect", "resolution", "budget", "save-profile"}}},
	"knee lab":      {{"Scenario", []string{"scenario"}}},
	"knee plan": {
		{"Search", []string{"gpus", "routers", "max-replicas", "cost-file", "confidence", "validate-requests", "workers"}},
	},
	"knee serve": {{"Listen", []string{"addr"}}, {"Engine (simulated server)", []string{"seed"}}},
	"knee diagnose": {
		{"Input", []string{"step"}},
		{"Baseline and window", []string{"baseline", "split", "window", "baseline-window"}},
		{"Without a baseline", []string{"gpu", "model", "tp", "slo"}},
		{"Server metrics (Prometheus)", []string{"server-metrics", "baseline-server-metrics"}},
	},
	// Commands that only read stored runs take --db as their input, not
	// as where a run is written.
	"knee compare": {{"Input", []string{"db"}}, {"Judgement", []string{"fail-on", "min-change", "min-diff", "resamples", "seed"}}},
	"knee import":  {{"Input", []string{"target", "model", "label"}}},
	"knee records": {{"Input", []string{"db"}}, {"Selection", []string{"errors", "step", "limit"}}},
	"knee report":  {{"Input", []string{"db"}}},
	"knee runs":    {{"Input", []string{"db"}}, {"Selection", []string{"kind", "target", "model", "label", "since", "limit"}}},
	"knee cluster job": {
		{"Kubernetes Job", []string{"image", "namespace", "pods", "cpu", "memory", "secret", "expect-tps"}},
	},
	"knee ui": {{"Listen", []string{"addr", "open"}}, {"Output", []string{"export"}}},
}

// trailingGroups are the shared sections listed after a command's own.
var trailingGroups = []string{"Output", "CI and dashboards"}

// annotateFlagGroups tags each of c's flags with its help group.
func annotateFlagGroups(c *cobra.Command) {
	fs := c.Flags()
	own := CommandFlagGroups[c.CommandPath()]
	fs.VisitAll(func(fl *pflag.Flag) {
		for _, g := range slices.Concat(own, FlagGroups) {
			if slices.Contains(g.names, fl.Name) {
				_ = fs.SetAnnotation(fl.Name, flagGroupAnnotation, []string{g.title})
				return
			}
		}
	})
}

var templateFuncs sync.Once

// helpTemplate is every command's help: a header, its subcommands, its
// flags in groups, the topics that describe the rest.
const helpTemplate = `{{kneeHeader .}}{{kneeCommands .}}{{kneeFlags .}}{{kneeTopics .}}`

// usageTemplate is shown after a usage error only when asked (errors are
// one line; -h shows the rest).
const usageTemplate = `Usage: {{.UseLine}}   (see {{.CommandPath}} -h)
`

// Install gives root and every command below it knee's help, wrapped to
// width columns (80 when width <= 0): flags annotated with their groups,
// topic flags hidden from -h and described by knee help TOPIC pages (added
// to root), the command groups of knee -h, and one-line flag errors.
// Commands added after Install get the templates but not the groups.
func Install(root *cobra.Command, width int) {
	templateFuncs.Do(func() {
		cobra.AddTemplateFuncs(template.FuncMap{
			"kneeHeader":   helpHeader,
			"kneeCommands": commandList,
			"kneeFlags":    flagSections,
			"kneeTopics":   topicFooter,
		})
	})
	if width <= 0 {
		width = 80
	}
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[widthAnnotation] = strconv.Itoa(width)
	root.SetHelpTemplate(helpTemplate)
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(FlagError)
	root.SetHelpCommandGroupID("")
	groupCommands(root)
	Walk(root, func(c *cobra.Command) {
		annotateFlagGroups(c)
		hideTopicFlags(c.Flags())
	})
	root.AddCommand(topicCommands(root)...)
}

func helpWidth(c *cobra.Command) int {
	if w, err := strconv.Atoi(c.Root().Annotations[widthAnnotation]); err == nil && w > 20 {
		return w
	}
	return 80
}

// helpHeader is the first part of the help: what the command is for and
// how it is called.
func helpHeader(c *cobra.Command) string {
	width := helpWidth(c)
	var b strings.Builder
	switch {
	case !c.HasParent():
		b.WriteString(c.Short + "\n\nUsage: knee <command> [flags] [arguments]   (knee <command> -h for its flags; flags may come anywhere)\n")
	case c.Long != "":
		b.WriteString(c.Long + "\n")
	default:
		b.WriteString("Usage: " + c.CommandPath() + " [flags]\n")
		if s := c.Short; s != "" {
			b.WriteString("\n" + strings.ToUpper(s[:1]) + s[1:] + ".\n")
		}
	}
	return wrapText(b.String(), width)
}

// commandList lists c's subcommands by group, then the help topics.
func commandList(c *cobra.Command) string {
	if !c.HasAvailableSubCommands() {
		return ""
	}
	width := helpWidth(c)
	var b strings.Builder
	line := func(sub *cobra.Command) {
		b.WriteString(wrapHanging(fmt.Sprintf("  %-11s %s", sub.Name(), sub.Short), width, 14) + "\n")
	}
	listed := map[string]bool{}
	for _, g := range c.Groups() {
		fmt.Fprintf(&b, "\n%s\n", g.Title)
		for _, sub := range c.Commands() {
			if sub.GroupID == g.ID && sub.IsAvailableCommand() {
				line(sub)
				listed[sub.Name()] = true
			}
		}
	}
	title := "\nOther:\n"
	if len(c.Groups()) == 0 {
		title = "\nCommands:\n"
	}
	b.WriteString(title)
	for _, sub := range c.Commands() {
		if !listed[sub.Name()] && sub.IsAvailableCommand() {
			line(sub)
		}
	}
	var topics []*cobra.Command
	for _, sub := range c.Commands() {
		if sub.IsAdditionalHelpTopicCommand() {
			topics = append(topics, sub)
		}
	}
	if len(topics) > 0 {
		b.WriteString("\nHelp topics (knee help TOPIC):\n")
		for _, t := range topics {
			line(t)
		}
	}
	if !c.HasParent() {
		b.WriteString("\n" + wrapText("Exit codes: 0 ok, 1 runtime failure (also: a measurement that is mostly errors or empty), 2 bad usage or input, 3 an SLO failed.", width) + "\n")
	}
	return b.String()
}

// flagSections prints c's visible flags in their groups (Target, Load,
// Workload, Objectives, Engine, Output, then the rest), wrapped.
func flagSections(c *cobra.Command) string {
	width := helpWidth(c)
	groups := map[string]*pflag.FlagSet{}
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden || fl.Name == "help" {
			return
		}
		title := "Other flags"
		if g := fl.Annotations[flagGroupAnnotation]; len(g) > 0 {
			title = g[0]
		}
		if groups[title] == nil {
			groups[title] = pflag.NewFlagSet(title, pflag.ContinueOnError)
		}
		groups[title].AddFlag(fl)
	})
	if len(groups) == 0 {
		return ""
	}
	var titles []string
	add := func(t string) {
		if !slices.Contains(titles, t) {
			titles = append(titles, t)
		}
	}
	for _, g := range FlagGroups {
		if !slices.Contains(trailingGroups, g.title) {
			add(g.title)
		}
	}
	for _, g := range CommandFlagGroups[c.CommandPath()] {
		if !slices.Contains(trailingGroups, g.title) {
			add(g.title)
		}
	}
	for _, t := range trailingGroups {
		add(t)
	}
	add("Other flags")
	var b strings.Builder
	for _, t := range titles {
		fs := groups[t]
		if fs == nil {
			continue
		}
		if t == "Other flags" && len(groups) == 1 {
			t = "Flags"
		}
		fmt.Fprintf(&b, "\n%s:\n%s", t, fitFlagUsages(fs.FlagUsagesWrapped(width), width))
	}
	return b.String()
}

// fitFlagUsages wraps the lines pflag leaves longer than width (it does
// not wrap when the names take most of a narrow terminal), continuing under
// the flag name.
func fitFlagUsages(usages string, width int) string {
	lines := strings.Split(usages, "\n")
	for i, l := range lines {
		if len(l) > width {
			lines[i] = wrapHanging(l, width, 10)
		}
	}
	return strings.Join(lines, "\n")
}

// wrapText fits s to width: the lines of a paragraph (unindented lines
// between blank ones) are joined and refilled; a Usage line continues
// under its first word; an indented line wraps under its own indentation.
func wrapText(s string, width int) string {
	var out, para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, wrapHanging(strings.Join(para, " "), width, 0))
			para = nil
		}
	}
	for _, l := range strings.Split(s, "\n") {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		switch {
		case strings.HasPrefix(l, "Usage: "):
			flush()
			out = append(out, wrapHanging(l, width, len("Usage: ")))
		case l == "" || indent > 0:
			flush()
			out = append(out, wrapHanging(l, width, indent))
		default:
			para = append(para, l)
		}
	}
	flush()
	return strings.Join(out, "\n")
}

// wrapHanging wraps one line at spaces to width, indenting continuation
// lines by indent.
func wrapHanging(line string, width, indent int) string {
	if len(line) <= width {
		return line
	}
	var b strings.Builder
	pad := strings.Repeat(" ", indent)
	col := 0
	for i, word := range strings.Split(line, " ") {
		switch {
		case i == 0:
		case col+1+len(word) > width && col > indent:
			b.WriteString("\n" + pad)
			col = indent
			if word == "" {
				continue
			}
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}

// TerminalWidth is w's width when it is a terminal, else 0 (help then
// wraps at 80).
func TerminalWidth(w io.Writer) int {
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

// IsTerminal reports whether w is an interactive terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
