package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

func TestOutFormat(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"", ""}: "text", {"markdown", ""}: "md", {"", "r.html"}: "html", {"", "r"}: "text", {"json", "r.txt"}: "",
		{"csv", "-"}: "csv", {"", "r.pdf"}: "", {"yaml", ""}: "", {"md", "r.MD"}: "md",
	} {
		got, err := OutFormat(in[0], in[1])
		if got != want || (want == "") != (err != nil) || (err != nil && !badinput.Is(err)) {
			t.Errorf("OutFormat(%q, %q) = %q, %v; want %q", in[0], in[1], got, err, want)
		}
	}
}

func TestWriteFileWholeOrRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	if err := WriteFile(path, []byte("# one\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "# one\n" {
		t.Errorf("written %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	for _, c := range []struct{ path, want string }{
		{dir, "is a directory: want a file name"},
		{filepath.Join(dir, "nope", "r.md"), "does not exist (create it first)"},
		{filepath.Join(path, "r.md"), "is not a folder"},
	} {
		if err := WriteFile(c.path, []byte("x")); !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WriteFile(%s): %v, want bad input saying %q", c.path, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %d entries in the folder, want only r.md", len(entries))
	}
}
