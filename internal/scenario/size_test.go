package scenario

import (
	"testing"

	"github.com/knee-dev/knee/internal/badinput/badinputtest"
)

// A scenario file over the limit is refused as bad input naming the flag
// and the limit, unread.
func TestApplyRefusesOversize(t *testing.T) {
	p := badinputtest.OversizeFile(t, "s.yaml", maxScenarioBytes)
	cmd, _, _ := command()
	cmd.Flags().Parse([]string{"--" + FileFlag, p})
	badinputtest.WantRefused(t, Apply(cmd), "--"+FileFlag+": "+p+" is larger than 1 MiB")
}
