// Package archtest holds the dependency direction of the code base: leaf
// packages import only the standard library (ARCHITECTURE.md).
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/knee-dev/knee/"

func TestLeafPackagesImportOnlyStdlib(t *testing.T) {
	leaves := map[string][]string{
		"internal/record":    nil,
		"internal/sse":       nil,
		"internal/simengine": nil,
		"internal/stats":     {"internal/record"},
	}
	for leaf, allowed := range leaves {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../../"+leaf).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", leaf, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			rel := strings.TrimPrefix(dep, module)
			if rel == leaf {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || rel == a
			}
			if !ok {
				t.Errorf("%s imports %s; leaf packages may import only the standard library", leaf, dep)
			}
		}
	}
}
