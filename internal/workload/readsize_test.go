package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// A dataset, tokenizer or mix file over its limit is refused as bad input naming
// the limit, unread (sparse files: no disk used).
func TestLoadersRefuseOversize(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil || os.Truncate(p, size) != nil {
			t.Skip("no sparse file here")
		}
		return p
	}
	if _, err := LoadDataset(sparse("prompts.jsonl", maxDatasetBytes+1)); !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 2 GiB") {
		t.Errorf("dataset: %v, want bad input naming the 2 GiB limit", err)
	}
	if _, err := LoadHFTokenizer(sparse("tokenizer.json", maxTokenizerBytes+1)); !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 256 MiB") {
		t.Errorf("tokenizer: %v, want bad input naming the 256 MiB limit", err)
	}
	if _, err := LoadMix(sparse("mix.yaml", maxMixBytes+1)); !badinput.Is(err) || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("mix: %v, want bad input naming the 1 MiB limit", err)
	}
}
