// Package tracetest finds the real production traces the tests replay: the
// shared/traces folder beside the repository (or beside any folder above
// the test's package), which is not part of the repository.
package tracetest

import (
	"os"
	"path/filepath"
	"testing"
)

// Path returns the path of trace file name, or skips the test when no
// shared/traces folder above the working directory holds it.
func Path(t testing.TB, name string) string {
	t.Helper()
	dir, _ := filepath.Abs(".")
	for {
		p := filepath.Join(dir, "shared", "traces", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Skipf("trace %s not found in a shared/traces folder above the package", name)
		}
		dir = up
	}
}
