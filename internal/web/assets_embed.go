//go:build !js

package web

import (
	"embed"
	"io/fs"
)

//go:embed assets
var embedded embed.FS

// assets are the page, its modules, styles and vendored uPlot.
var assets fs.FS = embedded
