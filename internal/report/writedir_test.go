package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// WriteDir writes the three files a run's --out folder holds; a folder
// that is not there is an error.
func TestWriteDir(t *testing.T) {
	dir := t.TempDir()
	rep := &Run{Kind: "bench", Model: "m-write-dir", Target: "embedded"}
	if err := WriteDir(dir, rep, []record.Request{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"summary.json", "report.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(b), "m-write-dir") {
			t.Errorf("%s: %v; want it written with the model named", name, err)
		}
	}
	if err := WriteDir(filepath.Join(dir, "missing"), rep, nil); err == nil {
		t.Error("a missing folder: no error")
	}
}
