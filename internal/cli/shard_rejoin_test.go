package cli

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
)

// Two knee sweep processes as one sharded sweep against one `knee serve`:
// shard 1 is SIGKILLed early in the first step and restarted at once, as
// Kubernetes restarts a failed index. It rejoins the open step (attempt 2),
// the sweep goes on to its second step with both shards, both exit 0, and
// the run is complete with every request of every step stored once.
func TestShardedSweepRestartRejoins(t *testing.T) {
	parallelUntimed(t)
	dir := t.TempDir()
	bin := buildKnee(t) // skips under -short
	base, model := startServeProcess(t, bin)
	db := shardTestDB(t, dir)
	const requests = 60 // per step: the first lasts 6 s at 10 req/s, time for a restart to rejoin it
	args := []string{"sweep", "--url", base, "--model", model, "--rate", "10,20", "--requests", strconv.Itoa(requests),
		"--input-tokens", "32", "--output-tokens", "8", "--seed", "11", "--shards", "2", "--run-name", "rejoin-sweep",
		"--db", db, "--quiet", "--json", "--request-timeout", "30s", "--shard-timeout", "30s"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shard := func(i int) (*exec.Cmd, *bytes.Buffer) { return shardProcess(ctx, bin, args, i) }
	var cmds [3]*exec.Cmd
	var outs [3]*bytes.Buffer
	for i := range 2 {
		cmds[i], outs[i] = shard(i)
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, c := range cmds {
			if c != nil && c.Process != nil {
				c.Process.Kill()
			}
		}
	}()
	// Kill shard 1 once it has stored 3 of its 30 records of the first step.
	var runID int64
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("shard 1 stored no records in 60 s; its output:\n%s", outs[1])
		}
		if id, n := shardStored(db, 1); id != 0 && n >= 3 {
			runID = id
			break
		}
	}
	if err := cmds[1].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmds[1].Wait()
	killed := time.Now()
	cmds[2], outs[2] = shard(1)
	if err := cmds[2].Start(); err != nil {
		t.Fatal(err)
	}
	for i, c := range []*exec.Cmd{cmds[0], cmds[2]} {
		if err := c.Wait(); err != nil {
			t.Errorf("shard %d: %v; want exit 0:\n%s", i, err, outs[2*i])
		}
	}
	t.Logf("the run ended %.1f s after the kill", time.Since(killed).Seconds())
	if !strings.Contains(outs[2].String(), "attempt 2") {
		t.Errorf("the restarted shard does not say it is attempt 2:\n%s", outs[2])
	}

	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ri, err := st.Run(runID)
	if err != nil || ri.Status != store.StatusComplete {
		t.Fatalf("run %d: %+v %v; want complete", runID, ri, err)
	}
	shards, _, err := st.RunShards(runID)
	if err != nil || len(shards) != 2 || shards[0].Status != store.StatusComplete || shards[1].Status != store.StatusComplete || shards[1].Attempt != 2 {
		t.Fatalf("shards %+v %v; want both complete, shard 1 on attempt 2", shards, err)
	}
	res, err := st.SweepResult(runID)
	if err != nil || res == nil || len(res.Steps) != 2 {
		t.Fatalf("stored sweep %+v %v; want both steps", res, err)
	}
	for k := range 2 {
		seen := map[int64]int{}
		if err := st.SweepStepRecords(runID, k, func(s int, r *record.Request) error {
			if want := int(r.ID % 2); s != want {
				return fmt.Errorf("request %d stored by shard %d, want %d", r.ID, s, want)
			}
			seen[r.ID]++
			return nil
		}); err != nil {
			t.Fatalf("step %d: %v", k+1, err)
		}
		for id := range int64(requests) {
			if seen[id] != 1 {
				t.Errorf("step %d: request %d stored %d times, want once", k+1, id, seen[id])
			}
		}
		if len(seen) != requests || res.Steps[k].Summary.Requests != requests {
			t.Errorf("step %d: %d requests stored, summary of %d; want %d", k+1, len(seen), res.Steps[k].Summary.Requests, requests)
		}
	}
}
