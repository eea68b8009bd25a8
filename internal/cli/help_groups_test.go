package cli

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command's -h lists its flags in named groups (Target, Load, ...,
// a command's own such as Selection or Baseline and window), none under
// "Other flags", and still lists every visible flag with its help's first
// words.
func TestHelpHasNoOtherFlags(t *testing.T) {
	root := newRootCmd(context.Background(), &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }})
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasParent() && !c.Hidden {
			cmds = append(cmds, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if len(cmds) < 15 {
		t.Fatalf("found %d commands, want knee's (bench, sweep, diagnose, ...)", len(cmds))
	}
	for _, c := range cmds {
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "knee ")), "-h")
		code, out, errs := kneeCmd(t, args...)
		if code != ExitOK {
			t.Errorf("knee %v: exit %d: %s", args, code, errs)
			continue
		}
		if o := helpSection(out, "Other flags"); o != "" || strings.Contains(out, "\nOther flags:") {
			t.Errorf("knee %v lists flags in no group:\n%s", args, o)
		}
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if fl.Hidden || fl.Name == "help" {
				return
			}
			words := strings.Fields(fl.Usage)
			first := strings.Join(words[:min(3, len(words))], " ")
			i := strings.Index(out, "--"+fl.Name+" ")
			if i < 0 {
				t.Errorf("knee %v does not list --%s", args, fl.Name)
				return
			}
			if rest := strings.Join(strings.Fields(out[i:]), " "); !strings.Contains(rest, first) {
				t.Errorf("knee %v lists --%s without its help %q", args, fl.Name, first)
			}
		})
	}
}
