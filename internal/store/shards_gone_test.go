package store

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// startShards registers n shards of one run, waits for their common start
// and begins those in begin; it returns every join and the begun writers.
func startShards(t *testing.T, st *Store, name string, n int, begin ...int) ([]*ShardJoin, map[int]*RunWriter) {
	t.Helper()
	meta := RunMeta{Kind: KindBench, Model: "m"}
	joins := make([]*ShardJoin, n)
	for i := range n {
		j, err := st.JoinShard(meta, ShardSpec{RunName: name, Index: i, Count: n, Fingerprint: map[string]string{"seed": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		joins[i] = j
	}
	start, err := joins[0].WaitStart(context.Background(), time.Second, 0, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	writers := map[int]*RunWriter{}
	for _, i := range begin {
		if writers[i], err = joins[i].Begin(start, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	return joins, writers
}

func TestShardRegisteredNeverStarted(t *testing.T) { eachDialect(t, testShardRegisteredNeverStarted) }

// A shard that registered and whose process went before it began its load
// reads "registered, never started", not "interrupted"; one that began and
// went reads interrupted; a registered shard whose process is alive reads
// registered.
func testShardRegisteredNeverStarted(t *testing.T, db string) {
	st := openT(t, db)
	clock := time.Now()
	st.now = func() time.Time { return clock }
	joins, w := startShards(t, st, "never", 3, 0)
	r := record.Request{ID: 0}
	w[0].Add(&r)
	if err := w[0].Flush(); err != nil {
		t.Fatal(err)
	}
	shards, _, err := st.RunShards(joins[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	if shards[0].Status != StatusRunning || shards[1].Status != ShardRegistered || shards[2].Status != ShardRegistered {
		t.Fatalf("while every process lives: %+v", shards)
	}
	clock = clock.Add(time.Minute) // every heartbeat is stale: the processes are gone
	if shards, _, err = st.RunShards(joins[0].RunID); err != nil {
		t.Fatal(err)
	}
	if shards[0].Status != StatusInterrupted || shards[1].Status != ShardNeverStarted || shards[2].Status != ShardNeverStarted {
		t.Errorf("after the processes went: %q, %q, %q; want interrupted, %q, %q", shards[0].Status, shards[1].Status, shards[2].Status,
			ShardNeverStarted, ShardNeverStarted)
	}
}

func TestShardGoneDoesNotHoldTheRun(t *testing.T) { eachDialect(t, testShardGoneDoesNotHoldTheRun) }

// A shard whose process is gone without finishing (killed: its heartbeat
// stale, or its pid dead on this host) no longer holds the run open: the
// last live shard to finish ends it, partial, so that shard stores the
// merged result.
func testShardGoneDoesNotHoldTheRun(t *testing.T, db string) {
	t.Run("stale heartbeat", func(t *testing.T) {
		st := openT(t, db)
		clock := time.Now()
		st.now = func() time.Time { return clock }
		joins, w := startShards(t, st, "stale", 3, 0, 1, 2)
		for id := range int64(9) {
			r := record.Request{ID: id}
			w[int(id%3)].Add(&r)
		}
		if err := w[2].Flush(); err != nil { // shard 2 stores its part, then is killed
			t.Fatal(err)
		}
		if complete, ended, err := w[0].FinishShard(StatusComplete); err != nil || ended || complete != 1 {
			t.Fatalf("shard 0's finish: %d complete, ended %t, %v; want 1, not ended", complete, ended, err)
		}
		clock = clock.Add(time.Minute) // shard 2's heartbeat goes stale; shard 1 flushes on
		if err := w[1].Flush(); err != nil {
			t.Fatal(err)
		}
		complete, ended, err := w[1].FinishShard(StatusComplete)
		if err != nil || !ended || complete != 2 {
			t.Fatalf("the last live shard's finish: %d complete, ended %t, %v; want 2 complete and the run ended", complete, ended, err)
		}
		ri, err := st.Run(joins[0].RunID)
		if err != nil || ri.StoredStatus != StatusInterrupted || ri.Records != 9 {
			t.Errorf("run: %+v %v; want interrupted (partial) with all 9 records", ri, err)
		}
	})
	t.Run("dead pid", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("no signal 0 to test a pid with")
		}
		st := openT(t, db)
		joins, w := startShards(t, st, "killed", 2, 0, 1)
		r := record.Request{ID: 1}
		w[1].Add(&r)
		if err := w[1].Flush(); err != nil {
			t.Fatal(err)
		}
		// Shard 1 "ran" in a process that has exited since.
		dead := exec.Command("true")
		if err := dead.Run(); err != nil {
			t.Skip("no true(1) to make a dead pid: ", err)
		}
		if _, err := st.db.Exec(`UPDATE shards SET pid = ? WHERE run_id = ? AND shard = 1`, dead.Process.Pid, joins[1].RunID); err != nil {
			t.Fatal(err)
		}
		complete, ended, err := w[0].FinishShard(StatusComplete)
		if err != nil || !ended || complete != 1 {
			t.Fatalf("the live shard's finish: %d complete, ended %t, %v; want 1 complete and the run ended", complete, ended, err)
		}
		shards, _, err := st.RunShards(joins[0].RunID)
		if err != nil || shards[1].Status != StatusInterrupted || shards[1].Records != 1 {
			t.Errorf("shard 1 after its process died: %+v %v; want interrupted with its record", shards, err)
		}
	})
}
