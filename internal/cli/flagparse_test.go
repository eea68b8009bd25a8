package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Flags after a positional argument are parsed, in every command.
func TestFlagsAnywhereOnTheLine(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.csv")
	os.WriteFile(ok, []byte("queue_ms,prefill_ms,decode_ms\n1,2,3\n1,2,3\n"), 0o644)
	for _, args := range [][]string{
		{"diagnose", ok, "--json"},
		{"diagnose", "--json", ok},
		{"diagnose", ok, "-json=true"},
	} {
		code, out, errs := kneeCmd(t, args...)
		if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "{") {
			t.Errorf("%v: exit %d, stdout %.60q, stderr %q", args, code, out, errs)
		}
	}
	// "--" ends the flags: what follows is positional, even if it looks like a flag.
	code, _, errs := kneeCmd(t, "diagnose", "--", "--json")
	if code != ExitUsage || !strings.Contains(errs, "--json") {
		t.Errorf("-- --json: exit %d, %q", code, errs)
	}
	// A subcommand after flags: knee sim --rate 10,20 sweep is knee sim sweep;
	// a flag's value that happens to be the word is not.
	for _, args := range [][]string{
		{"sim", "--rate", "10,20", "--duration", "3s", "sweep", "--json", "--quiet", "--no-store"},
		{"sim", "--quiet", "sweep", "--rate", "10,20", "--duration", "3s", "--json", "--no-store"},
	} {
		if code, out, errs := kneeCmd(t, args...); code != 0 || !strings.Contains(out, `"steps"`) {
			t.Errorf("%v: exit %d, stdout %.80q, stderr %q", args, code, out, errs)
		}
	}
	if code, out, errs := kneeCmd(t, "sim", "--label", "sweep", "--requests", "3", "--json", "--quiet", "--no-store"); code != 0 || strings.Contains(out, `"steps"`) {
		t.Errorf("--label sweep: exit %d, stdout %.80q, stderr %q", code, out, errs)
	}
	// A bench positional after flags is still refused by name.
	code, _, errs = kneeCmd(t, "bench", "--requests", "1", "extra")
	if code != ExitUsage || !strings.Contains(errs, `"extra"`) {
		t.Errorf("bench extra: exit %d, %q", code, errs)
	}
}

// A malformed value is one line naming the flag and the form it wants,
// not the flag package's usage dump.
func TestFlagValueErrorsAreOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--rate", "abc"}, `--rate "abc": want a number such as 8 or 2.5`},
		{[]string{"bench", "--concurrency", "1.5"}, `--concurrency "1.5": want a whole number`},
		{[]string{"sim", "--duration", "10"}, `--duration "10": want a duration such as 500ms, 30s or 2m`},
		{[]string{"sweep", "--json=maybe"}, `--json "maybe": want true or false`},
		{[]string{"sim", "--requests", "99999999999999999999"}, "out of range"},
		{[]string{"bench", "--rate"}, "--rate needs a value: a number"},
		{[]string{"bench", "--ratee", "3"}, "unknown flag --ratee; did you mean --rate?"},
		{[]string{"report", "--fromat", "html"}, "did you mean --format?"},
		{[]string{"sim", "--seed", "-1"}, `--seed "-1": want a non-negative integer`},
	} {
		code, out, errs := kneeCmd(t, c.args...)
		lines := strings.Count(strings.TrimSpace(errs), "\n") + 1
		if code != ExitUsage || !strings.Contains(errs, c.want) || lines != 1 || out != "" {
			t.Errorf("%v: exit %d, %d lines %q; want exit 2, one line with %q", c.args, code, lines, errs, c.want)
		}
	}
}

// -h prints a header with the one-line description and the flags grouped.
func TestHelpIsGrouped(t *testing.T) {
	code, _, errs := kneeCmd(t, "bench", "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(errs, "Usage: knee bench [flags]\n\nLoad-test an OpenAI-compatible") {
		t.Errorf("bench -h header:\n%.200s", errs)
	}
	last := -1
	for _, g := range []string{"Target:", "Load:", "Workload:", "Objectives:", "Engine (simulated server):", "Output:"} {
		i := strings.Index(errs, "\n"+g+"\n")
		if i < 0 || i < last {
			t.Errorf("bench -h: group %q missing or out of order", g)
		}
		last = i
	}
	if i, j := strings.Index(errs, "--concurrency"), strings.Index(errs, "\nWorkload:"); i < 0 || i > j {
		t.Errorf("--concurrency is not in the Load group")
	}
	// Commands with their own header group their flags too.
	for _, cmd := range [][]string{{"sim", "-h"}, {"sweep", "-h"}, {"sim", "sweep", "-h"}, {"report", "-h"}, {"completion", "-h"}} {
		code, _, errs := kneeCmd(t, cmd...)
		if code != 0 || !strings.HasPrefix(errs, "Usage: knee ") || regexp.MustCompile(`\n  -[a-z]`).MatchString(errs) {
			t.Errorf("%v -h: exit %d, single-dash flags or no header:\n%.300s", cmd, code, errs)
		}
	}
	// knee help CMD is CMD -h.
	code, _, errs = kneeCmd(t, "help", "sweep")
	if code != 0 || !strings.HasPrefix(errs, "Usage: knee sweep") {
		t.Errorf("knee help sweep: exit %d, %.80q", code, errs)
	}
	if code, _, errs = kneeCmd(t, "help", "sim", "sweep"); code != 0 || !strings.HasPrefix(errs, "Usage: knee sim sweep") {
		t.Errorf("knee help sim sweep: exit %d, %.80q", code, errs)
	}
	code, out, _ := kneeCmd(t, "-h")
	for _, want := range []string{"Measure:", "  bench ", "Stored runs:", "  completion ", "  version "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("knee -h lacks %q:\n%s", want, out)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errs := kneeCmd(t, args...)
		if code != 0 || !strings.HasPrefix(out, "knee "+Version+" (go") {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errs)
		}
	}
	if code, _, errs := kneeCmd(t, "version", "extra"); code != ExitUsage || !strings.Contains(errs, "extra") {
		t.Errorf("version extra: exit %d, %q", code, errs)
	}
}

// The bash script completes commands, flags and flag choices when sourced;
// the zsh and fish scripts are at least valid for their shells.
func TestCompletionScripts(t *testing.T) {
	dir := t.TempDir()
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errs := kneeCmd(t, "completion", sh)
		if code != 0 || !strings.Contains(out, "concurrency") || !strings.Contains(out, "diagnose") {
			t.Fatalf("completion %s: exit %d, %q, %.200q", sh, code, errs, out)
		}
		scripts[sh] = filepath.Join(dir, "knee."+sh)
		os.WriteFile(scripts[sh], []byte(out), 0o644)
	}
	if code, _, errs := kneeCmd(t, "completion", "tcsh"); code != ExitUsage || !strings.Contains(errs, "want bash, zsh or fish") {
		t.Errorf("completion tcsh: exit %d, %q", code, errs)
	}
	if _, err := exec.LookPath("bash"); err == nil {
		probe := `source "$1"
comp() { COMP_WORDS=("${@:2}"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); _knee; echo "$1=${COMPREPLY[*]}"; }
comp a knee di
comp b knee bench --con
comp c knee sim --arr
comp d knee bench --api ""
comp e knee diagnose --jso
comp f knee completion z`
		out, err := exec.Command("bash", "-c", probe, "bash", scripts["bash"]).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		want := "a=diagnose\nb=--concurrency\nc=--arrival\nd=chat completions\ne=--json\nf=zsh\n"
		if string(out) != want {
			t.Errorf("bash completion:\n%s\nwant\n%s", out, want)
		}
	}
	if _, err := exec.LookPath("zsh"); err == nil {
		if out, err := exec.Command("zsh", "-n", scripts["zsh"]).CombinedOutput(); err != nil {
			t.Errorf("zsh -n: %v\n%s", err, out)
		}
	}
	if _, err := exec.LookPath("fish"); err == nil {
		if out, err := exec.Command("fish", "-n", scripts["fish"]).CombinedOutput(); err != nil {
			t.Errorf("fish -n: %v\n%s", err, out)
		}
		out, err := exec.Command("fish", "--no-config", "-c", "source $argv[1]; complete -C 'knee bench --con'; complete -C 'knee sweep --api '", scripts["fish"]).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--concurrency\t") || !strings.Contains(string(out), "completions\t") {
			t.Errorf("fish completion: %v\n%s", err, out)
		}
	}
}

// A credential given where a name was expected is never echoed.
func TestCredentialsNeverEchoed(t *testing.T) {
	secret := "sk-SECRET-abcdef0123456789"
	for _, args := range [][]string{
		{"bench", "--api-key-env", secret, "--requests", "1"},
		{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--api-key-env", secret, "--requests", "1"},
		{"sweep", "--api-key-env", secret, "--concurrency", "1", "--requests", "1"},
		{"calibrate", "--api-key-env", secret},
		{"bench", secret},
		{"bench", "--" + secret},
		{"bench", "--rate", secret},
		{secret},
		{"bench", "--api-key-env", "hf_AbCdEfGhIjKlMnOpQrStUv", "--requests", "1"},
		{"bench", "--api-key-env", "Ab3dEfGh1jKlMnOpQr5tUvWx", "--requests", "1"},
	} {
		code, out, errs := kneeCmd(t, args...)
		for _, part := range []string{"SECRET", "abcdef0123", "GhIjKl", "Ab3dEf"} {
			if strings.Contains(out+errs, part) {
				t.Errorf("%v: the credential is echoed: %q", args[:2], errs)
			}
		}
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want 2: %q", args[:2], code, errs)
		}
	}
	// A variable name is fine, and named when unset.
	code, _, errs := kneeCmd(t, "bench", "--api-key-env", "MY_API_KEY_2", "--url", "http://127.0.0.1:1", "--model", "m", "--requests", "1")
	if code != ExitUsage || !strings.Contains(errs, "MY_API_KEY_2: that environment variable is empty or unset") {
		t.Errorf("unset variable: exit %d, %q", code, errs)
	}
	for _, s := range []string{"OPENAI_API_KEY", "MY_SERVICE_API_KEY_2024_PROD", "http://localhost:8000", "llama-3.1-8b", "normal:512,128", "/tmp/records.jsonl"} {
		if looksLikeSecret(s) {
			t.Errorf("%q looks like a secret", s)
		}
	}
}
