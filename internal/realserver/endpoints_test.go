package realserver

import (
	"path/filepath"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// Ollama serves /v1/embeddings: every record is whole, carries its items
// and the server's prompt count, and has E2E but no first token.
func TestEmbeddingsAgainstOllama(t *testing.T) {
	s := realServer(t)
	dir := t.TempDir()
	const requests, batch = 8, 2
	knee(t, "bench", "--url", s.url, "--model", s.model, "--api", "embeddings", "--batch-size", "2",
		"--concurrency", "2", "--requests", "8", "--input-tokens", "16", "--seed", "1", "--quiet", "--out", dir)
	recs := readRecords(t, filepath.Join(dir, "records.jsonl"))
	if len(recs) != requests {
		t.Fatalf("%d records, want %d", len(recs), requests)
	}
	for _, r := range recs {
		e2e, ok := r.E2E()
		_, hasTTFT := r.TTFT()
		if !r.OK() || r.Items != batch || !ok || e2e <= 0 || hasTTFT {
			t.Errorf("request %d: %s %s, items %d, e2e %v (%v), ttft %v", r.ID, r.Error, r.ErrorMessage, r.Items, e2e, ok, hasTTFT)
			continue
		}
		if r.TokenSource != record.TokensFromUsage || r.InputTokens < batch {
			t.Errorf("request %d: %d input tokens from %q, want the server's usage", r.ID, r.InputTokens, r.TokenSource)
		}
	}
	t.Logf("request 0: %d input tokens (usage) for %d texts, e2e %v", recs[0].InputTokens, batch, func() any { d, _ := recs[0].E2E(); return d }())
}
