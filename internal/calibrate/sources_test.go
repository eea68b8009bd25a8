package calibrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/stats"
)

// A directory of result files reads every step it holds, and names the
// files it could not read instead of failing on them.
func TestReadResultsDirectory(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "ingest", "testdata", "vllm_summary.json")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "a.json"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "notes.json"), []byte(`{"hello": 1}`), 0o644)
	os.WriteFile(filepath.Join(dir, "readme.txt"), []byte("not looked at"), 0o644)
	srcs, skipped, err := ReadResults(dir)
	if err != nil || len(srcs) == 0 {
		t.Fatalf("%d sources, %v", len(srcs), err)
	}
	if !strings.Contains(srcs[0].Obs.Source, filepath.Join("sub", "a.json")) {
		t.Errorf("source named %q", srcs[0].Obs.Source)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "notes.json: not a result file knee reads") {
		t.Errorf("skipped %q", skipped)
	}
	one, _, err := ReadResults(src)
	if err != nil || len(one) != len(srcs) {
		t.Errorf("the file alone: %d sources, %v", len(one), err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing.json"), filepath.Join(dir, "notes.json")} {
		if _, _, err := ReadResults(bad); !badinput.Is(err) {
			t.Errorf("ReadResults(%s): %v, want bad input", bad, err)
		}
	}
	empty := t.TempDir()
	if _, _, err := ReadResults(empty); !badinput.Is(err) || !strings.Contains(err.Error(), "no result file knee reads") {
		t.Errorf("empty directory: %v", err)
	}
}

func TestLoadOfConfig(t *testing.T) {
	if c, r := LoadOfConfig([][2]string{{"concurrency", "8"}, {"seed", "3"}}, stats.Summary{}); c != 8 || r != 0 {
		t.Errorf("concurrency: %v %v", c, r)
	}
	if c, r := LoadOfConfig([][2]string{{"rate_rps", "2.5"}}, stats.Summary{}); c != 0 || r != 2.5 {
		t.Errorf("rate: %v %v", c, r)
	}
	if c, r := LoadOfConfig(nil, stats.Summary{OfferedRateRPS: 4}); c != 0 || r != 4 {
		t.Errorf("offered: %v %v", c, r)
	}
}
