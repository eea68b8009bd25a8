package cmdhelp

import "github.com/spf13/cobra"

// Shell completion is cobra's (knee completion bash|zsh|fish|powershell);
// the scripts ask knee itself (knee __complete …), so they complete what
// this binary accepts. Here: the values of flags that take one of a few
// words, the presets of --gpu and --model, and stored run ids.

// flagChoices are the values of flags that take one of a few words.
var flagChoices = map[string][]string{
	"api":          {"chat", "completions", "ollama", "embeddings", "rerank", "messages"},
	"rerank-path":  {"/v1/rerank", "/rerank"},
	"image-format": {"png", "jpeg"},
	"arrival":      {"constant", "poisson", "gamma"},
	"ignore-eos":   {"auto", "true", "false"},
	"tokenizer":    {"cl100k_base", "o200k_base"},
	"knee-metric":  {"output_tps", "throughput_rps"},
	"fail-on":      {"worse", "change", "none"},
	"trace-format": nil, // set by Completions.Choices
}

// commandChoices narrow a flag's values for one command: calibrate and
// selftest drive a streamed chat or completions load only, so offering
// embeddings there would complete to a value they refuse.
var commandChoices = map[string]map[string][]string{
	"calibrate": {"api": {"chat", "completions"}},
	"selftest":  {"api": {"chat", "completions"}},
}

// formatChoices are each command's --format values.
var formatChoices = map[string][]string{
	"report":   {"text", "md", "csv", "json", "html"},
	"records":  {"jsonl", "csv"},
	"diagnose": {"text", "json"},
}

// runArgCommands take stored run ids (or last, last~1) as arguments.
var runArgCommands = map[string]bool{"report": true, "records": true, "compare": true}

// Completions are the values knee completes that come from elsewhere.
type Completions struct {
	// Choices adds flags taking one of a few words to the built-in ones
	// (such as --trace-format's formats, from the workload package).
	Choices map[string][]string
	// Presets complete a flag from a catalogue read when asked (--gpu, --model).
	Presets map[string]func() []string
	// RunIDs lists stored runs for report, records and compare, each as
	// "ID\tdescription"; c is the command being completed (its --db).
	RunIDs func(c *cobra.Command) []string
}

// Complete registers completion of flag values and run arguments on root
// and every command below it.
func Complete(root *cobra.Command, v Completions) {
	choices := map[string][]string{}
	for name, values := range flagChoices {
		choices[name] = values
	}
	for name, values := range v.Choices {
		choices[name] = values
	}
	Walk(root, func(c *cobra.Command) {
		fs := c.Flags()
		for name, values := range choices {
			if own, ok := commandChoices[c.Name()][name]; ok {
				values = own
			}
			if fs.Lookup(name) != nil && values != nil {
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		if values, ok := formatChoices[c.Name()]; ok {
			_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
		for flagName, names := range v.Presets {
			if fs.Lookup(flagName) != nil {
				_ = c.RegisterFlagCompletionFunc(flagName, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return names(), cobra.ShellCompDirectiveNoFileComp
				})
			}
		}
		if runArgCommands[c.Name()] && c.Parent() == root && v.RunIDs != nil {
			c.ValidArgsFunction = func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
				return v.RunIDs(c), cobra.ShellCompDirectiveNoFileComp
			}
		}
	})
}
