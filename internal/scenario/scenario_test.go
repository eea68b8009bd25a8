package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/spf13/cobra"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }
func (l *list) Type() string       { return "expr" }
func (l *list) Values() []string   { return *l }

func command() (*cobra.Command, *float64, *list) {
	cmd := &cobra.Command{Use: "bench"}
	fs := cmd.Flags()
	rate := fs.Float64("rate", 1, "")
	var slos list
	fs.Var(&slos, "slo", "")
	fs.String("api-key-env", "", "")
	fs.Uint64("seed", 0, "")
	fs.String(FileFlag, "", "")
	fs.String(SaveFlag, "", "")
	return cmd, rate, &slos
}

// A file's settings fill the flags the command line left unset; a saved
// scenario reads back to the same settings, lists as lists, no credential.
func TestApplyAndSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	os.WriteFile(path, []byte("rate: 20\nslo: [\"p95(ttft)<2s\", \"p99(itl)<100ms\"]\n"), 0o644)
	cmd, rate, slos := command()
	if err := cmd.Flags().Parse([]string{"--" + FileFlag, path, "--rate", "5", "--api-key-env", "sk-abcdefghijklmnopqrstu"}); err != nil {
		t.Fatal(err)
	}
	if err := Apply(cmd); err != nil {
		t.Fatal(err)
	}
	// A credential pasted into a list is dropped from it, and only it.
	if err := cmd.Flags().Set("slo", "sk-abcdefghijklmnopqrstu"); err != nil {
		t.Fatal(err)
	}
	if *rate != 5 || strings.Join(*slos, " ") != "p95(ttft)<2s p99(itl)<100ms sk-abcdefghijklmnopqrstu" {
		t.Errorf("rate %v (the command line's 5 wins), slos %v", *rate, *slos)
	}
	saved := filepath.Join(dir, "saved.yaml")
	if err := Save(cmd.Flags(), saved, [][2]string{{"seed", "42"}}, "v1"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(saved)
	want := "# bench scenario, written by knee v1; repeat with: bench --scenario-file " + saved + "\nrate: \"5\"\nseed: \"42\"\nslo:\n    - p95(ttft)<2s\n    - p99(itl)<100ms\n"
	if string(b) != want {
		t.Errorf("saved:\n%s\nwant:\n%s", b, want)
	}
	again, rate2, slos2 := command()
	again.Flags().Parse([]string{"--" + FileFlag, saved})
	if err := Apply(again); err != nil || *rate2 != 5 || len(*slos2) != 2 {
		t.Errorf("reading the saved file back: %v, rate %v, slos %v", err, *rate2, *slos2)
	}
}

func TestApplyBadInput(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		"":                  "empty file",
		"- 1\n":             "want a mapping of flag names",
		"rate: 2\nratee: 3": `:2: "ratee" is not a setting of bench`,
		"rate: abc\n":       `:1: rate "abc"`,
		"rate: {a: 1}\n":    "want a value or a list of values",
		"rate: [\n":         "not YAML",
	} {
		path := filepath.Join(dir, "s.yaml")
		os.WriteFile(path, []byte(body), 0o644)
		cmd, _, _ := command()
		cmd.Flags().Parse([]string{"--" + FileFlag, path})
		if err := Apply(cmd); !badinput.Is(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want bad input saying %q", body, err, want)
		}
	}
}

// A target URL's password and its key parameters never reach a saved
// scenario; the file says what was left out, and only its owner reads it,
// even when it was there before, world-readable.
func TestSaveLeavesOutURLCredentials(t *testing.T) {
	cmd := &cobra.Command{Use: "bench"}
	fs := cmd.Flags()
	fs.String("url", "", "")
	fs.String("metrics-url", "", "")
	fs.String(FileFlag, "", "")
	fs.String(SaveFlag, "", "")
	if err := fs.Parse([]string{"--url", "http://user:secretpw@host:8000/v1",
		"--metrics-url", "https://host/metrics?api-version=2024&access_token=tok123secret"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(path, []byte("old\n"), 0o644)
	if err := Save(fs, path, [][2]string{{"tokenize-url", "http://u:pw2@host/tokenize"}}, "v1"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, secret := range []string{"secretpw", "user@", "user:s", "tok123secret", "pw2"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the saved scenario holds %q:\n%s", secret, b)
		}
	}
	for _, want := range []string{"url: http://host:8000/v1\n", "metrics-url: https://host/metrics?api-version=2024\n",
		"tokenize-url: http://host/tokenize\n", "# credentials were left out of metrics-url, tokenize-url, url"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("saved scenario lacks %q:\n%s", want, b)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}
