package cli

import (
	"strconv"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
)

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
	"trace-format": workload.TraceFormats,
}

// formatChoices are each command's --format values.
var formatChoices = map[string][]string{
	"report":   {"text", "md", "csv", "json", "html"},
	"records":  {"jsonl", "csv"},
	"diagnose": {"text", "json"},
}

// runArgCommands take stored run ids (or last, last~1) as arguments.
var runArgCommands = map[string]bool{"report": true, "records": true, "compare": true}

func addCompletions(root *cobra.Command, env *Env) {
	cat := simengine.NewCatalog()
	walk(root, func(c *cobra.Command) {
		fs := c.Flags()
		for name, values := range flagChoices {
			if fs.Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		if values, ok := formatChoices[c.Name()]; ok {
			_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
		presets := map[string]func() []string{
			"gpu": func() (names []string) {
				for _, g := range cat.GPUs() {
					names = append(names, g.Name)
				}
				return names
			},
			"model": func() (names []string) {
				for _, m := range cat.Models() {
					names = append(names, m.Name)
				}
				return names
			},
		}
		for flagName, names := range presets {
			if fs.Lookup(flagName) != nil {
				_ = c.RegisterFlagCompletionFunc(flagName, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return names(), cobra.ShellCompDirectiveNoFileComp
				})
			}
		}
		if runArgCommands[c.Name()] && c.Parent() == root {
			c.ValidArgsFunction = func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
				return storedRunIDs(env, c), cobra.ShellCompDirectiveNoFileComp
			}
		}
	})
}

// storedRunIDs are the ids of the runs in the database --db (or the
// default) names, newest first, each with its kind and label as the
// shell's description; none when the database cannot be read.
func storedRunIDs(env *Env, c *cobra.Command) []string {
	path := ""
	if fl := c.Flags().Lookup("db"); fl != nil {
		path = fl.Value.String()
	}
	st, err := openDBRead(env, path)
	if err != nil {
		return nil
	}
	defer st.Close()
	runs, err := st.ListRuns(store.Filter{})
	if err != nil {
		return nil
	}
	ids := []string{"last\tthe newest run"}
	for _, r := range runs {
		desc := r.Kind
		if r.Label != "" {
			desc += " " + r.Label
		}
		ids = append(ids, strconv.FormatInt(r.ID, 10)+"\t"+desc)
	}
	return ids
}
