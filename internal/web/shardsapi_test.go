package web

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
)

// The run page's shard view: a run of three shards, one complete, one still
// running and one registered that never started, lists each shard's
// records, errors, lag and clock beside the merged figures, and names the
// shards that are not complete; a run that is not sharded has none.
func TestRunShardsAPI(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "knee.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServerWith(t, s)

	fp := map[string]string{"seed": "1"}
	start := time.Now()
	var writers [2]*store.RunWriter
	var runID int64
	for i := range 3 {
		j, err := st.JoinShard(store.RunMeta{Kind: store.KindBench}, store.ShardSpec{RunName: "view", Index: i, Count: 3, Fingerprint: fp})
		if err != nil {
			t.Fatal(err)
		}
		runID = j.RunID
		if i < 2 {
			if writers[i], err = j.Begin(start.Add(time.Duration(i)*3*time.Millisecond), time.Duration(i+1)*time.Millisecond, time.Duration(i+1)*100*time.Microsecond); err != nil {
				t.Fatal(err)
			}
			// The processes began 7 ms apart, their schedules' zeros 3 ms.
			if err := j.SetBegan(start.Add(time.Millisecond + time.Duration(i)*7*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Shard 0: requests 0, 3, 6, … (6 of them, one failed, lag 2 ms);
	// shard 1: requests 1, 4, 7, 10 (lag 8 ms).
	for n := range 6 {
		id := int64(3 * n)
		r := record.Request{ID: id, Scheduled: time.Duration(id) * 100 * time.Millisecond, OutputTokens: 4, InputTokens: 10}
		r.Sent = r.Scheduled + 2*time.Millisecond
		r.FirstToken, r.Done, r.StreamEnd = r.Sent+20*time.Millisecond, r.Sent+50*time.Millisecond, r.Sent+51*time.Millisecond
		if n == 5 {
			r.Error, r.HTTPStatus = record.ErrHTTP5xx, 500
		}
		writers[0].Add(&r)
	}
	for n := range 4 {
		id := int64(3*n + 1)
		r := record.Request{ID: id, Scheduled: time.Duration(id) * 100 * time.Millisecond, OutputTokens: 4, InputTokens: 10}
		r.Sent = r.Scheduled + 8*time.Millisecond
		r.FirstToken, r.Done, r.StreamEnd = r.Sent+20*time.Millisecond, r.Sent+50*time.Millisecond, r.Sent+51*time.Millisecond
		writers[1].Add(&r)
	}
	if _, _, err := writers[0].FinishShard(store.StatusComplete); err != nil {
		t.Fatal(err)
	}
	if err := writers[1].Flush(); err != nil {
		t.Fatal(err)
	}

	get := func(id int64) (int, shardsView) {
		res, err := http.Get(ts.URL + "/api/runs/" + strconv.FormatInt(id, 10) + "/shards")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var v shardsView
		if res.StatusCode == http.StatusOK {
			if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		return res.StatusCode, v
	}
	code, v := get(runID)
	if code != http.StatusOK {
		t.Fatalf("GET shards: %d", code)
	}
	if v.Count != 3 || v.Complete != 1 || len(v.Missing) != 2 || v.Missing[0] != 1 || v.Missing[1] != 2 {
		t.Errorf("count %d, complete %d, missing %v; want 3, 1, [1 2]", v.Count, v.Complete, v.Missing)
	}
	if v.Merged.Records != 10 || v.Merged.Errors != 1 {
		t.Errorf("merged %+v; want 10 records, 1 error", v.Merged)
	}
	if len(v.Shards) != 3 {
		t.Fatalf("%d shard rows, want 3", len(v.Shards))
	}
	s0, s1, s2 := v.Shards[0], v.Shards[1], v.Shards[2]
	if s0.Status != store.StatusComplete || s0.Records != 6 || s0.Errors != 1 || s0.LagP95MS != 2 || s0.ThroughputRPS <= 0 {
		t.Errorf("shard 0: %+v; want complete, 6 records, 1 error, lag p95 2 ms, a throughput", s0)
	}
	if s1.Status != store.StatusRunning || s1.Records != 4 || s1.Errors != 0 || s1.LagP95MS != 8 || s1.ClockOffsetMS != 2 || s1.ClockUncertaintyMS != 0.2 {
		t.Errorf("shard 1: %+v; want running, 4 records, no error, lag p95 8 ms, clock +2 ms ± 0.2 ms", s1)
	}
	if s2.Status != store.ShardRegistered || s2.Records != 0 {
		t.Errorf("shard 2: %+v; want registered with no records", s2)
	}
	began := -1.0 // not known
	if v.StartSpreadMS != nil {
		began = *v.StartSpreadMS
	}
	if v.LargestUncertaintyMS != 0.2 || began != 7 || v.ScheduleSpreadMS != 3 {
		t.Errorf("largest uncertainty %v ms, start spread %v ms, schedule spread %v ms; want 0.2, 7 (the processes' begin) and 3",
			v.LargestUncertaintyMS, began, v.ScheduleSpreadMS)
	}

	// Once the shards' processes are gone (every heartbeat stale), shard 1
	// began and reads interrupted, shard 2 never began and says so.
	st.StaleAfter = time.Nanosecond
	if _, v := get(runID); len(v.Shards) != 3 || v.Shards[1].Status != store.StatusInterrupted || v.Shards[2].Status != "registered, never started" {
		t.Errorf("after the processes went: %+v; want shard 1 interrupted, shard 2 registered, never started", v.Shards)
	}
	st.StaleAfter = time.Hour

	plain, err := st.BeginRun(store.RunMeta{Kind: store.KindBench})
	if err != nil {
		t.Fatal(err)
	}
	if code, v := get(plain.ID()); code != http.StatusOK || v.Count != 0 || len(v.Shards) != 0 {
		t.Errorf("a run that is not sharded: %d %+v", code, v)
	}
	if code, _ := get(999); code != http.StatusNotFound {
		t.Errorf("a run that does not exist: %d, want 404", code)
	}
}
