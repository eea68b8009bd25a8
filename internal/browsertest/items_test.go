package browsertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestEmbeddingsRunLiveInBrowser: knee ui's live view of a stored
// embeddings run (knee bench --api embeddings against the embedded
// server) shows items/s and E2E tiles and an E2E chart, and no TTFT or
// TPOT tile or chart: such answers come whole.
func TestEmbeddingsRunLiveInBrowser(t *testing.T) {
	exe := chromiumPath()
	if exe == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but chromium is not installed (.ci/run installs it)")
		}
		t.Skip("chromium not installed (apt-get install chromium); this test runs in CI")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "knee.db")
	bench := knee(t, "bench", "--db", db, "--api", "embeddings", "--batch-size", "4", "--requests", "30", "--concurrency", "2",
		"--input-tokens", "32", "--seed", "5", "--quiet")
	if err := bench.Run(); err != nil {
		t.Fatalf("knee bench --api embeddings: %v", err)
	}
	base := startUI(t, db)
	b := newBrowser(t, exe, dir)
	b.do(chromedp.Navigate(base + "/#runs/live/1"))
	b.waitFor(`document.getElementById('live-state')?.dataset.finished === '1' && document.querySelectorAll('#live-items canvas').length === 1`)
	got := eval[map[string]any](b, `(() => { const v = id => document.getElementById(id)?.dataset.value;
	  return {items: Number(v('live-items-rate')), e2e: Number(v('live-e2e-p95')), completed: Number(v('live-completed')),
	    ttft: !!document.getElementById('live-ttft-p95'), tpot: !!document.getElementById('live-tpot-p50'),
	    ttftChart: !document.getElementById('live-ttft').hidden, charted: Number(document.getElementById('live-items').dataset.items),
	    text: document.getElementById('live-items-rate').textContent}; })()`)
	t.Logf("live view of an embeddings run: %v", got)
	if got["completed"] != 30.0 || got["items"].(float64) <= 0 || got["e2e"].(float64) <= 0 {
		t.Errorf("tiles: %v; want 30 completed, items/s and E2E p95 above 0", got)
	}
	if got["ttft"] == true || got["tpot"] == true || got["ttftChart"] == true {
		t.Errorf("an embeddings run shows a TTFT or TPOT tile or chart: %v", got)
	}
	if got["charted"] != 120.0 {
		t.Errorf("the items chart covers %v items, want 30 × 4", got["charted"])
	}
	b.shot("runs-live-embeddings")
	b.checkClean()
}
