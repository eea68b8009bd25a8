package loadgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A runtime trace is written to the path and closed by stop, which may
// be called twice; no path is no trace; a path that cannot be created is
// an error.
func TestStartRuntimeTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trace")
	stop, err := StartRuntimeTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop()
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("%s: %d bytes, %v; want a Go runtime trace", path, len(b), err)
	}
	stop, err = StartRuntimeTrace("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := StartRuntimeTrace(filepath.Join(t.TempDir(), "no", "such", "x.trace")); err == nil {
		t.Error("an uncreatable path: no error")
	}
}
