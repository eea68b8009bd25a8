package serverprofile

import (
	"testing"

	"github.com/knee-dev/knee/internal/badinput/badinputtest"
)

// A profile over the limit is refused as bad input naming the limit, unread.
func TestLoadRefusesOversize(t *testing.T) {
	_, err := Load(badinputtest.OversizeFile(t, "profile.yaml", maxProfileBytes))
	badinputtest.WantRefused(t, err, "larger than 1 MiB")
}
