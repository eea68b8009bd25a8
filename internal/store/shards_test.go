package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

func TestShards(t *testing.T) { eachDialect(t, testShards) }

// Four shards of one run: a missing shard is named at the timeout; a
// second process for one index and a shard with another seed or count are
// refused; all four get one start; a shard that dies leaves its records
// and the run partial; its restart completes the run without a duplicate.
func testShards(t *testing.T, db string) {
	st := openT(t, db)
	clock := time.Now()
	st.now = func() time.Time { return clock }
	ctx := context.Background()
	fp := map[string]string{"seed": "7", "load": "rate 50"}
	spec := func(i int) ShardSpec { return ShardSpec{RunName: "nightly", Index: i, Count: 4, Fingerprint: fp} }
	meta := RunMeta{Kind: KindBench, Model: "m"}
	joins := make([]*ShardJoin, 4)
	for i := range 3 {
		j, err := st.JoinShard(meta, spec(i))
		if err != nil {
			t.Fatal(err)
		}
		joins[i] = j
	}
	if _, err := joins[0].WaitStart(ctx, 50*time.Millisecond, time.Second, 10*time.Millisecond); !errors.Is(err, ErrShard) ||
		!strings.Contains(err.Error(), "shard(s) 3 of 4 never registered") {
		t.Fatalf("missing shard: %v", err)
	}
	if _, err := st.JoinShard(meta, spec(1)); !errors.Is(err, ErrShard) || !strings.Contains(err.Error(), "two shards with one index") {
		t.Errorf("second process for index 1: %v", err)
	}
	other := spec(3)
	other.Fingerprint = map[string]string{"seed": "8", "load": "rate 50"}
	if _, err := st.JoinShard(meta, other); !errors.Is(err, ErrShard) || !strings.Contains(err.Error(), `seed is "8" here, "7" in the run`) {
		t.Errorf("other seed: %v", err)
	}
	three := spec(2)
	three.Count = 3
	if _, err := st.JoinShard(meta, three); !errors.Is(err, ErrShard) || !strings.Contains(err.Error(), "has 4 shards") {
		t.Errorf("other count: %v", err)
	}
	var err error
	if joins[3], err = st.JoinShard(meta, spec(3)); err != nil {
		t.Fatal(err)
	}
	var start time.Time
	for i, j := range joins {
		s, err := j.WaitStart(ctx, time.Second, 2*time.Second, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && !s.Equal(start) {
			t.Errorf("shard %d starts at %v, shard 0 at %v", i, s, start)
		}
		start = s
	}
	writers := make([]*RunWriter, 4)
	for i, j := range joins {
		if writers[i], err = j.Begin(start, time.Duration(i)*time.Millisecond, 100*time.Microsecond); err != nil {
			t.Fatal(err)
		}
	}
	// 40 requests; shard i measured those with ID % 4 == i. Shard 3 dies
	// after storing 5 of its 10.
	for id := range int64(40) {
		r := record.Request{ID: id, Scheduled: time.Duration(id) * time.Millisecond}
		if id%4 == 3 && id >= 20 {
			continue
		}
		writers[id%4].Add(&r)
	}
	if err := writers[3].Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		complete, ended, err := writers[i].FinishShard(StatusComplete)
		if err != nil || ended || complete != i+1 {
			t.Fatalf("shard %d finish: %d complete, ended %t, %v", i, complete, ended, err)
		}
	}
	clock = clock.Add(10 * time.Second) // shard 3's heartbeat goes stale
	shards, count, err := st.RunShards(joins[0].RunID)
	if err != nil || count != 4 || len(shards) != 4 {
		t.Fatalf("RunShards: %d of %d, %v", len(shards), count, err)
	}
	if shards[3].Status != StatusInterrupted || shards[3].Records != 5 || shards[0].Status != StatusComplete || shards[0].Records != 10 ||
		shards[2].ClockOffset != 2*time.Millisecond || shards[2].ClockUncertainty != 100*time.Microsecond {
		t.Errorf("shards: %+v", shards)
	}
	if ri, _ := st.Run(joins[0].RunID); ri.Status != StatusInterrupted || ri.Records != 35 {
		t.Errorf("run with a dead shard: %s, %d records; want interrupted, 35", ri.Status, ri.Records)
	}
	// The restarted index measures all its requests again.
	re, err := st.JoinShard(meta, spec(3))
	if err != nil || re.Attempt != 2 {
		t.Fatalf("restart: %+v %v", re, err)
	}
	s, err := re.WaitStart(ctx, time.Second, time.Second, 10*time.Millisecond)
	if err != nil || !s.Equal(start) {
		t.Errorf("restarted shard's start %v (%v), want the run's %v", s, err, start)
	}
	w, err := re.Begin(clock, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(3); id < 40; id += 4 {
		r := record.Request{ID: id, Scheduled: time.Hour} // a second measurement: the first is kept
		w.Add(&r)
	}
	complete, ended, err := w.FinishShard(StatusComplete)
	if err != nil || !ended || complete != 4 {
		t.Fatalf("restarted shard's finish: %d complete, ended %t, %v", complete, ended, err)
	}
	ri, _ := st.Run(joins[0].RunID)
	if ri.Status != StatusComplete || ri.Records != 40 {
		t.Errorf("run after the restart: %s, %d records; want complete, 40", ri.Status, ri.Records)
	}
	seen := map[int64]int{}
	st.ShardRecords(ri.ID, func(shard int, r *record.Request) error {
		seen[r.ID]++
		if int64(shard) != r.ID%4 || (r.ID < 20 && r.Scheduled == time.Hour) {
			t.Errorf("record %d: shard %d, scheduled %v", r.ID, shard, r.Scheduled)
		}
		return nil
	})
	for id, n := range seen {
		if n != 1 {
			t.Errorf("record %d stored %d times", id, n)
		}
	}
}

// A shard whose database stops taking records mid-run keeps them in memory,
// says so once, stores them when the database is back, and when it is still
// down at the end says how many were not stored and does not read complete.
// (SQLite's max_page_count gives the error a full disk or a dead database
// gives: every write fails.)
func TestShardWriterThroughOutage(t *testing.T) {
	st := openT(t, tempDB(t))
	ctx := context.Background()
	join, err := st.JoinShard(RunMeta{Kind: KindBench}, ShardSpec{RunName: "outage", Index: 1, Count: 2, Fingerprint: map[string]string{"seed": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.JoinShard(RunMeta{Kind: KindBench}, ShardSpec{RunName: "outage", Index: 0, Count: 2, Fingerprint: map[string]string{"seed": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	start, err := join.WaitStart(ctx, time.Second, 0, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	w, err := join.Begin(start, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.SpillDir(t.TempDir()) // the unstored records are kept there
	var said []string
	w.OnTrouble(func(msg string) { said = append(said, msg) })
	add := func(from, to int64) {
		for i := from; i < to; i++ {
			if i%2 == 1 { // shard 1's requests
				r := rec(i, 20_000_000)
				w.Add(&r)
			}
		}
	}
	add(0, 20)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fillUp(t, st) // down
	add(20, 6000)
	if w.Flush() == nil || w.Flush() == nil {
		t.Fatal("flush into a full database succeeded")
	}
	if len(said) != 1 || !strings.Contains(said[0], "not taking records") || !strings.Contains(said[0], "records kept in memory") {
		t.Fatalf("said %q; want one message that the database stopped taking records, with how many are kept", said)
	}
	if _, err := st.db.Exec(`PRAGMA max_page_count = 1073741823`); err != nil { // back
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("flush after the outage: %v", err)
	}
	if len(said) != 2 || !strings.Contains(said[1], "2990 buffered records stored") {
		t.Fatalf("said %q; want a second message that the buffered records were stored", said)
	}
	fillUp(t, st) // down again, to the end
	add(6000, 12000)
	_, ended, err := w.FinishShard(StatusComplete)
	var ue *UnstoredError
	if !errors.As(err, &ue) || ue.Unstored != 3000 || ue.Added != 6000 || ue.KeptRecords != 3000 || !strings.Contains(err.Error(), ue.Kept) {
		t.Fatalf("FinishShard on a dead database: %v (%+v), want an UnstoredError of 3000 of 6000, all kept in a file it names", err, ue)
	}
	if ended {
		t.Error("the run ended though shard 0 is still running")
	}
	if _, err := st.db.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	shards, _, err := st.RunShards(join.RunID)
	if err != nil {
		t.Fatal(err)
	}
	// The final status could not be written either: the shard reads as
	// not complete (running, then interrupted when its heartbeat is stale).
	if shards[1].Status == StatusComplete || shards[1].Records != 3000 {
		t.Errorf("shard 1 after the outage: %s with %d records; want not complete, with the 3000 stored before", shards[1].Status, shards[1].Records)
	}
	_ = other
}
