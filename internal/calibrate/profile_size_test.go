package calibrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// A profile over the limit is refused as bad input naming the limit, unread.
func TestLoadProfileRefusesOversize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(p, nil, 0o644); err != nil || os.Truncate(p, maxProfileBytes+1) != nil {
		t.Skip("no sparse file here")
	}
	_, err := LoadProfile(p)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("%v, want bad input naming the 1 MiB limit", err)
	}
}

// A --from result file over the limit is refused as bad input naming the
// flag and the limit, unread.
func TestFromRefusesOversize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(p, nil, 0o644); err != nil || os.Truncate(p, maxFromFileBytes+1) != nil {
		t.Skip("no sparse file here")
	}
	_, err := readResultFile(p)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "--from "+p+": "+p+" is larger than 512 MiB") {
		t.Errorf("%v, want bad input naming --from and the 512 MiB limit", err)
	}
}
