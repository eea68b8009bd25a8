package sim

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
)

// fiveTurns is a conversation of five turns, each a new message of 300
// tokens answered in 60, a second of thought between them.
func fiveTurns(s, k int) (SessionTurn, bool) {
	return SessionTurn{InputTokens: 300 + 10*(s%3), OutputTokens: 60, Think: time.Second}, k <= 5
}

func keepRecords(t *testing.T, cfg FleetConfig) ([]record.Request, FleetResult) {
	t.Helper()
	cfg.KeepTokenTimes = true
	var recs []record.Request
	res, err := RunFleet(context.Background(), cfg, func(r *record.Request) { recs = append(recs, *r) })
	if err != nil {
		t.Fatal(err)
	}
	return recs, res
}

// Sessions on a fleet: each turn is sent its think time after the previous
// answer ended and carries the whole history; session affinity keeps a
// conversation on one replica, whose prefix cache then holds its history.
func TestFleetSessionsFollowTheirPreviousTurn(t *testing.T) {
	cfg := FleetConfig{Config: Config{Engine: engineConfig(t, "h100", "llama-3.1-8b", 1), Sessions: 24, Turn: fiveTurns,
		Requests: 1000, Ramp: 5 * time.Second}, Count: 3, Router: SessionAffinity}
	recs, res := keepRecords(t, cfg)
	if len(recs) != 24*5 || res.Completed != 24*5 {
		t.Fatalf("%d records, %d completed; want 24 sessions × 5 turns", len(recs), res.Completed)
	}
	bySession := map[string][]record.Request{}
	for _, r := range recs {
		if !r.OK() || r.Session == "" {
			t.Fatalf("record %d: error %q, session %q", r.ID, r.Error, r.Session)
		}
		bySession[r.Session] = append(bySession[r.Session], r)
	}
	replicas := map[string]bool{}
	for s, turns := range bySession {
		sort.Slice(turns, func(i, j int) bool { return turns[i].Turn < turns[j].Turn })
		n, _ := strconv.Atoi(s)
		history := 0
		for k, r := range turns {
			msg, _ := fiveTurns(n, k+1)
			if r.Turn != k+1 || r.InputTokens != history+msg.InputTokens {
				t.Fatalf("session %s turn %d: %d prompt tokens, want %d of history and %d new", s, r.Turn, r.InputTokens, history, msg.InputTokens)
			}
			if k > 0 && r.Scheduled < turns[k-1].Done+msg.Think {
				t.Fatalf("session %s turn %d scheduled at %v, before turn %d ended at %v plus %v", s, r.Turn, r.Scheduled, k, turns[k-1].Done, msg.Think)
			}
			if r.Replica != turns[0].Replica {
				t.Fatalf("session %s moved from replica %s to %s", s, turns[0].Replica, r.Replica)
			}
			history = r.InputTokens + r.OutputTokens
		}
		replicas[turns[0].Replica] = true
	}
	if len(replicas) != 3 {
		t.Errorf("sessions on replicas %v, want all three used", replicas)
	}
	// Turns 2–5 repeat their history: most of the prompt tokens hit.
	if hit := res.PrefixHitRate(); hit < 0.5 {
		t.Errorf("prefix-cache hit rate %.2f; want most of the history cached", hit)
	}
}

// MaxConcurrency caps the requests in flight across the whole fleet: an
// arrival beyond it waits in the client and is sent late.
func TestFleetMaxConcurrencyCapsInFlight(t *testing.T) {
	const limit = 6
	cfg := FleetConfig{Config: Config{Engine: engineConfig(t, "h100", "llama-3.1-8b", 1), Gen: fixed{512, 64},
		Arrivals: poisson(t, 120, 4), MaxConcurrency: limit, Requests: 400}, Count: 3, Router: LeastOutstanding}
	recs, res := keepRecords(t, cfg)
	if res.PeakInFlight != limit || len(recs) != 400 || res.Completed != 400 {
		t.Fatalf("peak in flight %d (want %d), %d records, %d completed", res.PeakInFlight, limit, len(recs), res.Completed)
	}
	type ev struct {
		t     time.Duration
		delta int
	}
	var evs []ev
	late := 0
	for _, r := range recs {
		if r.Sent < r.Scheduled {
			t.Fatalf("request %d sent at %v, before its schedule %v", r.ID, r.Sent, r.Scheduled)
		}
		if r.Lag() > 0 {
			late++
		}
		evs = append(evs, ev{r.Sent, 1}, ev{r.Done, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return a.delta - b.delta // ends before sends at the same instant
	})
	n := 0
	for _, e := range evs {
		if n += e.delta; n > limit {
			t.Fatalf("%d in flight at %v, over the cap of %d", n, e.t, limit)
		}
	}
	if late < 100 {
		t.Errorf("%d of 400 requests late; at 120 req/s with %d slots most must wait in the client", late, limit)
	}
	for _, r := range res.Replicas {
		if r.Routed == 0 {
			t.Errorf("replica %s got nothing", r.Name)
		}
	}
}

// The client model is one thread for the whole fleet: two streams on two
// replicas, decoding in lockstep, are handled one chunk at a time, so each
// sees a token every two chunk costs and the second stream's first token
// waits one more cost. (A thread per replica would give one cost each.)
func TestFleetClientChunkCostIsOneThread(t *testing.T) {
	const cost = 10 * time.Millisecond
	base := FleetConfig{Config: Config{Engine: noFrontEnd(t), Gen: fixed{45, 20}, Concurrency: 2, Requests: 2}, Count: 2}
	ideal, _ := keepRecords(t, base)
	slow := base
	slow.Client = Client{ChunkCost: cost}
	got, _ := keepRecords(t, slow)
	if len(ideal) != 2 || len(got) != 2 || ideal[0].Replica == ideal[1].Replica || ideal[0].FirstToken != ideal[1].FirstToken {
		t.Fatalf("setup: %d and %d records, want one stream on each replica starting together: %+v", len(ideal), len(got), ideal)
	}
	firsts := []time.Duration{got[0].FirstToken, got[1].FirstToken}
	slices.Sort(firsts)
	if want := []time.Duration{ideal[0].FirstToken + cost, ideal[0].FirstToken + 2*cost}; !slices.Equal(firsts, want) {
		t.Errorf("first tokens observed at %v, want %v: the server's %v plus one and two chunk costs", firsts, want, ideal[0].FirstToken)
	}
	for _, r := range got {
		for k := 1; k < len(r.TokenTimes); k++ {
			if gap := r.TokenTimes[k] - r.TokenTimes[k-1]; gap != 2*cost {
				t.Fatalf("replica %s: gap %d is %v, want 2 × %v (one thread for both streams)", r.Replica, k, gap, cost)
			}
		}
	}
}

// Each replica has its own streaming loop: a loop that falls behind sends
// at most one chunk per chunk cost, so each replica's chunks fit its own
// budget while the fleet's exceed what one loop could send.
func TestFleetServerLoopPerReplica(t *testing.T) {
	const cost = time.Millisecond
	cfg := FleetConfig{Config: Config{Engine: noFrontEnd(t), Gen: fixed{64, 64}, Concurrency: 64, Requests: 128,
		ServerLoop: ServerLoop{ChunkCost: cost}}, Count: 2}
	recs, res := keepRecords(t, cfg)
	chunks := map[string]int{}
	tokens := 0
	for _, r := range recs {
		chunks[r.Replica] += len(r.TokenTimes)
		for i := range r.TokenTimes {
			tokens += r.TokensInChunk(i)
		}
	}
	budget := int(res.End/cost) + 1
	t.Logf("%d tokens in %v; chunks per replica %v; one loop's budget %d", tokens, res.End, chunks, budget)
	if tokens != 128*64 || len(chunks) != 2 {
		t.Fatalf("%d tokens over replicas %v, want 128 × 64 over two", tokens, chunks)
	}
	for name, n := range chunks {
		if n > budget {
			t.Errorf("replica %s: %d chunks in %v, more than its loop's one per %v", name, n, res.End, cost)
		}
	}
	if total := chunks["r0"] + chunks["r1"]; total <= budget {
		t.Errorf("%d chunks in all: within one loop's budget of %d; want a loop per replica", total, budget)
	}
}

// A fleet of one is Run with what only Run had: sessions with a client
// that has a chunk cost and a gap; an open loop held by MaxConcurrency
// with traffic classes on LoRA adapters and the server's streaming loop;
// a front end on cores the engine shares.
func TestFleetOfOneIsRunWithSessionsAndClients(t *testing.T) {
	lora := engineConfig(t, "h100", "llama-3.1-8b", 1)
	lora.LoRA = simengine.LoRAConfig{MaxLoRAs: 2}
	shared := engineConfig(t, "h100", "llama-3.1-8b", 1)
	c := simengine.DefaultCost
	c.FrontEndRateInSteps = 0.3
	shared.Cost = &c
	for name, cfg := range map[string]Config{
		"sessions and client": {Engine: engineConfig(t, "h100", "llama-3.1-8b", 1), Sessions: 16, Turn: fiveTurns, Requests: 1000,
			Client: Client{ChunkCost: 300 * time.Microsecond, Gap: 20 * time.Millisecond, Start: time.Second}, StreamTokenTimes: true},
		"classes, max concurrency and server loop": {Engine: lora, Gen: varied{64, 2048, 8, 200}, Arrivals: poisson(t, 30, 5),
			Requests: 600, MaxConcurrency: 12, ServerLoop: ServerLoop{ChunkCost: 200 * time.Microsecond}, StreamTokenTimes: true,
			Class: func(i int64) (string, int32) { return "c" + strconv.Itoa(int(i%3)), int32(i % 3) }},
		"front end on shared cores": {Engine: shared, Gen: varied{64, 4096, 8, 128}, Concurrency: 24, Requests: 500, WarmupRequests: 20},
	} {
		t.Run(name, func(t *testing.T) {
			if cfg.Arrivals != nil {
				cfg.Arrivals = poisson(t, 30, 5)
			}
			want, wres, err := Collect(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Arrivals != nil {
				cfg.Arrivals = poisson(t, 30, 5)
			}
			got, gres := collectFleet(t, FleetConfig{Config: cfg, Count: 1})
			if len(got) != len(want) || gres.Result != wres {
				t.Fatalf("fleet of one: %d records, %+v\nsingle run: %d records, %+v", len(got), gres.Result, len(want), wres)
			}
			byID := func(rs []record.Request) {
				sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
			}
			byID(got)
			byID(want)
			classes := map[string]bool{}
			for i := range got {
				g, w := got[i], want[i]
				g.Replica = ""
				gj, _ := g.MarshalJSON()
				wj, _ := w.MarshalJSON()
				if string(gj) != string(wj) {
					t.Fatalf("record %d differs:\nfleet  %s\nsingle %s", g.ID, gj, wj)
				}
				classes[g.Class] = true
			}
			if cfg.Class != nil && len(classes) != 3 {
				t.Errorf("classes %v, want c0, c1 and c2 in the records", classes)
			}
		})
	}
}
