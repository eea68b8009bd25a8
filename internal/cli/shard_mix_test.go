package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/knee-dev/knee/internal/simserver/simservertest"
)

// Two shards of one sweep with a traffic mix and probes: each merged step
// has the mix's classes, over both shards' records, adding up to the step,
// and the probes' TTFT p95 (shard 0 sends them), as one process's step has.
func TestShardedSweepMixAndProbes(t *testing.T) {
	parallelUntimed(t)
	url, srv := simservertest.Start(t, nil)
	model := srv.Model()
	dir := t.TempDir()
	mix := filepath.Join(dir, "mix.yaml")
	if err := os.WriteFile(mix, []byte("seed: 3\nclasses:\n  - name: chat\n    share: 0.5\n    input_tokens: \"32\"\n    output_tokens: \"4\"\n"+
		"  - name: short\n    share: 0.5\n    input_tokens: \"16\"\n    output_tokens: \"2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "knee.db")
	args := []string{"sweep", "--url", url, "--model", model, "--mix", mix, "--rate", "20,40", "--requests", "24",
		"--probe-rate", "10", "--seed", "5", "--quiet", "--json", "--db", db, "--request-timeout", "30s",
		"--shards", "2", "--run-name", "mix-probes"}
	codes, errs := runSweepShards(t, 2, slices.Clip(args))
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, c, errs[i])
		}
	}
	st, runs := lastRuns(t, db, 1)
	res, err := st.SweepResult(runs[0].ID)
	if err != nil || res == nil || len(res.Steps) != 2 {
		t.Fatalf("stored sweep %+v %v; want 2 steps", res, err)
	}
	for _, s := range res.Steps {
		if s.Summary.Requests != 24 {
			t.Errorf("step %s: %d requests, want 24 (probes left out)", s.Load, s.Summary.Requests)
		}
		if s.ProbeTTFTP95 == nil || *s.ProbeTTFTP95 <= 0 {
			t.Errorf("step %s: no probe TTFT p95", s.Load)
		}
		sum := 0
		for _, c := range s.Classes {
			sum += c.Summary.Requests
		}
		if len(s.Classes) != 2 || s.Classes[0].Name != "chat" || s.Classes[1].Name != "short" || sum != 24 {
			t.Errorf("step %s: classes %+v; want chat and short adding up to 24", s.Load, s.Classes)
		}
	}
}
