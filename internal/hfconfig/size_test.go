package hfconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// A config.json over the limit is refused as bad input naming the limit, unread.
func TestLoadRefusesOversize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, nil, 0o644); err != nil || os.Truncate(p, MaxConfigBytes+1) != nil {
		t.Skip("no sparse file here")
	}
	if _, _, err := Load(p); !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("%v, want bad input naming the 4 MiB limit", err)
	}
}
