package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// A preset or fleet path that names something huge (a log, a device) is
// refused at the cap as bad input, not read whole.
func TestPresetAndFleetFilesRefuseOversize(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxPresetFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cat := simengine.NewCatalog()
	loads := map[string]func() error{
		"LoadGPUFile":    func() error { _, err := LoadGPUFile(cat, huge); return err },
		"LoadModelFile":  func() error { _, err := LoadModelFile(cat, huge); return err },
		"LoadPresetFile": func() error { _, err := LoadPresetFile(cat, huge); return err },
		"LoadFleetFile":  func() error { _, err := LoadFleetFile(cat, huge, simengine.Config{}); return err },
	}
	for name, load := range loads {
		err := load()
		if !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 1 MiB") {
			t.Errorf("%s of a file over 1 MiB: %v; want bad input naming the limit", name, err)
		}
	}
}
