package cli

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Help goes to stdout (knee bench --help | head shows it), with the flags
// in their groups, and nothing on stderr.
func TestHelpOnStdoutGrouped(t *testing.T) {
	for _, args := range [][]string{{"bench", "--help"}, {"bench", "-h"}, {"help", "bench"}, {"bench", "-help"}} {
		code, out, errs := kneeCmd(t, args...)
		if code != ExitOK || errs != "" {
			t.Fatalf("knee %v: exit %d, stderr %q", args, code, errs)
		}
		for _, want := range []string{"Usage: knee bench", "Target:\n", "Load:\n", "Workload:\n", "Output:\n", "--rate", "--url"} {
			if !strings.Contains(out, want) {
				t.Errorf("knee %v: help lacks %q:\n%s", args, want, out)
			}
		}
	}
	code, out, _ := kneeCmd(t, "sim", "sweep", "-h")
	if code != ExitOK || !strings.Contains(out, "Usage: knee sim sweep") || !strings.Contains(out, "Engine (simulated server):") {
		t.Errorf("knee sim sweep -h: exit %d\n%s", code, out)
	}
}

// Every command and subcommand, those added since included, prints its
// help on stdout (knee CMD --help | head shows it) and nothing on stderr.
func TestEveryCommandHelpOnStdout(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.IsAdditionalHelpTopicCommand() || strings.HasPrefix(sub.Name(), "__") {
				continue
			}
			p := append(append([]string{}, path...), sub.Name())
			paths = append(paths, p)
			walk(sub, p)
		}
	}
	walk(newRootCmd(t.Context(), &Env{Stdout: io.Discard, Stderr: io.Discard}), nil)
	if len(paths) < 15 {
		t.Fatalf("found %d commands; the walk is wrong: %v", len(paths), paths)
	}
	t.Logf("%d commands", len(paths))
	for _, p := range paths {
		want := "Usage: knee " + strings.Join(p, " ")
		if p[0] == "completion" { // cobra's own: its text, no usage line
			want = "autocompletion script"
		}
		code, out, errs := kneeCmd(t, append(p, "--help")...)
		if code != ExitOK || errs != "" || !strings.Contains(out, want) {
			t.Errorf("knee %s --help: exit %d, stderr %q, stdout %q; want %q on stdout",
				strings.Join(p, " "), code, errs, out[:min(len(out), 200)], want)
		}
	}
}

// Help wraps at 80 columns when stdout is not a terminal, and at the
// terminal's width when it is.
func TestHelpWrapsToWidth(t *testing.T) {
	for _, width := range []int{0, 60, 120} {
		out := &strings.Builder{}
		env := &Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: &strings.Builder{}, helpWidth: width}
		for _, args := range [][]string{nil, {"bench", "-h"}, {"sim", "-h"}, {"serve", "-h"}, {"help", "constants"}} {
			out.Reset()
			MainEnv(t.Context(), env, args)
			limit := width
			if limit == 0 {
				limit = 80
			}
			longest := 0
			for _, l := range strings.Split(out.String(), "\n") {
				longest = max(longest, len([]rune(l)))
				if len([]rune(l)) > limit {
					t.Errorf("width %d, knee %v: a line of %d columns: %q", width, args, len([]rune(l)), l)
				}
			}
			if width == 120 && longest <= 80 {
				t.Errorf("width 120, knee %v: no line beyond 80 columns, so the terminal's width was not used", args)
			}
		}
	}
}

// knee sim -h fits on about one screen: host constants and the finer
// settings are on topic pages (knee help constants), still accepted.
func TestSimHelpListsFewFlags(t *testing.T) {
	_, out, _ := kneeCmd(t, "sim", "-h")
	described := strings.Count(out, "\n      --")
	if described > 35 {
		t.Errorf("knee sim -h describes %d flags, want at most 35:\n%s", described, out)
	}
	if described < 20 {
		t.Errorf("knee sim -h describes only %d flags; the count above is wrong:\n%s", described, out)
	}
	if strings.Contains(out, "\nOther flags:") {
		t.Errorf("knee sim -h has flags in no group (Other flags):\n%s", out)
	}
	for _, hidden := range []string{"--front-end-serial", "--compute-efficiency", "--all-reduce-efficiency", "--step-per-seq", "--client-chunk-cost"} {
		if strings.Contains(out, "\n      "+hidden+" ") {
			t.Errorf("knee sim -h describes %s; want it on knee help constants", hidden)
		}
		if !strings.Contains(out, hidden+" ") && !strings.Contains(out, hidden+"\n") {
			t.Errorf("knee sim -h does not name %s at all", hidden)
		}
	}
	code, page, _ := kneeCmd(t, "help", "constants")
	for _, want := range []string{"--front-end-serial duration", "--front-end-serial-split float", "--compute-efficiency", "--all-reduce-efficiency",
		"--step-per-seq", "--server-chunk-cost", "--client-chunk-cost", "serve, sim, sim sweep]"} {
		if code != ExitOK || !strings.Contains(page, want) {
			t.Errorf("knee help constants: exit %d, lacks %q:\n%s", code, want, page)
		}
	}
	// Hidden is not refused: the flag still changes the run.
	code, _, errs := kneeCmd(t, "sim", "--requests", "4", "--front-end-serial", "5ms", "--quiet", "--no-store")
	if code != ExitOK {
		t.Errorf("knee sim --front-end-serial 5ms: exit %d: %s", code, errs)
	}
}

// A mistyped flag gets a suggestion only when one is really close; bad
// usage exits 2 with one line naming the command.
func TestFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
		not  string
	}{
		{[]string{"bench", "--rat", "5"}, "knee bench: unknown flag --rat; did you mean --rate? (see knee bench -h)", ""},
		{[]string{"serve", "--db", "x"}, "knee serve: unknown flag --db (see knee serve -h)", "did you mean"},
		{[]string{"sim", "--max-num-seq", "8"}, "did you mean --max-num-seqs?", ""},
		{[]string{"sim", "--tokenize", "x"}, "did you mean --tokenizer?", ""},
		{[]string{"sim", "sweep", "--rat", "1,2"}, "knee sim sweep: unknown flag --rat; did you mean --rate?", ""},
		{[]string{"bench", "--rate", "abc"}, "knee bench: --rate \"abc\": want a number such as 8 or 2.5", ""},
		{[]string{"bench", "--requests"}, "knee bench: --requests needs a value: a whole number such as 16", ""},
		{[]string{"bench", "--grace", "soon"}, "--grace \"soon\": want a duration such as 500ms, 30s or 2m", ""},
		{[]string{"benc"}, "knee: unknown command \"benc\"; did you mean bench?", ""},
		{[]string{"bench", "stray"}, "knee bench: unexpected argument", ""},
	}
	for _, c := range cases {
		code, out, errs := kneeCmd(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || (c.not != "" && strings.Contains(errs, c.not)) {
			t.Errorf("knee %v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
			t.Errorf("knee %v: want one line on stderr and nothing on stdout, got %q / %q", c.args, errs, out)
		}
	}
	// Bare knee is a usage mistake that shows the commands.
	if code, out, _ := kneeCmd(t); code != ExitUsage || !strings.Contains(out, "Measure:") {
		t.Errorf("bare knee: exit %d\n%s", code, out)
	}
}

// Long flags with one dash (-rate 5), as the old parser took them, still
// work, anywhere on the line, and a subcommand may follow flags.
func TestOneDashLongFlagsAndFlagsAnywhere(t *testing.T) {
	var a, b struct {
		Requests int64 `json:"requests"`
	}
	simJSON(t, &a, "-requests", "7", "-input-tokens=16", "-output-tokens", "4")
	simJSON(t, &b, "--requests", "7", "--input-tokens", "16", "--output-tokens=4")
	if a.Requests != 7 || a != b {
		t.Errorf("-requests 7: %+v, --requests 7: %+v", a, b)
	}
	code, out, errs := kneeCmd(t, "sim", "--requests", "20", "sweep", "--concurrency", "1,2", "--quiet", "--no-store")
	if code != ExitOK || !strings.Contains(out, "knee") {
		t.Errorf("knee sim --requests 20 sweep …: exit %d: %s\n%s", code, errs, out)
	}
}

// cobra writes the completion scripts, and its __complete answers flag
// values from knee's presets and fixed choices.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_knee", "zsh": "#compdef knee", "fish": "complete -c knee", "powershell": "Register-ArgumentCompleter"} {
		code, out, errs := kneeCmd(t, "completion", shell)
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("knee completion %s: exit %d, %s; script lacks %q", shell, code, errs, want)
		}
	}
	code, out, _ := kneeCmd(t, "__complete", "sim", "--gpu", "")
	for _, want := range []string{"H100-SXM\n", "A100-80GB\n", "L4\n", ":4\n"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("knee __complete sim --gpu '': lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = kneeCmd(t, "__complete", "bench", "--model", "")
	if !strings.Contains(out, "Llama-3.1-8B\n") {
		t.Errorf("knee __complete bench --model '': no model presets:\n%s", out)
	}
	_, out, _ = kneeCmd(t, "__complete", "report", "1", "--format", "")
	if !strings.Contains(out, "html\n") || !strings.Contains(out, "csv\n") {
		t.Errorf("knee __complete report --format '': %s", out)
	}
	// Run ids come from the run database.
	db := map[string]string{"KNEE_DB": filepath.Join(t.TempDir(), "runs.db")}
	if code, _, errs := kneeEnv(t, db, "sim", "--requests", "4", "--quiet", "--label", "first"); code != ExitOK {
		t.Fatalf("storing a run: exit %d: %s", code, errs)
	}
	_, out, _ = kneeEnv(t, db, "__complete", "report", "")
	if !strings.Contains(out, "\n1\tsim first\n") || !strings.Contains(out, "last\t") {
		t.Errorf("knee __complete report '': no stored run id:\n%s", out)
	}
	_, out, _ = kneeCmd(t, "__complete", "sim", "--")
	if !strings.Contains(out, "--rate") || !strings.Contains(out, "--gpu") {
		t.Errorf("knee __complete sim --: flags missing:\n%s", out)
	}
}
