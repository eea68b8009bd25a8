package sim

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// poolWorkload gives each request its pool's class and lengths, as a mix's
// generator does: the pool is learnt as the request is issued (Config.Pool).
type poolWorkload struct {
	pool    map[int64]int
	lengths [][2]int
}

func (w *poolWorkload) Lengths(i int64) (int, int) {
	l := w.lengths[w.pool[i]]
	return l[0], l[1]
}

func (w *poolWorkload) config(cfg *Config) {
	cfg.Gen = w
	cfg.Pool = func(id int64, pool int) { w.pool[id] = pool }
	cfg.Class = func(id int64) (string, int32) { return fmt.Sprint("pool", w.pool[id]), 0 }
}

// runPools runs 2 shared users beside pools of 3 and 5 users, each pool of
// its own lengths, on a seeded engine in virtual time.
func runPools(t *testing.T) ([]record.Request, Result, *poolWorkload) {
	t.Helper()
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ecfg.Seed = 7
	w := &poolWorkload{pool: map[int64]int{}, lengths: [][2]int{{512, 64}, {2048, 16}, {128, 256}}}
	cfg := Config{Engine: ecfg, Concurrency: 2, Pools: []int{3, 5}, Requests: 600, Ramp: 200 * time.Millisecond}
	w.config(&cfg)
	recs, res, err := Collect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return recs, res, w
}

// peakInFlight is the most requests of class in flight at once, as the
// client sees them: sent and not yet done (a request ending at an instant
// is out before one sent at that instant).
func peakInFlight(recs []record.Request, class string) int {
	type edge struct {
		at time.Duration
		d  int
	}
	var edges []edge
	for _, r := range recs {
		if r.Class == class {
			edges = append(edges, edge{r.Sent, 1}, edge{r.Done, -1})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].d < edges[j].d
	})
	n, peak := 0, 0
	for _, e := range edges {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// A closed loop of several user pools keeps each pool's requests in flight
// within its users (and fills them: the pools are real), gives every
// request its pool's class and lengths, and the classes' requests add up to
// the run's.
func TestUserPoolsKeepTheirUsers(t *testing.T) {
	recs, res, w := runPools(t)
	if int64(len(recs)) != res.Issued || res.Issued != 600 || res.Completed != 600 {
		t.Fatalf("%d records, %d issued, %d completed; want 600 of each", len(recs), res.Issued, res.Completed)
	}
	count := map[string]int{}
	for _, r := range recs {
		count[r.Class]++
		p := w.pool[r.ID]
		if r.Class != fmt.Sprint("pool", p) || r.InputTokens != w.lengths[p][0] || r.OutputTokens != w.lengths[p][1] {
			t.Fatalf("request %d of pool %d: class %q, %d in, %d out; want its pool's", r.ID, p, r.Class, r.InputTokens, r.OutputTokens)
		}
	}
	sum := 0
	for p, users := range []int{2, 3, 5} {
		class := fmt.Sprint("pool", p)
		if peak := peakInFlight(recs, class); peak != users {
			t.Errorf("%s: at most %d requests in flight at once; want its %d users, never more", class, peak, users)
		}
		sum += count[class]
	}
	if sum != len(recs) || len(count) != 3 {
		t.Errorf("classes %v add up to %d of %d records", count, sum, len(recs))
	}
}

// The same configuration reproduces the run exactly.
func TestUserPoolsReproduce(t *testing.T) {
	a, ra, _ := runPools(t)
	b, rb, _ := runPools(t)
	if !reflect.DeepEqual(a, b) || ra.End != rb.End || ra.Steps != rb.Steps {
		t.Fatalf("two runs of one configuration differ: %d vs %d records, end %v vs %v", len(a), len(b), ra.End, rb.End)
	}
}

// Users are numbered across pools, the shared pool's first, so a ramp
// starts them in that order: the first requests are the shared pool's.
func TestUserPoolsRampInOrder(t *testing.T) {
	recs, _, _ := runPools(t)
	byID := slices.Clone(recs)
	slices.SortFunc(byID, func(a, b record.Request) int { return int(a.ID - b.ID) })
	var first []string
	for _, r := range byID[:10] {
		first = append(first, r.Class)
	}
	want := []string{"pool0", "pool0", "pool1", "pool1", "pool1", "pool2", "pool2", "pool2", "pool2", "pool2"}
	if !slices.Equal(first, want) {
		t.Errorf("first ten requests' classes %v; want %v (users numbered across pools)", first, want)
	}
}

func TestUserPoolsRefused(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	for name, cfg := range map[string]Config{
		"empty pool":     {Engine: ecfg, Gen: fixed{10, 10}, Concurrency: 1, Pools: []int{0}, Requests: 5},
		"with arrivals":  {Engine: ecfg, Gen: fixed{10, 10}, Arrivals: poisson(t, 1, 1), Pools: []int{2}, Requests: 5},
		"probes no gen":  {Engine: ecfg, Gen: fixed{10, 10}, Concurrency: 1, Probes: Probes{RateRPS: 1}, Requests: 5},
		"negative probe": {Engine: ecfg, Gen: fixed{10, 10}, Concurrency: 1, Probes: Probes{RateRPS: -1, Gen: fixed{1, 1}}, Requests: 5},
	} {
		if _, _, err := Collect(context.Background(), cfg); err == nil {
			t.Errorf("%s: ran; want an error", name)
		}
	}
	// Pools alone make a closed loop.
	if _, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: fixed{10, 10}, Pools: []int{2}, Requests: 5}); err != nil || res.Completed != 5 {
		t.Errorf("pools without shared users: %v, %d completed; want 5", err, res.Completed)
	}
}
