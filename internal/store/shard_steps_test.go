package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// sweepShards joins n shards of a sharded sweep named name and starts
// their writers, but for the shards in dead: those have none, so their
// heartbeat goes stale as a killed process's does.
func sweepShards(t *testing.T, st *Store, name string, n int, dead ...int) ([]*ShardJoin, []*RunWriter) {
	t.Helper()
	ctx := context.Background()
	joins := make([]*ShardJoin, n)
	writers := make([]*RunWriter, n)
	for i := range n {
		j, err := st.JoinShard(RunMeta{Kind: KindSweep}, ShardSpec{RunName: name, Index: i, Count: n, Fingerprint: map[string]string{"seed": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		joins[i] = j
	}
	for i, j := range joins {
		start, err := j.WaitStart(ctx, time.Second, 0, 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(dead, i) {
			continue
		}
		if writers[i], err = j.Begin(start, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	return joins, writers
}

// meetAll has every shard meet at step with its load, at once, and returns
// each one's answer.
func meetAll(joins []*ShardJoin, step int, loads []string) ([]StepStart, []error) {
	starts := make([]StepStart, len(joins))
	errs := make([]error, len(joins))
	var wg sync.WaitGroup
	for i, j := range joins {
		wg.Go(func() {
			// Polls as the CLI's, every 50 ms: faster, three pollers can keep
			// SQLite's write lock from a fourth for seconds (under -race).
			starts[i], errs[i] = j.MeetStep(context.Background(), step, loads[i], 5*time.Second, 100*time.Millisecond, 50*time.Millisecond)
		})
	}
	wg.Wait()
	return starts, errs
}

// Shards of a sweep meet at every step: one start for all, a load other
// than the step's refused naming both, every shard's records of the step
// read back together, and a shard that stops mid-step makes the step
// partial, naming it.
func TestShardedSweepSteps(t *testing.T) { eachDialect(t, testShardedSweepSteps) }

func testShardedSweepSteps(t *testing.T, db string) {
	st := openT(t, db)
	ctx := context.Background()
	joins, writers := sweepShards(t, st, "steps", 3)
	starts, errs := meetAll(joins, 0, []string{"2 req/s", "2 req/s", "2 req/s"})
	for i := range joins {
		if errs[i] != nil || starts[i].Done || starts[i].Late || !starts[i].Start.Equal(starts[0].Start) {
			t.Fatalf("shard %d at step 1: %+v %v; want shard 0's start %v (all: %v)", i, starts[i], errs[i], starts[0].Start, errs)
		}
	}
	for i, j := range joins {
		if err := j.StepBegan(0, starts[i].Start, starts[i].Start.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		writers[i].SetStep(0)
		for id := int64(i); id < 9; id += 3 {
			r := record.Request{ID: SweepRecordID(0, id), Scheduled: time.Duration(id) * time.Millisecond}
			writers[i].Add(&r)
		}
		if err := writers[i].Flush(); err != nil {
			t.Fatal(err)
		}
		if err := j.EndStep(0, PartComplete); err != nil {
			t.Fatal(err)
		}
	}
	for i, j := range joins {
		if err := j.WaitStepEnd(ctx, 0, 5*time.Millisecond); err != nil {
			t.Errorf("shard %d: step 1 end: %v", i, err)
		}
	}
	var ids []int64
	if err := st.SweepStepRecords(joins[0].RunID, 0, func(shard int, r *record.Request) error {
		if int64(shard) != r.ID%3 {
			t.Errorf("request %d of step 1 stored as shard %d's", r.ID, shard)
		}
		ids = append(ids, r.ID)
		return nil
	}); err != nil || len(ids) != 9 {
		t.Fatalf("step 1's records: %v %v; want requests 0..8 of all three shards", ids, err)
	}

	// Step 2: shard 2 judged differently and chose another load.
	_, errs = meetAll(joins, 1, []string{"4 req/s", "4 req/s", "3 req/s"})
	refused := 0
	for i, err := range errs {
		if err == nil || (!errors.Is(err, ErrShard) && strings.Contains(err.Error(), "never met there")) {
			continue // waited for the refused shard in vain
		}
		// Whichever came first fixed the step; the other load is refused.
		if !errors.Is(err, ErrShard) || !strings.Contains(err.Error(), "step 2") ||
			!strings.Contains(err.Error(), "4 req/s") || !strings.Contains(err.Error(), "3 req/s") {
			t.Errorf("shard %d: %v; want a refusal naming both loads", i, err)
		}
		refused++
	}
	if refused == 0 {
		t.Fatal("a shard met step 2 at another load and nobody was refused")
	}

	// Step 3 on a fresh sweep: shard 1 stops mid-step; the others finish
	// it and hear that it is partial, naming shard 1.
	joins, writers = sweepShards(t, st, "stopped", 3)
	starts, errs = meetAll(joins, 0, []string{"2 req/s", "2 req/s", "2 req/s"})
	for i, j := range joins {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		status := PartComplete
		if i == 1 {
			status = PartPartial
		}
		if err := j.EndStep(0, status); err != nil {
			t.Fatal(err)
		}
	}
	var stopped *StepStopped
	if err := joins[0].WaitStepEnd(ctx, 0, 5*time.Millisecond); !errors.As(err, &stopped) || len(stopped.Shards) != 1 || stopped.Shards[0] != 1 ||
		!strings.Contains(err.Error(), "shard 1 stopped during step 1 (2 req/s)") {
		t.Errorf("step end with shard 1 stopped: %v", err)
	}
	parts, err := st.StepParts(joins[0].RunID)
	if err != nil || len(parts) != 3 || parts[1].Status != PartPartial || parts[0].Load != "2 req/s" || !parts[2].Start.Equal(starts[0].Start) {
		t.Errorf("stored parts: %+v %v", parts, err)
	}
	_ = writers
}

// A sweep shard restarted while its sweep is open rejoins it: the steps
// its first attempt completed are replayed, the one it was cut short in is
// run again at once. Restarted after the other shards closed the sweep, it
// is refused at once: nothing is left to join.
func TestSweepShardRestartedAfterTheRunEnded(t *testing.T) {
	eachDialect(t, testSweepShardRestartedAfterTheRunEnded)
}

func testSweepShardRestartedAfterTheRunEnded(t *testing.T, db string) {
	st := openT(t, db)
	ctx := context.Background()
	clock := time.Now()
	var mu sync.Mutex
	st.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	joins, _ := sweepShards(t, st, "restart", 2, 1)
	load := []string{"1 req/s", "1 req/s"}
	if _, errs := meetAll(joins, 0, load); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	for _, j := range joins {
		if err := j.EndStep(0, PartComplete); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs := meetAll(joins, 1, load); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	// Shard 1's process dies in step 2 (its heartbeat goes stale).
	mu.Lock()
	clock = clock.Add(time.Minute)
	mu.Unlock()
	re, err := st.JoinShard(RunMeta{Kind: KindSweep}, ShardSpec{RunName: "restart", Index: 1, Count: 2, Fingerprint: map[string]string{"seed": "1"}})
	if err != nil || re.Attempt != 2 {
		t.Fatalf("restart while the sweep is open: %+v %v", re, err)
	}
	if s, err := re.MeetStep(ctx, 0, "1 req/s", time.Second, 0, 5*time.Millisecond); err != nil || !s.Done {
		t.Errorf("the restart at step 1: %+v %v; want it replayed (done)", s, err)
	}
	if s, err := re.MeetStep(ctx, 1, "1 req/s", time.Second, 0, 5*time.Millisecond); err != nil || !s.Late || s.Done {
		t.Errorf("the restart at step 2: %+v %v; want it run again at once (late)", s, err)
	}

	// A second run: shard 1 dies in step 2 and shard 0 ends the sweep.
	joins, writers := sweepShards(t, st, "closed", 2)
	if _, errs := meetAll(joins, 0, load); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if err := joins[0].EndStep(0, PartComplete); err != nil {
		t.Fatal(err)
	}
	if err := joins[1].EndStep(0, PartPartial); err != nil {
		t.Fatal(err)
	}
	if _, _, err := writers[1].FinishShard(StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	var stopped *StepStopped
	if err := joins[0].WaitStepEnd(ctx, 0, 5*time.Millisecond); !errors.As(err, &stopped) {
		t.Fatalf("shard 0 at the end of step 1: %v; want shard 1 named", err)
	}
	if _, ended, err := writers[0].FinishShard(StatusInterrupted); err != nil || !ended {
		t.Fatalf("shard 0 ends the sweep: ended %t, %v", ended, err)
	}
	_, err = st.JoinShard(RunMeta{Kind: KindSweep}, ShardSpec{RunName: "closed", Index: 1, Count: 2, Fingerprint: map[string]string{"seed": "1"}})
	if !errors.Is(err, ErrShard) || !strings.Contains(err.Error(), "nothing is left to join") || !strings.Contains(err.Error(), "ended interrupted") {
		t.Errorf("restart after the sweep ended: %v; want a refusal, nothing left to join", err)
	}
}

// A sweep shard whose process is gone does not hold its run open: the last
// live shard to finish ends the run, and the gone one reads interrupted.
func TestGoneSweepShardDoesNotHoldTheRun(t *testing.T) {
	eachDialect(t, testGoneSweepShardDoesNotHoldTheRun)
}

func testGoneSweepShardDoesNotHoldTheRun(t *testing.T, db string) {
	st := openT(t, db)
	clock := time.Now()
	var mu sync.Mutex
	st.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	joins, writers := sweepShards(t, st, "gone", 2, 1)
	if err := joins[1].SetStarted(clock); err != nil { // it began, then its process went
		t.Fatal(err)
	}
	// Shard 1 stops writing (its process is gone): its heartbeat goes stale
	// while shard 0's own finish refreshes shard 0's.
	mu.Lock()
	clock = clock.Add(time.Minute)
	mu.Unlock()
	complete, ended, err := writers[0].FinishShard(StatusComplete)
	if err != nil || !ended || complete != 1 {
		t.Fatalf("the live shard's finish: %d complete, ended %t, %v; want the run ended", complete, ended, err)
	}
	shards, _, err := st.RunShards(writers[0].ID())
	if err != nil || shards[1].Status != StatusInterrupted {
		t.Errorf("the gone shard: %+v %v", shards, err)
	}
	if ri, _ := st.Run(writers[0].ID()); ri.Status != StatusInterrupted {
		t.Errorf("run: %s, want interrupted", ri.Status)
	}
}
