package serverprofile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// A profile over the limit is refused as bad input naming the limit, unread.
func TestLoadRefusesOversize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(p, nil, 0o644); err != nil || os.Truncate(p, maxProfileBytes+1) != nil {
		t.Skip("no sparse file here")
	}
	if _, err := Load(p); !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("%v, want bad input naming the 1 MiB limit", err)
	}
}
