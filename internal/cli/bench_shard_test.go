package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/store/storetest"
)

// Four shard processes' worth of knee bench (in-process, JOB_COMPLETION_INDEX
// 0..3, one run name) against one server and one database send exactly the
// one-process run's requests, meet at one start, and the run's stored
// summary is the summary over all their records.
func TestShardedBench(t *testing.T) {
	parallelUntimed(t)
	t.Run("sqlite", func(t *testing.T) { testShardedBench(t, filepath.Join(t.TempDir(), "knee.db")) })
	t.Run("postgres", func(t *testing.T) { testShardedBench(t, storetest.PostgresURL(t)) })
}

func testShardedBench(t *testing.T, db string) {
	url, srv := simservertest.Start(t, nil)
	for _, load := range []struct {
		name string
		args []string
		open bool
	}{
		{"open", []string{"--rate", "150", "--arrival", "poisson", "--requests", "40", "--input-tokens", "32", "--output-tokens", "4"}, true},
		{"closed", []string{"--concurrency", "6", "--requests", "40", "--input-tokens", "32", "--output-tokens", "4"}, false},
		{"trace", []string{"--trace", "../workload/testdata/trace_mooncake.jsonl", "--trace-rate", "100", "--trace-max-context", "600"}, true},
	} {
		t.Run(load.name, func(t *testing.T) {
			common := append([]string{"bench", "--url", url, "--model", srv.Model(),
				"--seed", "11", "--quiet", "--json", "--db", db, "--request-timeout", "30s"}, load.args...)
			if code, _, errs := kneeCmd(t, common...); code != 0 {
				t.Fatalf("one process: exit %d: %s", code, errs)
			}
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					// A slice of its own: four appends to common would share
					// (and race on) its spare capacity.
					args := append(slices.Clip(common), "--shards", "4", "--run-name", "run-"+load.name)
					code, _, errs := kneeEnv(t, map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}, args...)
					if code != 0 {
						t.Errorf("shard %d: exit %d: %s", i, code, errs)
					}
				})
			}
			wg.Wait()
			st, runs := lastRuns(t, db, 2)
			sharded, one := runs[0], runs[1]
			if sharded.Status != store.StatusComplete || sharded.Records != one.Records || one.Records < 40 {
				t.Fatalf("sharded run: %s with %d records", sharded.Status, sharded.Records)
			}
			key := func(r *record.Request) string {
				if load.open {
					return fmt.Sprint(r.ID, " ", r.Scheduled)
				}
				return fmt.Sprint(r.ID)
			}
			var want, got []string
			st.Records(one.ID, func(r *record.Request) error { want = append(want, key(r)); return nil })
			var all []record.Request
			st.ShardRecords(sharded.ID, func(shard int, r *record.Request) error {
				if int64(shard) != r.ID%4 {
					t.Errorf("record %d stored as shard %d's", r.ID, shard)
				}
				got = append(got, key(r))
				all = append(all, *r)
				return nil
			})
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("shards' requests differ from the one-process run's:\n got %v\nwant %v", got, want)
			}
			shards, _, err := st.RunShards(sharded.ID)
			if err != nil || len(shards) != 4 {
				t.Fatalf("shards %v %v", shards, err)
			}
			var zeros, began []time.Time
			var unc time.Duration
			for _, s := range shards {
				if s.Status != store.StatusComplete || s.Started.IsZero() || s.Began.IsZero() {
					t.Errorf("shard %+v", s)
				}
				zeros, began = append(zeros, s.Started), append(began, s.Began)
				unc = max(unc, s.ClockUncertainty)
			}
			// Each shard's schedule is anchored on the common start, so its
			// zero point is computed, not measured: it cannot flake.
			if z := cluster.Spread(zeros); z > cluster.StartTolerance+unc {
				t.Errorf("the shards' schedules start %v apart; want within %v plus the clocks' uncertainty %v", z, cluster.StartTolerance, unc)
			}
			// Measured, so logged: on a machine shared by many builds a
			// process can be off its CPU for longer than 5 ms at any time.
			t.Logf("shards' processes began within %v", cluster.Spread(began))
			merged := stats.Summarize(all, stats.Options{OfferedRateRPS: sharded.Summary.OfferedRateRPS, Series: true})
			a, _ := json.Marshal(merged)
			b, _ := json.Marshal(sharded.Summary)
			if string(a) != string(b) {
				t.Errorf("stored summary is not the one over all records:\nstored %s\n   all %s", b, a)
			}
		})
	}
}

// A shard stopped mid-run keeps what it stored and leaves the run partial,
// naming it; the others complete. Running that index again completes the
// run, and no request is stored twice.
func TestShardInterruptedThenRestarted(t *testing.T) {
	parallelUntimed(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, srv := simservertest.Start(t, nil)
	db := filepath.Join(t.TempDir(), "knee.db")
	args := []string{"bench", "--url", url, "--model", srv.Model(), "--input-tokens", "32", "--output-tokens", "4", "--seed", "3",
		"--rate", "80", "--requests", "400", "--quiet", "--json", "--db", db, "--shards", "4", "--run-name", "partial"}
	shard := func(ctx context.Context, i int) (int, string) {
		var out, errb strings.Builder
		env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			if k == "JOB_COMPLETION_INDEX" {
				return strconv.Itoa(i)
			}
			return ""
		}}
		return MainEnv(ctx, env, args), errb.String()
	}
	stopped, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	endedPartial := 0
	for i := range 4 {
		wg.Go(func() {
			if i != 2 {
				// The surviving shard that ends the run exits 1 saying the
				// run is partial (as a sweep's shards do); the others 0.
				code, errs := shard(ctx, i)
				switch {
				case code == 1 && strings.Contains(errs, "the run ended partial: 3 of 4 shards complete (not: 2)"):
					mu.Lock()
					endedPartial++
					mu.Unlock()
				case code != 0:
					t.Errorf("shard %d: exit %d: %s", i, code, errs)
				}
				return
			}
			if code, _ := shard(stopped, i); code == 0 {
				t.Error("the stopped shard exited 0")
			}
		})
	}
	// Stop shard 2 once it has stored some records (the run lasts 5 s).
	go func() {
		for stopped.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			st, err := store.OpenReadOnly(db)
			if err != nil {
				continue
			}
			shards, _, _ := st.RunShards(1)
			st.Close()
			if len(shards) == 4 && shards[2].Records >= 5 {
				stop()
			}
		}
	}()
	wg.Wait()
	stop()
	// Shard 2 stops long before the others finish: one of them ends the run.
	if endedPartial != 1 {
		t.Errorf("%d surviving shards said the run ended partial; want the one that ended it", endedPartial)
	}
	code, out, errs := kneeEnv(t, nil, "report", "--db", db, "1")
	if code != 0 || !strings.Contains(out, "partial: 3 of 4 shards complete (not: 2)") {
		t.Fatalf("report of the partial run: exit %d\n%s%s", code, out, errs)
	}
	if code, errs := shard(ctx, 2); code != 0 {
		t.Fatalf("restarted shard 2: exit %d: %s", code, errs)
	}
	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ri, err := st.Run(1)
	if err != nil || ri.Status != store.StatusComplete || ri.Records != 400 {
		t.Fatalf("after the restart: %+v %v; want complete with 400 records", ri, err)
	}
	shards, _, _ := st.RunShards(1)
	if shards[2].Attempt != 2 || shards[2].Records != 100 {
		t.Errorf("restarted shard: %+v", shards[2])
	}
	ids := map[int64]bool{}
	st.Records(1, func(r *record.Request) error {
		if ids[r.ID] {
			t.Errorf("request %d stored twice", r.ID)
		}
		ids[r.ID] = true
		return nil
	})
}

// A sharded bench with probes sends one stream of them, from shard 0 (as
// one process sends them), and its merged summary leaves them out as one
// process's does.
func TestShardedBenchProbesFromShardZero(t *testing.T) {
	parallelUntimed(t)
	url, srv := simservertest.Start(t, nil)
	model := srv.Model()
	db := filepath.Join(t.TempDir(), "knee.db")
	args := []string{"bench", "--url", url, "--model", model, "--rate", "40", "--requests", "40", "--input-tokens", "32", "--output-tokens", "4",
		"--probe-rate", "5", "--seed", "2", "--quiet", "--json", "--db", db, "--shards", "2", "--run-name", "probes"}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if code, _, errs := kneeEnv(t, map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}, slices.Clip(args)...); code != 0 {
				t.Errorf("shard %d: exit %d: %s", i, code, errs)
			}
		})
	}
	wg.Wait()
	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	probes := map[int]int{}
	st.ShardRecords(1, func(shard int, r *record.Request) error {
		if r.Class == record.ProbeClass {
			probes[shard]++
		}
		return nil
	})
	if probes[0] == 0 || probes[1] != 0 {
		t.Errorf("probes by shard %v; want them all from shard 0", probes)
	}
	ri, err := st.Run(1)
	if err != nil || ri.Summary.Requests != 40 {
		t.Errorf("merged summary: %d requests (%v); want the 40 of the load, probes left out", ri.Summary.Requests, err)
	}
}

// A sharded bench that cannot split its load is refused before any shard
// registers (issue 39 items 7–8): without --url each shard would start an
// embedded server its partners can never reach and wait out
// --shard-timeout; with fewer users or requests than shards, some shards
// would run nothing and the run would end partial.
func TestShardedBenchRefusesUnsplittableLoads(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "knee.db")
	base := []string{"bench", "--seed", "1", "--run-name", "r", "--shard", "0", "--db", db, "--quiet", "--shard-timeout", "2s"}
	with := func(extra ...string) []string { return append(slices.Clip(base), extra...) }
	url := "http://127.0.0.1:9" // never dialled: every case is refused first
	cases := []struct {
		args []string
		want string
	}{
		{with("--shards", "2", "--rate", "10"), "--shards 2: want --url"},
		{with("--shards", "4", "--url", url, "--model", "m", "--concurrency", "2"), "--concurrency 2 leaves a shard without a user"},
		{with("--shards", "4", "--url", url, "--model", "m", "--rate", "10", "--requests", "3"), "--requests 3 leaves a shard without a request"},
	}
	for _, c := range cases {
		code, _, errs := kneeCmd(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args[len(base):], code, errs, c.want)
		}
	}
}
