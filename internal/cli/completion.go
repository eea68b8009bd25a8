package cli

import (
	"strconv"

	"github.com/knee-dev/knee/internal/cmdhelp"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
)

// addCompletions completes --gpu and --model with the presets, trace
// formats, and stored run ids (cmdhelp registers them).
func addCompletions(root *cobra.Command, env *Env) {
	cat := simengine.NewCatalog()
	cmdhelp.Complete(root, cmdhelp.Completions{
		Choices: map[string][]string{"trace-format": workload.TraceFormats},
		Presets: map[string]func() []string{
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
		},
		RunIDs: func(c *cobra.Command) []string { return storedRunIDs(env, c) },
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
