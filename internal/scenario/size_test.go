package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// A scenario file over the limit is refused as bad input naming the flag
// and the limit, unread.
func TestApplyRefusesOversize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, nil, 0o644); err != nil || os.Truncate(p, maxScenarioBytes+1) != nil {
		t.Skip("no sparse file here")
	}
	cmd, _, _ := command()
	cmd.Flags().Parse([]string{"--" + FileFlag, p})
	if err := Apply(cmd); !badinput.Is(err) || !strings.Contains(err.Error(), "--"+FileFlag+": "+p+" is larger than 1 MiB") {
		t.Errorf("%v, want bad input naming the flag and the 1 MiB limit", err)
	}
}
