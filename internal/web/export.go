//go:build !js

package web

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The simulator and the rest of the API, compiled to WebAssembly (see
// cmd/knee-wasm), with Go's loader for it. Committed so that knee ui
// --export needs no Go toolchain; TestWasmUpToDate fails when the sources
// changed and this was not rebuilt.
//
//go:generate sh wasmbin/build.sh wasmbin
//go:embed wasmbin/knee.wasm.gz wasmbin/wasm_exec.js
var wasmFiles embed.FS

// Export writes the whole interface to dir as static files that any web
// server can serve: index.html, the page's modules and styles, and the API
// as WebAssembly. The simulator, lifecycle, lab and Learn pages work there
// with no knee process behind them; the runs pages say they need knee ui.
// It returns the bytes written.
func Export(dir string) (int64, error) {
	if err := os.MkdirAll(filepath.Join(dir, "static"), 0o755); err != nil {
		return 0, fmt.Errorf("export: %w", err)
	}
	idx, err := indexTemplate()
	if err != nil {
		return 0, err
	}
	var page bytes.Buffer
	if err := idx.Execute(&page, map[string]any{"Static": true}); err != nil {
		return 0, fmt.Errorf("export: index.html: %w", err)
	}
	total := int64(page.Len())
	if err := os.WriteFile(filepath.Join(dir, "index.html"), page.Bytes(), 0o644); err != nil {
		return 0, fmt.Errorf("export: %w", err)
	}
	copyTree := func(src fs.FS, root string) error {
		return fs.WalkDir(src, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if rel == "index.html" || filepath.Ext(p) == ".sh" {
				return nil
			}
			b, err := fs.ReadFile(src, p)
			if err != nil {
				return err
			}
			dst := filepath.Join(dir, "static", filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			total += int64(len(b))
			return os.WriteFile(dst, b, 0o644)
		})
	}
	if err := copyTree(assets, "assets"); err != nil {
		return total, fmt.Errorf("export: %w", err)
	}
	if err := copyTree(wasmFiles, "wasmbin"); err != nil {
		return total, fmt.Errorf("export: %w", err)
	}
	return total, nil
}
