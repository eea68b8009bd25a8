package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchStopsWhenOversaturated: an open-loop rate far beyond a small
// engine's capacity stops within seconds, not at --duration, saying why;
// a rate the engine serves runs its course.
func TestBenchStopsWhenOversaturated(t *testing.T) {
	parallelUntimed(t)
	out := t.TempDir()
	_, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--no-store", "--quiet", "--out", out, "--rate", "60", "--duration", "60s",
		"--input-tokens", "1024", "--output-tokens", "64", "--gpu", "l4", "--stop-oversaturated", "--grace", "2s")
	if !strings.Contains(stderr, "over-saturated: requests in flight grew") || !strings.Contains(stdout, "over-saturated") {
		t.Fatalf("no over-saturation stop said; stderr:\n%s", stderr)
	}
	// The requests the grace cut off after the stop are knee's doing, not
	// the server's failures: no advice to raise --grace against the stop.
	if strings.Contains(stdout+stderr, "raise --grace") || strings.Contains(stdout, "canceled 1") {
		t.Errorf("the over-saturation stop's cut-off requests read as failures:\n%s\n%s", stdout, stderr)
	}
	var lastSend time.Duration
	for _, r := range readRecords(t, filepath.Join(out, "records.jsonl")) {
		lastSend = max(lastSend, r.Sent)
	}
	if lastSend > 20*time.Second {
		t.Errorf("last request sent at %v of a 60 s run: the stop came late", lastSend)
	}

	code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--no-store", "--quiet", "--rate", "4", "--duration", "5s",
		"--input-tokens", "64", "--output-tokens", "8", "--stop-oversaturated")
	if code != ExitOK || strings.Contains(stderr, "over-saturated") {
		t.Errorf("a light load: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = kneeEnv(t, benchEnv(t), "bench", "--no-store", "--quiet", "--concurrency", "2", "--requests", "2", "--stop-oversaturated")
	if code != ExitUsage || !strings.Contains(stderr, "open loop") {
		t.Errorf("closed loop with --stop-oversaturated: exit %d, stderr %q; want 2", code, stderr)
	}
}

// TestBenchOversaturatedRefusedWithShards: each shard sees only its part
// of the queue, so the stop is refused with --shards.
func TestBenchOversaturatedRefusedWithShards(t *testing.T) {
	code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--quiet", "--rate", "5", "--requests", "5", "--shards", "2", "--shard", "0",
		"--run-name", "x", "--seed", "1", "--stop-oversaturated")
	if code != ExitUsage || !strings.Contains(stderr, "--stop-oversaturated is not supported with --shards") {
		t.Errorf("exit %d, stderr %q; want 2 naming both flags", code, stderr)
	}
}
