package redact

import (
	"strings"
	"testing"
)

func TestControl(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é and 漢字":         "plain text, é and 漢字",
		"boom \x1b]0;PWNED\x07\x1b[2J": `boom \x1b]0;PWNED\x07\x1b[2J`,
		"a\nb\tc\rd":                   `a\nb\tc\rd`,
		"del\x7f c1\u009b31m":          `del\x7f c1\u009b31m`,
		"bad utf-8 \xff\x9b[2J":        `bad utf-8 \xff\x9b[2J`,
		"":                             "",
	} {
		if got := Control(in); got != want {
			t.Errorf("Control(%q) = %q, want %q", in, got, want)
		}
	}
}

// A writer keeps a report's own lines and tabs, escapes the rest, and
// copes with a UTF-8 character cut between two writes.
func TestControlWriter(t *testing.T) {
	var b strings.Builder
	w := ControlWriter(&b)
	for _, p := range []string{"line 1\tx\n", "boom \x1b]0;PWNED\x07", "\x1b[2J\n", "é"[:1], "é"[1:] + "\u009b\n", "\xff end\n"} {
		if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	want := "line 1\tx\nboom \\x1b]0;PWNED\\x07\\x1b[2J\né\\u009b\n\\xff end\n"
	if b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07\u009b") {
		t.Errorf("a control character reached the output: %q", b.String())
	}
}

// Every error knee prints passes through Secrets: a server's body quoted in
// one reaches the terminal escaped, its lines kept.
func TestSecretsEscapesControls(t *testing.T) {
	got := Secrets("probe failed: server said \"boom \x1b]0;PWNED\x07\"\nhint: sk-abcdefghijkl")
	want := "probe failed: server said \"boom \\x1b]0;PWNED\\x07\"\nhint: sk-…(redacted)"
	if got != want {
		t.Errorf("Secrets = %q, want %q", got, want)
	}
}
