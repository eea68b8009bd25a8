package loadgen

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/workload"
)

func TestShardPartsAddUp(t *testing.T) {
	for count := 1; count <= 7; count++ {
		for total := int64(0); total <= 30; total++ {
			var sum int64
			for i := range count {
				sum += Shard{Index: i, Count: count}.Part(total)
			}
			if sum != total {
				t.Fatalf("%d shards of %d: parts add up to %d", count, total, sum)
			}
		}
	}
	for _, bad := range []Shard{{0, 0}, {4, 4}, {-1, 2}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

// drain takes n arrivals of s.
func drain(s Schedule, n int64) []time.Duration {
	out := make([]time.Duration, 0, n)
	for range n {
		out = append(out, s.Next())
	}
	return out
}

// The shards' arrivals, placed at their global indices, are the whole
// schedule's, exactly, for every arrival process and shard count.
func TestShardArrivalsUnionIsWhole(t *testing.T) {
	const total = 1001
	for _, kind := range []string{"constant", "poisson", "gamma"} {
		mk := func() Schedule {
			burstiness := 0.0
			if kind == "gamma" {
				burstiness = 0.5
			}
			a, err := workload.NewArrivals(kind, 37, burstiness, 42)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		whole := drain(mk(), total)
		for _, count := range []int{1, 2, 3, 4, 7} {
			got := make([]time.Duration, total)
			seen := make([]bool, total)
			for i := range count {
				sh := Shard{Index: i, Count: count}
				for local, at := range drain(sh.Arrivals(mk()), sh.Part(total)) {
					g := sh.Global(int64(local))
					if seen[g] {
						t.Fatalf("%s, %d shards: arrival %d twice", kind, count, g)
					}
					seen[g], got[g] = true, at
				}
			}
			if !slices.Equal(got, whole) || slices.Contains(seen, false) {
				t.Errorf("%s, %d shards: union differs from the one-process schedule", kind, count)
			}
		}
	}
}

// A trace replay: every 4th request of the trace, with its arrival and its
// lengths; the skipped requests' items are discarded, not kept.
func TestShardTraceReplay(t *testing.T) {
	tr, err := workload.OpenTrace("../workload/testdata/trace_mooncake.jsonl", workload.TraceOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := int64(tr.Info().Kept)
	whole, err := tr.Stream(false)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	wantAt := drain(whole, n)
	wantLen := make([][2]int, n)
	for i := range n {
		in, out := whole.Lengths(i)
		wantLen[i] = [2]int{in, out}
	}
	const count = 4
	covered := 0
	for i := range count {
		sh := Shard{Index: i, Count: count}
		st, err := tr.Stream(false)
		if err != nil {
			t.Fatal(err)
		}
		sched := sh.Arrivals(st)
		src := sh.Source(func(i int64) Request { in, out := st.Lengths(i); return Request{PromptTokens: in, MaxTokens: out} })
		for local := range sh.Part(n) {
			at := sched.Next()
			g := sh.Global(local)
			r := src(local)
			if at != wantAt[g] || [2]int{r.PromptTokens, r.MaxTokens} != wantLen[g] {
				t.Fatalf("shard %d request %d (global %d): at %v lengths %d/%d; want %v %v", i, local, g, at, r.PromptTokens, r.MaxTokens, wantAt[g], wantLen[g])
			}
			covered++
		}
		if at := sched.Next(); at != time.Duration(math.MaxInt64) {
			t.Errorf("shard %d: an arrival after its part: %v", i, at)
		}
		st.Close()
	}
	if covered != int(n) {
		t.Errorf("shards replayed %d of %d requests", covered, n)
	}
}

// runShards runs the whole load once in one process, then as count shards
// at once, against one server; it returns both runs' records.
func runShards(t *testing.T, count int, cfg Config, mkSched func() Schedule) (whole []record.Request, shards [][]record.Request) {
	t.Helper()
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 3, gap: time.Millisecond} })
	cfg.BaseURL, cfg.Model, cfg.API = ts.URL, "m", "completions"
	one := cfg
	if mkSched != nil {
		one.Arrivals = mkSched()
	}
	whole = run(t, one, promptSource(3)).Records
	shards = make([][]record.Request, count)
	var wg sync.WaitGroup
	for i := range count {
		sc := cfg
		if mkSched != nil {
			sc.Arrivals = mkSched()
		}
		sc, src, err := Shard{Index: i, Count: count}.Apply(sc, promptSource(3))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			r, err := Start(context.Background(), sc, src)
			if err != nil {
				t.Error(err)
				return
			}
			shards[i] = r.Wait().Records
		})
	}
	wg.Wait()
	return whole, shards
}

// Four in-process shards of an open-loop run send the one-process run's
// requests at its scheduled times, exactly, with its prompts.
func TestShardOpenLoopRunsEqualOneProcess(t *testing.T) {
	mk := func() Schedule {
		a, _ := workload.NewArrivals("poisson", 400, 0, 7)
		return a
	}
	whole, shards := runShards(t, 4, Config{Requests: 60, WarmupRequests: 8}, mk)
	type key struct {
		id    int64
		sched time.Duration
		warm  bool
	}
	want := map[key]bool{}
	for _, r := range whole {
		want[key{r.ID, r.Scheduled, r.Warmup}] = true
	}
	n := 0
	for i, recs := range shards {
		for _, r := range recs {
			if int(r.ID)%4 != i || !want[key{r.ID, r.Scheduled, r.Warmup}] || !r.OK() {
				t.Errorf("shard %d record %d scheduled %v warm-up %t: not the one-process run's", i, r.ID, r.Scheduled, r.Warmup)
			}
			n++
		}
	}
	if n != len(whole) || len(whole) != 60 {
		t.Errorf("shards sent %d requests, one process %d; want 60", n, len(whole))
	}
}

// Closed loop: every 4th user; together the shards send the run's request
// numbers (and so its prompts), each once.
func TestShardClosedLoopRunsEqualOneProcess(t *testing.T) {
	whole, shards := runShards(t, 4, Config{Concurrency: 6, Requests: 50}, nil)
	var ids []int64
	for i, recs := range shards {
		users := Shard{Index: i, Count: 4}.Part(6)
		for _, r := range recs {
			ids = append(ids, r.ID)
			if int64(r.InFlightAtSend) > users {
				t.Errorf("shard %d: %d in flight, more than its %d users", i, r.InFlightAtSend, users)
			}
		}
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != int64(i) || whole[i].ID != id {
			t.Fatalf("request numbers %v, want 0..%d as one process sends", ids, len(whole)-1)
		}
	}
	if len(ids) != 50 {
		t.Errorf("%d requests, want 50", len(ids))
	}
}

// Sessions: every 4th conversation, named by its number in the whole run.
func TestShardSessions(t *testing.T) {
	turns := func(session, turn int) (SessionTurn, bool) {
		return SessionTurn{Request: Request{Prompt: "s" + strconv.Itoa(session) + "t" + strconv.Itoa(turn), PromptTokens: 3, MaxTokens: 2}}, turn <= 2
	}
	_, shards := runShards(t, 4, Config{Sessions: 9, Turn: turns}, nil)
	got := map[string]int{}
	for i, recs := range shards {
		for _, r := range recs {
			s, _ := strconv.Atoi(r.Session)
			if s%4 != i {
				t.Errorf("shard %d ran session %s", i, r.Session)
			}
			got[r.Session]++
		}
	}
	if len(got) != 9 {
		t.Errorf("sessions %v, want 0..8", got)
	}
	for s, n := range got {
		if n != 2 {
			t.Errorf("session %s: %d turns, want 2", s, n)
		}
	}
}

func TestShardApplyErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Requests: 2, RateRPS: 1}, "fewer requests than shards"},
		{Config{Concurrency: 2}, "--concurrency is below"},
		{Config{Sessions: 3}, "--sessions is below"},
	} {
		_, _, err := Shard{Index: 3, Count: 4}.Apply(c.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// A run given an Origin keeps its schedule on it: a start that comes late
// shows as lag of the first sends, not as a schedule shifted later, in the
// open loop and the closed loop; an Origin still ahead is refused.
func TestOriginAnchorsTheSchedule(t *testing.T) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 2, gap: time.Millisecond} })
	const late = 40 * time.Millisecond
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"open", Config{RateRPS: 1000, Requests: 3}},
		{"closed", Config{Concurrency: 3, Requests: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.BaseURL, cfg.Model, cfg.API = ts.URL, "m", "completions"
			// A wall-clock time without a monotonic reading, as a common
			// start read from a database is.
			cfg.Origin = time.Unix(0, time.Now().Add(-late).UnixNano())
			res := run(t, cfg, promptSource(3))
			if !res.Start.Equal(cfg.Origin) {
				t.Errorf("run start %v, want the origin %v", res.Start, cfg.Origin)
			}
			if len(res.Records) != 3 {
				t.Fatalf("%d records", len(res.Records))
			}
			for _, r := range res.Records {
				// Sent at least late after the origin, when Start was called.
				if r.Scheduled > 3*time.Millisecond || r.Sent < late {
					t.Errorf("request %d scheduled %v sent %v: want it due within 3 ms of the origin and sent %v or more after it", r.ID, r.Scheduled, r.Sent, late)
				}
			}
		})
	}
	cfg := Config{BaseURL: ts.URL, Model: "m", API: "completions", RateRPS: 1, Requests: 1, Origin: time.Now().Add(time.Hour)}
	if _, err := Start(context.Background(), cfg, promptSource(3)); err == nil || !strings.Contains(err.Error(), "wait for it first") {
		t.Errorf("an origin an hour ahead: %v", err)
	}
}
