package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func gunzipFile(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The committed WebAssembly is what the sources build: rebuilt here with
// the same script go generate runs, it must match byte for byte (run
// `go generate ./internal/web` when this fails).
func TestWasmUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the WebAssembly (tens of seconds)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "wasmbin/build.sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}
	for _, name := range []string{"knee.wasm.gz", "wasm_exec.js"} {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := wasmFiles.ReadFile("wasmbin/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "knee.wasm.gz" {
			fresh, committed = gunzipFile(t, fresh), gunzipFile(t, committed)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("wasmbin/%s is stale (%d bytes built, %d committed): run go generate ./internal/web", name, len(fresh), len(committed))
		}
	}
}

// The export holds the page, its modules and the WebAssembly, and the
// compressed download stays under 5 MB.
func TestExportSize(t *testing.T) {
	dir := t.TempDir()
	n, err := Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.html", "static/app.js", "static/knee.wasm.gz", "static/wasm_exec.js", "static/wasmworker.js", "static/vendor/uplot/uPlot.iife.min.js"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("export lacks %s", f)
		}
	}
	idx, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if !bytes.Contains(idx, []byte(`name="knee-static"`)) || bytes.Contains(idx, []byte(`"/static/`)) {
		t.Errorf("index.html is not the static copy's (absolute /static/ paths break a site served under a sub-path):\n%s", idx)
	}
	t.Logf("export: %d bytes on disk", n)
	if n > 5<<20 {
		t.Errorf("export is %d bytes, over 5 MiB", n)
	}
}
