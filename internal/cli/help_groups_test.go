package cli

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/cmdhelp/cmdhelptest"
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
		if o := cmdhelptest.Section(out, "Other flags"); o != "" || strings.Contains(out, "\nOther flags:") {
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

// A flag named as a shared group's flag but meaning something else in a
// command is listed in that command's own section, not the shared one:
// filters of knee runs, the resampling seed of compare, the fault seed of
// serve, diagnose's reference without a baseline, what import says was
// measured, the database calibrate --from run:ID reads.
func TestHelpSameNameFlagsInTheirCommandsGroups(t *testing.T) {
	for _, c := range []struct {
		cmd          []string
		title, flags string
	}{
		{[]string{"runs"}, "Selection", "--model --label"},
		{[]string{"compare"}, "Judgement", "--seed"},
		{[]string{"serve"}, "Engine (simulated server)", "--seed"},
		{[]string{"diagnose"}, "Without a baseline", "--gpu --model --tp --slo"},
		{[]string{"import"}, "Input", "--model --label"},
		{[]string{"calibrate"}, "Input", "--db"},
		{[]string{"runs"}, "Input", "--db"},
		{[]string{"records"}, "Input", "--db"},
		{[]string{"report"}, "Input", "--db"},
		{[]string{"compare"}, "Input", "--db"},
		{[]string{"sim"}, "Output", "--db"},
		{[]string{"bench"}, "Target", "--model"},
		{[]string{"bench"}, "Workload", "--seed"},
	} {
		code, out, errs := kneeCmd(t, append(c.cmd, "-h")...)
		if code != ExitOK {
			t.Fatalf("knee %v -h: exit %d: %s", c.cmd, code, errs)
		}
		sec := cmdhelptest.Section(out, c.title)
		for _, f := range strings.Fields(c.flags) {
			if !strings.Contains(sec, "      "+f+" ") {
				t.Errorf("knee %v -h: %s is not under %s:\n%s", c.cmd, f, c.title, out)
			}
		}
	}
}
