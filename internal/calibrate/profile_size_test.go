package calibrate

import (
	"testing"

	"github.com/knee-dev/knee/internal/badinput/badinputtest"
)

// A profile over the limit is refused as bad input naming the limit, unread.
func TestLoadProfileRefusesOversize(t *testing.T) {
	_, err := LoadProfile(badinputtest.OversizeFile(t, "profile.yaml", maxProfileBytes))
	badinputtest.WantRefused(t, err, "larger than 1 MiB")
}

// A --from result file over the limit is refused as bad input naming the
// flag and the limit, unread.
func TestFromRefusesOversize(t *testing.T) {
	p := badinputtest.OversizeFile(t, "result.json", maxFromFileBytes)
	_, err := readResultFile(p)
	badinputtest.WantRefused(t, err, "--from "+p+": "+p+" is larger than 512 MiB")
}
