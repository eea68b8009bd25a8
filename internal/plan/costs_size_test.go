package plan

import (
	"testing"

	"github.com/knee-dev/knee/internal/badinput/badinputtest"
)

// A cost file over the limit is refused as bad input naming the limit, unread.
func TestLoadCostsRefusesOversize(t *testing.T) {
	_, err := LoadCosts(badinputtest.OversizeFile(t, "costs.yaml", maxCostsBytes), nil, DefaultCosts)
	badinputtest.WantRefused(t, err, "larger than 1 MiB")
}
