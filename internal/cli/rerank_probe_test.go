package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without --rerank-path, bench probes which path the server answers (knee
// serve answers both: vLLM's, tried first) and the report says so, in its
// notes and its configuration.
func TestBenchRerankPathProbed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, _ := startServe(t, ctx, "--model", "llama-3.1-8b")
	out := t.TempDir()
	code, stdout, stderr := kneeEnv(t, benchEnv(t), benchArgs("--url", url, "--model", "llama-3.1-8b", "--api", "rerank", "--documents", "3", "--out", out, "--detail")...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "rerank path: /v1/rerank (vLLM's request shape), probed") {
		t.Errorf("the report's notes do not say which rerank path was probed:\n%s", stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rerank_path": "/v1/rerank"`) {
		t.Errorf("summary.json's configuration lacks the probed rerank_path")
	}
	if s := readSummary(t, out); s.Items != 24 {
		t.Errorf("%d items, want 24", s.Items)
	}
}

// A sweep probes once, at its first step, and its notes say which path.
func TestSweepRerankPathProbed(t *testing.T) {
	code, stdout, stderr := kneeCmd(t, "sweep", "--api", "rerank", "--documents", "2", "--concurrency", "1,2", "--requests", "6",
		"--input-tokens", "32", "--seed", "3", "--quiet", "--no-store")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Count(stdout, "rerank path: /v1/rerank (vLLM's request shape), probed") != 1 {
		t.Errorf("the sweep's notes do not say once which rerank path was probed:\n%s", stdout)
	}
}
