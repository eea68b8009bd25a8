package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteTemp keeps every record, readable back; a folder it cannot write
// into is an error and leaves no file.
func TestWriteTemp(t *testing.T) {
	dir := t.TempDir()
	recs := []Request{{ID: 1, OutputTokens: 3}, {ID: 2, Error: ErrHTTP5xx}}
	path, err := WriteTemp(dir, recs)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "knee-records-") {
		t.Errorf("path %s, want a knee-records-* file in %s", path, dir)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := ReadAll(f)
	if err != nil || len(back) != 2 || back[0].OutputTokens != 3 || back[1].Error != ErrHTTP5xx {
		t.Errorf("read back %+v, %v; want the two records", back, err)
	}
	if _, err := WriteTemp(filepath.Join(dir, "missing"), recs); err == nil {
		t.Error("a missing folder: no error")
	}
}
