package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Help a person can scan: knee -h lists the commands by what they are for,
// one line each; knee <command> -h prints a header and the flags in groups.

// commandGroups orders knee -h; a command in no group is listed under
// "Other", so a new command is never hidden.
var commandGroups = []struct {
	title string
	names []string
}{
	{"Measure", []string{"bench", "sweep", "selftest", "calibrate"}},
	{"Simulate", []string{"sim", "serve", "lab"}},
	{"Analyse", []string{"diagnose"}},
	{"Stored runs", []string{"runs", "report", "records", "compare", "import"}},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "knee — load-test, simulate and diagnose LLM serving")
	fmt.Fprintln(w, "\nUsage: knee <command> [flags] [arguments]   (knee <command> -h for its flags; flags may come anywhere)")
	listed := map[string]bool{}
	for _, g := range commandGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, n := range g.names {
			if c, ok := commands[n]; ok {
				fmt.Fprintf(w, "  %-10s %s\n", n, c.summary)
				listed[n] = true
			}
		}
	}
	var other []string
	for n := range commands {
		if !listed[n] {
			other = append(other, n)
		}
	}
	sort.Strings(other)
	fmt.Fprintln(w, "\nOther:")
	for _, n := range other {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nExit codes: 0 ok, 1 runtime failure (also: a measurement that is mostly errors or empty),")
	fmt.Fprintln(w, "2 bad usage or input, 3 an SLO failed.")
}

// commandSummary is the one-line description of "knee NAME" (set in init:
// the command table refers to the commands, which build flag sets).
var commandSummary func(fsName string) string

func init() {
	commandSummary = func(fsName string) string {
		return commands[strings.TrimPrefix(fsName, "knee ")].summary
	}
}

// defaultUsage is -h for a command that sets no Usage of its own.
func defaultUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, "Usage: %s [flags]\n", fs.Name())
	if s := commandSummary(fs.Name()); s != "" {
		fmt.Fprintf(w, "\n%s%s.\n", strings.ToUpper(s[:1]), s[1:])
	}
	fmt.Fprintln(w)
	printFlags(fs)
}

// sloUsage is the --slo help: every kind of objective, not only latency.
const sloUsage = "objective, repeatable: latency 'p95(ttft)<2s' (mean|p50|p90|p95|p99|p999|max of ttft|ttft_sched|itl|tpot|e2e|lag), " +
	"errors 'error_rate<1%' 'rejection_rate<1%', throughput 'goodput>5rps' 'request_throughput>5rps' 'output_throughput>500tok/s'"

// flagGroups places each flag in a help section by name; a flag in none is
// listed under "Other flags".
var flagGroups = []struct {
	title string
	names []string
}{
	{"Target", []string{"url", "model", "api", "api-key-env", "served-model", "served-model-name", "tokenizer-endpoint", "request-timeout", "grace", "ignore-eos", "connect-retries", "retries"}},
	{"Load", []string{"concurrency", "rate", "arrival", "burstiness", "max-concurrency", "requests", "duration", "warmup", "ramp",
		"auto", "min", "max", "factor", "refine", "trace", "sessions"}},
	{"Workload", []string{"input-tokens", "output-tokens", "dataset", "tokenizer", "shared-prefix", "seed", "scenario-file", "save-scenario"}},
	{"Objectives", []string{"slo", "knee-metric"}},
	{"Engine (simulated server)", []string{"gpu", "tp", "gpu-file", "model-file", "preset-file", "profile", "max-num-seqs", "max-num-batched-tokens",
		"gpu-memory-utilization", "max-model-len", "queue-limit", "no-chunked-prefill", "step-time-scale", "default-max-tokens",
		"fault-error-rate", "fault-cut-rate", "fault-malformed-rate", "fault-stall", "fault-stall-rate", "fault-slow-after", "fault-slow-factor"}},
	{"Output", []string{"out", "json", "format", "quiet", "label", "db", "no-store", "list"}},
}

// printFlags prints fs's flags grouped (Target, Load, Workload, Objectives,
// Engine, Output), each as "--name type" and its usage.
func printFlags(fs *flag.FlagSet) {
	w := fs.Output()
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(fl *flag.Flag) {
		g := "Other flags"
		for _, fg := range flagGroups {
			if slices.Contains(fg.names, fl.Name) {
				g = fg.title
				break
			}
		}
		byGroup[g] = append(byGroup[g], fl)
	})
	titles := make([]string, 0, len(flagGroups)+1)
	for _, fg := range flagGroups {
		titles = append(titles, fg.title)
	}
	titles = append(titles, "Other flags")
	first := true
	for _, t := range titles {
		flags := byGroup[t]
		if len(flags) == 0 {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		if len(byGroup) > 1 || t != "Other flags" {
			fmt.Fprintf(w, "%s:\n", t)
		} else {
			fmt.Fprintln(w, "Flags:")
		}
		for _, fl := range flags {
			printFlag(w, fl)
		}
	}
}

func printFlag(w io.Writer, fl *flag.Flag) {
	typ, use := flag.UnquoteUsage(fl)
	head := "  --" + fl.Name
	if typ != "" {
		head += " " + typ
	}
	if def := fl.DefValue; def != "" && def != "0" && def != "false" && def != "0s" && def != "[]" {
		use += fmt.Sprintf(" (default %s)", def)
	}
	if len(head) <= 24 {
		fmt.Fprintf(w, "%-26s%s\n", head, use)
		return
	}
	fmt.Fprintf(w, "%s\n%26s%s\n", head, "", use)
}
