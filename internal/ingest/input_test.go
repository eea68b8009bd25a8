package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// A folder, a missing file and a binary file are bad input named before
// parsing; text opens, from a file or stdin.
func TestOpenText(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "x.bin")
	os.WriteFile(bin, append([]byte("PK\x03\x04"), make([]byte, 300)...), 0o644)
	txt := filepath.Join(dir, "x.json")
	os.WriteFile(txt, []byte(`{"a": 1}`), 0o644)
	for path, want := range map[string]string{
		dir:                           "is a directory: want a result",
		filepath.Join(dir, "missing"): "no such file or directory (want a result)",
		bin:                           "is a binary file (it holds NUL bytes; application/zip; it starts with \"PK\\x03\\x04",
	} {
		_, err := OpenText(t.Context(), nil, path, "a result")
		if !badinput.Is(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenText(%s): %v, want bad input saying %q", path, err, want)
		}
	}
	in, err := OpenText(t.Context(), nil, txt, "a result")
	if err != nil || in.Size != 8 {
		t.Fatalf("text file: %v, size %d", err, in.Size)
	}
	data, err := ReadWhole(txt, in.Size, in)
	in.Close()
	if err != nil || string(data) != `{"a": 1}` {
		t.Errorf("ReadWhole: %q %v", data, err)
	}
	in, err = OpenText(t.Context(), strings.NewReader("from stdin"), "-", "a result")
	if err != nil || in.Size != -1 {
		t.Fatalf("stdin: %v", err)
	}
	if _, err := ReadWhole("big.json", MaxFileBytes+1, strings.NewReader("")); !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 96 MiB") {
		t.Errorf("a file over the bound: %v", err)
	}
	if got := quoteCapped([]byte(strings.Repeat("x", 250))); !strings.HasSuffix(got, "… (250 bytes in all)") {
		t.Errorf("quoteCapped: %s", got)
	}
}
