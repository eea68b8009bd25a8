package hfconfig

import (
	"testing"

	"github.com/knee-dev/knee/internal/badinput/badinputtest"
)

// A config.json over the limit is refused as bad input naming the limit, unread.
func TestLoadRefusesOversize(t *testing.T) {
	_, _, err := Load(badinputtest.OversizeFile(t, "config.json", MaxConfigBytes))
	badinputtest.WantRefused(t, err, "larger than 4 MiB")
}
