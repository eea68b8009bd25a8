package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// A cost file over the limit is refused as bad input naming the limit, unread.
func TestLoadCostsRefusesOversize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "costs.yaml")
	if err := os.WriteFile(p, nil, 0o644); err != nil || os.Truncate(p, maxCostsBytes+1) != nil {
		t.Skip("no sparse file here")
	}
	_, err := LoadCosts(p, nil, DefaultCosts)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("%v, want bad input naming the 1 MiB limit", err)
	}
}
