package loadgen

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/workload"
)

// classSource sends prompts naming the class and request.
func classSource(class string) Source {
	return func(i int64) Request {
		return Request{Prompt: class + "-" + string(rune('a'+i%26)), PromptTokens: 7, MaxTokens: 2, Class: "ignored"}
	}
}

// maxOverlap is the most of recs in flight at once (Sent to StreamEnd).
func maxOverlap(recs []record.Request) int {
	type ev struct {
		at    time.Duration
		delta int
	}
	var evs []ev
	for _, r := range recs {
		evs = append(evs, ev{r.Sent, 1}, ev{max(r.StreamEnd, r.Sent), -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	n, most := 0, 0
	for _, e := range evs {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// TestUserClassesOwnPools: each user class runs its own pool beside the
// main one: its records carry its name, never more of them in flight than
// its users, and all pools share the request numbers and the count.
func TestUserClassesOwnPools(t *testing.T) {
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 2, stall: 15 * time.Millisecond} })
	res := run(t, Config{BaseURL: ts.URL, Model: "m", API: "completions", Concurrency: 1, Requests: 90,
		UserClasses: []UserClass{{Name: "batch", Concurrency: 4, Source: classSource("batch")}, {Name: "chat", Concurrency: 2, Source: classSource("chat")}}},
		promptSource(2))
	byClass := map[string][]record.Request{}
	for i, r := range res.Records {
		if r.ID != int64(i) || !r.OK() {
			t.Fatalf("record %d: %+v; want IDs 0..89, all answered", i, r)
		}
		byClass[r.Class] = append(byClass[r.Class], r)
	}
	if len(res.Records) != 90 || res.PeakInFlight > 7 {
		t.Fatalf("%d records, peak %d in flight: want 90, at most the 7 users", len(res.Records), res.PeakInFlight)
	}
	for _, c := range []struct {
		name  string
		users int
	}{{"", 1}, {"batch", 4}, {"chat", 2}} {
		recs := byClass[c.name]
		if len(recs) == 0 {
			t.Fatalf("class %q sent nothing: %d records by class %v", c.name, len(res.Records), len(byClass))
		}
		if got := maxOverlap(recs); got > c.users {
			t.Errorf("class %q: %d requests in flight at once, more than its %d users", c.name, got, c.users)
		}
		for _, r := range recs {
			if c.name != "" && r.Class != c.name {
				t.Fatalf("a %s user's record has class %q", c.name, r.Class)
			}
		}
	}
	// More users send more: the 4-user pool sends about twice the 2-user one's.
	if b, ch := len(byClass["batch"]), len(byClass["chat"]); b <= ch {
		t.Errorf("batch (4 users) sent %d, chat (2 users) %d: want more from the larger pool", b, ch)
	}
	for i, b := range ts.bodies {
		if strings.Contains(b, "ignored") {
			t.Fatalf("request %d's body %s", i, b)
		}
	}
}

// TestUserClassesClosedLoopOnly: user classes refuse a rate or sessions,
// and run with no main pool.
func TestUserClassesClosedLoopOnly(t *testing.T) {
	uc := []UserClass{{Name: "a", Concurrency: 2, Source: classSource("a")}}
	for _, cfg := range []Config{
		{RateRPS: 5, UserClasses: uc},
		{Concurrency: 1, UserClasses: []UserClass{{Name: "a", Concurrency: 0, Source: classSource("a")}}},
	} {
		cfg.BaseURL, cfg.Model = "http://127.0.0.1:1", "m"
		if _, err := Start(t.Context(), cfg, promptSource(2)); err == nil || !strings.Contains(err.Error(), "user class") {
			t.Errorf("%+v: %v; want a user-class refusal", cfg, err)
		}
	}
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 1} })
	res := run(t, Config{BaseURL: ts.URL, Model: "m", API: "completions", Requests: 10, UserClasses: uc}, promptSource(2))
	if len(res.Records) != 10 || res.Records[0].Class != "a" || res.OfferedRateRPS != 0 {
		t.Errorf("classes alone: %d records, first of class %q", len(res.Records), res.Records[0].Class)
	}
}

// TestShardUserClasses: a shard takes every Count-th user of the whole
// run, users numbered across pools (the main one's first), and its class
// requests carry the whole run's numbers.
func TestShardUserClasses(t *testing.T) {
	users := []int{2, 3, 2} // main, a, b: users 0-1, 2-4, 5-6
	for count := 1; count <= 8; count++ {
		sum := make([]int, 3)
		for i := range count {
			cfg := Config{Concurrency: users[0], UserClasses: []UserClass{
				{Name: "a", Concurrency: users[1], Source: classSource("a")}, {Name: "b", Concurrency: users[2], Source: classSource("b")}}}
			got, _, err := Shard{Index: i, Count: count}.Apply(cfg, promptSource(1))
			if i >= 7 {
				if err == nil || !strings.Contains(err.Error(), "no user") {
					t.Errorf("shard %d of %d: %v; want no user", i, count, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int, 3)
			for u := range 7 {
				k, end := 0, users[0]
				for u >= end {
					k++
					end += users[k]
				}
				if u%count == i {
					want[k]++
				}
			}
			have := []int{got.Concurrency, 0, 0}
			for _, uc := range got.UserClasses {
				have[map[string]int{"a": 1, "b": 2}[uc.Name]] = uc.Concurrency
				if uc.Concurrency == 0 {
					t.Errorf("shard %d of %d keeps class %s with no user", i, count, uc.Name)
				}
			}
			if !slices.Equal(have, want) {
				t.Errorf("shard %d of %d: users %v (main, a, b), want %v", i, count, have, want)
			}
			for k := range 3 {
				sum[k] += have[k]
			}
			for _, uc := range got.UserClasses {
				if p := uc.Source(2).Prompt; p != uc.Name+"-"+string(rune('a'+int(Shard{i, count}.Global(2))%26)) {
					t.Errorf("shard %d of %d, class %s: local request 2 is %q, not the whole run's", i, count, uc.Name, p)
				}
			}
		}
		if !slices.Equal(sum, users) {
			t.Errorf("%d shards: users add up to %v, want %v", count, sum, users)
		}
	}
}

// TestShardProbesFromTheFirstShardOnly: of N shards only the first sends
// probes, so the run sends the probe rate asked for, not N times it; its
// probes keep their own numbers.
func TestShardProbesFromTheFirstShardOnly(t *testing.T) {
	probe := func(int64) Request { return Request{Prompt: "probe", PromptTokens: 3, MaxTokens: 1} }
	var ids []int64
	for i := range 3 {
		cfg := Config{Concurrency: 3, Requests: 30, ProbeRateRPS: 5, Probe: probe,
			OnRecord: func(r *record.Request) { ids = append(ids, r.ID) }}
		got, _, err := Shard{Index: i, Count: 3}.Apply(cfg, promptSource(1))
		if err != nil {
			t.Fatal(err)
		}
		if (got.ProbeRateRPS > 0) != (i == 0) || (got.Probe != nil) != (i == 0) {
			t.Errorf("shard %d of 3: probe rate %g; want 5 on shard 0 alone", i, got.ProbeRateRPS)
		}
		got.OnRecord(&record.Request{ID: ProbeIDBase + 2, Class: record.ProbeClass})
		got.OnRecord(&record.Request{ID: 2})
	}
	for i, want := range []int64{ProbeIDBase + 2, 6, ProbeIDBase + 2, 7, ProbeIDBase + 2, 8} {
		if ids[i] != want {
			t.Fatalf("record IDs after the shards' renumbering %v: want probes kept, request 2 of shard k as 3·2+k", ids)
		}
	}
}

// TestUserClassesOwnRatesOpenLoop: a mix's merged schedule drives the open
// loop, the source asking it each arrival's class from the request
// goroutines while the dispatcher schedules more (run it with -race).
func TestUserClassesOwnRatesOpenLoop(t *testing.T) {
	m, err := workload.ParseMix("mix.yaml", []byte("seed: 2\nclasses:\n"+
		"  - name: a\n    rate: 150\n    input_tokens: \"8\"\n    output_tokens: \"2\"\n"+
		"  - name: b\n    rate: 50\n    arrival: constant\n    input_tokens: \"8\"\n    output_tokens: \"2\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	sched, err := workload.NewMixSchedule(m, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTruthServer(t, func(string) plan { return plan{tokens: 2, gap: time.Millisecond} })
	res := run(t, Config{BaseURL: ts.URL, Model: "m", API: "completions", Arrivals: sched, RateRPS: 200, Requests: 120}, func(i int64) Request {
		k := sched.ClassAt(i)
		return Request{Prompt: "p", PromptTokens: 3, MaxTokens: 2, Class: m.Classes[k].Name}
	})
	count := map[string]int{}
	for _, r := range res.Records {
		if !r.OK() {
			t.Fatalf("record %d: %s %s", r.ID, r.Error, r.ErrorMessage)
		}
		count[r.Class]++
	}
	// b is constant 50/s beside a's Poisson 150/s: a quarter of 120, give
	// or take where the run's end falls and a's variation.
	if len(res.Records) != 120 || count["b"] < 20 || count["b"] > 40 || count["a"]+count["b"] != 120 {
		t.Errorf("%d records, by class %v: want 120, about a quarter b", len(res.Records), count)
	}
}
