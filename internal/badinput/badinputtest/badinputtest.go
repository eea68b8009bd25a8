// Package badinputtest has the test fixtures of the capped readers: a file
// one byte over a reader's limit, and the check that it was refused as bad
// input naming the limit.
package badinputtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// OversizeFile is the path of a file named name, one byte over limit, in a
// fresh temporary folder. It is sparse (no disk used); the test is skipped
// where sparse files cannot be made.
func OversizeFile(t testing.TB, name string, limit int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, nil, 0o644); err != nil || os.Truncate(p, limit+1) != nil {
		t.Skip("no sparse file here")
	}
	return p
}

// WantRefused fails t unless err is bad input whose message holds want
// (the limit, and the flag where one named the file).
func WantRefused(t testing.TB, err error, want string) {
	t.Helper()
	if !badinput.Is(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("%v; want bad input saying %q", err, want)
	}
}
