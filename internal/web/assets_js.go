//go:build js

package web

import (
	"io/fs"
	"testing/fstest"
)

// The WebAssembly build answers the API only: the static server serves the
// page and its modules, so they are not compiled in (and editing them
// leaves the committed .wasm up to date).
var assets fs.FS = fstest.MapFS{"assets/index.html": {Data: []byte("<!doctype html><title>knee</title>")}}
