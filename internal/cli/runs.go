package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/store"
	"github.com/spf13/cobra"
)

// newRunsCmd is knee runs: it lists stored runs, newest first.
func newRunsCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "runs")
	fs := cmd.Flags()
	db := dbFlag(fs)
	var f store.Filter
	fs.StringVar(&f.Target, "target", "", "only runs whose target contains this text")
	fs.StringVar(&f.Model, "model", "", "only runs whose model contains this text")
	fs.StringVar(&f.Label, "label", "", "only runs whose label contains this text")
	fs.StringVar(&f.Kind, "kind", "", "only runs of this kind: bench, sweep, sim, lab, import")
	since := fs.String("since", "", "only runs started since: a duration back from now (24h, 7d) or a date (2026-11-01)")
	fs.IntVar(&f.Limit, "limit", 50, "at most this many runs (0: all)")
	asJSON := fs.Bool("json", false, "print the runs as JSON")
	cmd.Long = "Usage: knee runs [--target T] [--model M] [--label L] [--kind K] [--since 7d|2026-11-01] [--json]"
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if len(pos) > 0 {
			return Usagef("unexpected argument %q (runs takes only flags; see knee runs -h)", pos[0])
		}
		if err := runs.CheckKind(f.Kind); err != nil {
			return err
		}
		if *since != "" {
			t, err := runs.ParseSince(*since, time.Now())
			if err != nil {
				return Usagef("--since %q: %v", *since, err)
			}
			f.Since = t
		}
		if f.Limit < 0 {
			return Usagef("--limit %d: want 0 or more", f.Limit)
		}
		st, err := openDBRead(env, *db)
		if err != nil {
			if *db == "" && env.Getenv("KNEE_DB") == "" && errors.Is(err, store.ErrNoDatabase) {
				// A fresh install: nothing stored yet is not an error.
				fmt.Fprintf(env.Stdout, "no runs stored yet (%s does not exist; knee bench, sweep, sim, lab and import store runs there)\n", store.Redact(store.DefaultPath(env.Getenv)))
				return nil
			}
			return err
		}
		defer st.Close()
		list, err := st.ListRuns(f)
		switch {
		case err != nil:
			return dbErr(err)
		case *asJSON:
			return runs.JSON(env.Stdout, list)
		case len(list) == 0:
			fmt.Fprintf(env.Stdout, "no runs in %s match\n", store.Redact(st.Path()))
			return nil
		}
		return runs.Table(env.Stdout, st, list)
	}
	return cmd
}
