package cmdhelp

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// topics are flags -h does not describe, each set on its own help page
// (knee help TOPIC): the constants of particular measured hosts, and the
// finer settings of trace replay, fleets, engine limits and workloads. They
// stay accepted; -h names them on one line so none is undiscoverable, and
// knee sim -h stays one screen of the flags most runs need.
var topics = []struct {
	name, short, intro string
	flags              []string
}{
	{"constants", "the engine and host constants sim, sim sweep and serve accept",
		"Constants of particular measured hosts and engines. knee calibrate fits some of them into a --profile; docs/simulator.md gives the values the validation measured.",
		[]string{"front-end-ms", "front-end-serial", "front-end-serial-split", "front-end-load",
			"compute-efficiency", "all-reduce-efficiency", "step-per-seq", "step-time-scale",
			"no-async-scheduling", "server-chunk-cost", "client-chunk-cost", "client-gap", "client-start"}},
	{"engine", "engine limits and preset files: memory, context, batch budget, prefill and caching switches",
		"The engine's limits beyond --gpu, --model, --tp and --max-num-seqs, the KV cache's data type, and files of extra presets.",
		[]string{"gpu-memory-utilization", "max-model-len", "max-num-batched-tokens", "queue-limit",
			"no-chunked-prefill", "no-prefix-caching", "kv-cache-dtype", "gpu-file", "model-file", "preset-file"}},
	{"fleet", "fleets: routing, a gateway queue, disaggregated prefill and decode",
		"Several replicas behind a router (--replicas), or prefill and decode pools joined by a KV link.",
		[]string{"router", "gateway-queue-limit", "prefill-replicas", "decode-replicas", "kv-link-gbps", "kv-link-latency", "fleet-file"}},
	{"trace", "trace replay: the trace's format, window, speed and sampling",
		"How --trace FILE is replayed.",
		[]string{"trace-format", "trace-start", "trace-end", "trace-speedup", "trace-rate", "trace-max-context", "trace-sample"}},
	{"workload", "workload details: shared prefixes, conversations' turns and think time, arrival burstiness, ramp",
		"Finer settings of the requests knee sends beyond the token counts, the load and --sessions.",
		[]string{"prefix-groups", "prefix-tokens", "turns", "think-time", "burstiness", "ramp", "save-scenario"}},
	{"autosweep", "automatic sweeps: the first and last load, the growth per step, the bisection",
		"How --auto (or --concurrency auto, --rate auto) grows the load: from --min, ×--factor a step, up to --max, until an SLO fails or throughput stops growing; then --refine bisection steps between the last good and the first bad load.",
		[]string{"min", "max", "factor", "refine"}},
	{"probes", "probes beside the load: their rate and shape",
		"Short requests sent at a constant rate beside the main load and reported apart (the class probe; a sweep's probe TTFT p95 column): how long an unrelated user waits while the load runs.",
		[]string{"probe-rate", "probe-input-tokens", "probe-output-tokens"}},
	{"energy", "energy and cost: the GPU-hour price behind $ per million output tokens",
		"The simulator's power model (knee sim, sim sweep) and the GPUs' telemetry (--gpu-metrics-url on bench) give energy per output token and average power per GPU; a GPU-hour price adds dollars per million output tokens (docs/energy.md).",
		[]string{"gpu-price"}},
	{"lora", "LoRA adapters in the simulated engine: slots, rank, load time",
		"How the simulated engine serves the LoRA adapters a --mix file's classes name (knee serve: those --lora-modules declares), as vLLM does: a batch holds requests of at most --max-loras distinct adapters, and an adapter not on the GPU is loaded first.",
		[]string{"lora-modules", "max-loras", "max-lora-rank", "lora-load-ms"}},
}

// topicOf is the help topic that describes flag name, or "".
func topicOf(name string) string {
	for _, t := range topics {
		for _, f := range t.flags {
			if f == name {
				return t.name
			}
		}
	}
	return ""
}

// hideTopicFlags hides from -h the flags a help topic describes.
func hideTopicFlags(fs *pflag.FlagSet) {
	fs.VisitAll(func(fl *pflag.Flag) {
		if topicOf(fl.Name) != "" {
			fl.Hidden = true
		}
	})
}

// topicCommands are knee help TOPIC for every flag topic: each flag's
// type, default and help and the commands that take it, read from the
// commands themselves so the page cannot drift from the flags.
func topicCommands(root *cobra.Command) []*cobra.Command {
	var all []*cobra.Command
	Walk(root, func(c *cobra.Command) { all = append(all, c) })
	var pages []*cobra.Command
	for _, t := range topics {
		var b strings.Builder
		fmt.Fprintf(&b, "Usage: knee COMMAND --NAME VALUE   (knee help %s)\n\n%s\n", t.name, t.intro)
		described := 0
		for _, name := range t.flags {
			var fl *pflag.Flag
			var takers []string
			for _, c := range all {
				if f := c.Flags().Lookup(name); f != nil {
					fl = f
					takers = append(takers, strings.TrimPrefix(c.CommandPath(), "knee "))
				}
			}
			if fl == nil {
				continue
			}
			head := "--" + name + " " + fl.Value.Type()
			if fl.Value.Type() == "bool" {
				head = "--" + name
			}
			if d := fl.DefValue; d != "" && d != "0" && d != "0s" && d != "false" {
				head += " (default " + d + ")"
			}
			fmt.Fprintf(&b, "\n%s   [%s]\n    %s\n", head, strings.Join(takers, ", "), fl.Usage)
			described++
		}
		if described == 0 {
			continue // no command takes its flags: a page would be empty
		}
		pages = append(pages, &cobra.Command{Use: t.name, Short: t.short, Long: strings.TrimRight(b.String(), "\n")})
	}
	return pages
}

// topicFooter names c's flags that -h leaves to a topic page, by topic.
func topicFooter(c *cobra.Command) string {
	byTopic := map[string][]string{}
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if t := topicOf(fl.Name); t != "" {
			byTopic[t] = append(byTopic[t], "--"+fl.Name)
		}
	})
	if len(byTopic) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nMore flags, described by knee help TOPIC:\n")
	for _, t := range topics {
		if names := byTopic[t.name]; len(names) > 0 {
			b.WriteString(wrapHanging(fmt.Sprintf("  %-10s %s", t.name, strings.Join(names, " ")), helpWidth(c), 13) + "\n")
		}
	}
	return b.String()
}
