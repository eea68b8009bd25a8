package sim

import (
	"testing"

	"github.com/knee-dev/knee/internal/badinput/badinputtest"
	"github.com/knee-dev/knee/internal/simengine"
)

// A preset or fleet path that names something huge (a log, a device) is
// refused at the cap as bad input, not read whole.
func TestPresetAndFleetFilesRefuseOversize(t *testing.T) {
	huge := badinputtest.OversizeFile(t, "huge.yaml", maxPresetFileBytes)
	cat := simengine.NewCatalog()
	loads := map[string]func() error{
		"LoadGPUFile":    func() error { _, err := LoadGPUFile(cat, huge); return err },
		"LoadModelFile":  func() error { _, err := LoadModelFile(cat, huge); return err },
		"LoadPresetFile": func() error { _, err := LoadPresetFile(cat, huge); return err },
		"LoadFleetFile":  func() error { _, err := LoadFleetFile(cat, huge, simengine.Config{}); return err },
	}
	for name, load := range loads {
		t.Run(name, func(t *testing.T) { badinputtest.WantRefused(t, load(), "larger than 1 MiB") })
	}
}
