package cmdhelp

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/cmdhelp/cmdhelptest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// tree is a small knee-like command tree: bench with grouped flags, and
// sim with a constant that help constants describes.
func tree(width int) (*cobra.Command, *bytes.Buffer) {
	root := &cobra.Command{Use: "knee", Short: "knee — test", SilenceErrors: true, SilenceUsage: true}
	bench := &cobra.Command{Use: "bench", Short: Summaries["bench"], RunE: func(*cobra.Command, []string) error { return nil }}
	bench.Flags().Init("knee bench", pflag.ContinueOnError)
	bench.Flags().Float64("rate", 0, "requests per second of an open loop, as a number of requests each second that the load generator sends to the endpoint")
	bench.Flags().Int("requests", 0, "requests to send")
	bench.Flags().Duration("grace", time.Second, "wait")
	bench.Flags().String("url", "", "endpoint")
	bench.Flags().Bool("quiet", false, "no progress")
	bench.Flags().String("colour", "", "an ungrouped flag")
	sim := &cobra.Command{Use: "sim", Short: Summaries["sim"], RunE: func(*cobra.Command, []string) error { return nil }}
	sim.Flags().Duration("front-end-serial", 0, "serial front-end time per request")
	sim.Flags().Float64("rate", 0, "rate")
	root.AddCommand(bench, sim)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	Install(root, width)
	return root, &out
}

func run(root *cobra.Command, args ...string) error {
	root.SetArgs(LongFlagsWithOneDash(root, args))
	_, err := root.ExecuteC()
	return err
}

func TestHelpGroupsWrapsAndTopics(t *testing.T) {
	root, out := tree(60)
	if err := run(root, "bench", "-h"); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	for _, want := range []string{"Usage: knee bench [flags]\n", "\nLoad-test", "\nTarget:\n", "\nLoad:\n", "\nOutput:\n", "\nOther flags:\n      --colour"} {
		if !strings.Contains(help, want) {
			t.Errorf("bench -h lacks %q:\n%s", want, help)
		}
	}
	if strings.Index(help, "Target:") > strings.Index(help, "Load:") {
		t.Errorf("groups out of order:\n%s", help)
	}
	for _, l := range strings.Split(help, "\n") {
		if len(l) > 60 {
			t.Errorf("line of %d columns at width 60: %q", len(l), l)
		}
	}
	out.Reset()
	if err := run(root, "sim", "-h"); err != nil {
		t.Fatal(err)
	}
	if h := out.String(); strings.Contains(h, "      --front-end-serial") || !strings.Contains(h, "constants  --front-end-serial") {
		t.Errorf("sim -h: a topic flag is described, or not named in the footer:\n%s", h)
	}
	out.Reset()
	if err := run(root, "help", "constants"); err != nil {
		t.Fatal(err)
	}
	if h := out.String(); !strings.Contains(h, "--front-end-serial duration   [sim]\n    serial front-end time per request") {
		t.Errorf("help constants:\n%s", h)
	}
	out.Reset()
	if err := run(root, "-h"); err != nil {
		t.Fatal(err)
	}
	if h := out.String(); !strings.Contains(h, "Measure:\n  bench") || !strings.Contains(h, "Simulate:\n  sim") || !strings.Contains(h, "Help topics (knee help TOPIC):\n  constants") {
		t.Errorf("knee -h:\n%s", h)
	}
}

func TestFlagErrorsAreOneLineBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--rat", "5"}, "unknown flag --rat; did you mean --rate? (see knee bench -h)"},
		{[]string{"bench", "--db", "x"}, "unknown flag --db (see knee bench -h)"},
		{[]string{"bench", "--sk-abcdefghijklmnop"}, "unknown flag --(a value that looks like a credential, not shown) (see knee bench -h)"},
		{[]string{"bench", "--rate", "abc"}, `--rate "abc": want a number such as 8 or 2.5`},
		{[]string{"bench", "--requests", "1e9999"}, `--requests "1e9999": want a whole number such as 16`},
		{[]string{"bench", "--requests", "99999999999999999999"}, `--requests "99999999999999999999": out of range (want a whole number such as 16)`},
		{[]string{"bench", "--grace"}, "--grace needs a value: a duration such as 500ms, 30s or 2m"},
		{[]string{"bench", "--quiet=maybe"}, `--quiet "maybe": want true or false (or just --quiet)`},
		{[]string{"bench", "-rate", "x"}, `--rate "x": want a number such as 8 or 2.5`},
	} {
		root, _ := tree(80)
		err := run(root, c.args...)
		if err == nil || err.Error() != c.want || !badinput.Is(err) {
			t.Errorf("%v: %v (bad input %v), want %q", c.args, err, badinput.Is(err), c.want)
		}
	}
	root, _ := tree(80)
	if err := UnknownCommand(root, []string{"--x", "bnech"}); err == nil || err.Error() != `unknown command "bnech"; did you mean bench? (the commands are listed by knee -h)` {
		t.Errorf("UnknownCommand: %v", err)
	}
}

func TestNearestFlag(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	for _, n := range []string{"rate", "tp", "max-num-seqs", "tokenizer", "out"} {
		fs.String(n, "", "")
	}
	for typed, want := range map[string]string{"rat": "rate", "db": "", "max-num-seq": "max-num-seqs", "max-num": "max-num-seqs", "tokenize": "tokenizer", "zzzzzz": ""} {
		if got := nearestFlag(fs, typed); got != want {
			t.Errorf("nearestFlag(%q) = %q, want %q", typed, got, want)
		}
	}
}

func TestWrapping(t *testing.T) {
	if got := wrapHanging("aaa bbb ccc ddd", 8, 2); got != "aaa bbb\n  ccc\n  ddd" {
		t.Errorf("wrapHanging: %q", got)
	}
	in := "one two\nthree four\n\n  indented line here\nUsage: knee x [flags] more words"
	// Paragraph lines refill; indented and Usage lines hang under their start.
	want := "one two three\nfour\n\n  indented\n  line here\nUsage: knee x\n       [flags]\n       more\n       words"
	if got := wrapText(in, 14); got != want {
		t.Errorf("wrapText:\n%s\nwant\n%s", got, want)
	}
}

func TestLongFlagsWithOneDash(t *testing.T) {
	root, _ := tree(80)
	got := LongFlagsWithOneDash(root, []string{"bench", "-rate=5", "-x", "-h", "--", "-rate"})
	want := []string{"bench", "--rate=5", "-x", "-h", "--", "-rate"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%v, want %v", got, want)
	}
}

func TestComplete(t *testing.T) {
	root, out := tree(80)
	root.AddCommand(&cobra.Command{Use: "report", Run: func(*cobra.Command, []string) {}})
	Complete(root, Completions{Presets: map[string]func() []string{"url": func() []string { return []string{"http://a"} }},
		RunIDs: func(*cobra.Command) []string { return []string{"7\tsim"} }})
	root.InitDefaultCompletionCmd()
	if err := run(root, "__complete", "bench", "--url", ""); err != nil || !strings.Contains(out.String(), "http://a\n:4\n") {
		t.Errorf("--url completion: %v\n%s", err, out)
	}
	out.Reset()
	if err := run(root, "__complete", "report", ""); err != nil || !strings.Contains(out.String(), "7\tsim\n") {
		t.Errorf("run id completion: %v\n%s", err, out)
	}
}

// --api completes per command: bench offers every API, calibrate (chat or
// completions only) just those two.
func TestCompleteAPIPerCommand(t *testing.T) {
	root, out := tree(80)
	root.Commands()[0].Flags().String("api", "chat", "API") // bench
	calibrate := &cobra.Command{Use: "calibrate", Run: func(*cobra.Command, []string) {}}
	calibrate.Flags().String("api", "chat", "chat or completions")
	root.AddCommand(calibrate)
	Complete(root, Completions{})
	root.InitDefaultCompletionCmd()
	if err := run(root, "__complete", "bench", "--api", ""); err != nil || !strings.Contains(out.String(), "embeddings\nrerank\n") {
		t.Errorf("bench --api completion: %v\n%s", err, out)
	}
	out.Reset()
	if err := run(root, "__complete", "calibrate", "--api", ""); err != nil || !strings.HasPrefix(out.String(), "chat\ncompletions\n:4\n") {
		t.Errorf("calibrate --api completion offers more than chat and completions: %v\n%s", err, out)
	}
}

// Off a terminal (a buffer, a file) help wraps at 80 and nothing is
// redrawn.
func TestNotATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []io.Writer{f, &bytes.Buffer{}} {
		if IsTerminal(w) || TerminalWidth(w) != 0 {
			t.Errorf("%T is taken for a terminal", w)
		}
	}
}

// A flag name two commands share lands in each command's own group: --model
// names the target of knee bench but filters knee runs, --label labels a
// bench's run but filters the runs listed; neither leaks into the other
// command's section, whichever command's help is shown first.
func TestSameFlagNameGroupedPerCommand(t *testing.T) {
	root := &cobra.Command{Use: "knee", SilenceErrors: true, SilenceUsage: true}
	bench := &cobra.Command{Use: "bench", RunE: func(*cobra.Command, []string) error { return nil }}
	bench.Flags().String("model", "", "model name sent to the server")
	bench.Flags().String("label", "", "label stored with the run")
	runs := &cobra.Command{Use: "runs", RunE: func(*cobra.Command, []string) error { return nil }}
	runs.Flags().String("model", "", "only runs whose model contains this text")
	runs.Flags().String("label", "", "only runs whose label contains this text")
	runs.Flags().Int("limit", 0, "at most this many runs")
	root.AddCommand(runs, bench)
	var out bytes.Buffer
	root.SetOut(&out)
	Install(root, 80)
	type at struct{ title, flag string }
	runsWant := []at{{"Selection", "--model"}, {"Selection", "--label"}, {"Selection", "--limit"}}
	for _, c := range []struct {
		cmd    string
		want   []at
		absent []string // section titles
	}{
		{"runs", runsWant, []string{"Target", "Output"}},
		{"bench", []at{{"Target", "--model"}, {"Output", "--label"}}, []string{"Selection"}},
		{"runs", runsWant, []string{"Target", "Output"}},
	} {
		out.Reset()
		if err := run(root, c.cmd, "-h"); err != nil {
			t.Fatal(err)
		}
		help := out.String()
		for _, w := range c.want {
			if !strings.Contains(cmdhelptest.Section(help, w.title), "      "+w.flag+" ") {
				t.Errorf("knee %s -h: %s is not under %s:\n%s", c.cmd, w.flag, w.title, help)
			}
		}
		for _, title := range c.absent {
			if strings.Contains(help, "\n"+title+":\n") {
				t.Errorf("knee %s -h has a %s section:\n%s", c.cmd, title, help)
			}
		}
	}
}
