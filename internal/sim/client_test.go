package sim

import (
	"context"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
)

// noFrontEnd is Llama-3.1-8B on one H100 without the server's front end
// (no jitter): every step time is the cost model's, the same on every run.
func noFrontEnd(t *testing.T) simengine.Config {
	cfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	c := simengine.DefaultCost
	c.FrontEndNS, c.FrontEndPerTokenNS, c.FrontEndSerialNS = 0, 0, 0
	cfg.Cost = &c
	return cfg
}

func collectClient(t *testing.T, cfg Config) ([]record.Request, Result) {
	t.Helper()
	cfg.KeepTokenTimes = true
	recs, res, err := Collect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return recs, res
}

// Two streams decoding in lockstep (one chunk each per ~6.5 ms step) and a
// client that needs 10 ms a chunk: the client handles A's chunk, then B's,
// then A's next (which has long arrived), so each stream sees a token every
// 2 × 10 ms, A's first token 10 ms after the server sent it and B's 20 ms.
func TestClientChunkCostSerialisesStreams(t *testing.T) {
	const cost = 10 * time.Millisecond
	base := Config{Engine: noFrontEnd(t), Gen: fixed{45, 20}, Concurrency: 2, Requests: 2}
	ideal, _ := collectClient(t, base)
	slow := base
	slow.Client = Client{ChunkCost: cost}
	got, res := collectClient(t, slow)
	if len(ideal) != 2 || len(got) != 2 {
		t.Fatalf("records: %d ideal, %d with the client; want 2 each", len(ideal), len(got))
	}
	step := ideal[0].TokenTimes[1] - ideal[0].TokenTimes[0]
	if step >= cost || ideal[0].FirstToken != ideal[1].FirstToken {
		t.Fatalf("setup: step %v (want under %v), first tokens %v and %v (want one step)", step, cost, ideal[0].FirstToken, ideal[1].FirstToken)
	}
	byID := map[int64]record.Request{}
	for _, r := range got {
		byID[r.ID] = r
	}
	for i, r := range []record.Request{byID[0], byID[1]} {
		wantFirst := ideal[0].FirstToken + time.Duration(i+1)*cost
		if r.FirstToken != wantFirst {
			t.Errorf("stream %d: first token observed at %v, want the server's %v + %d × %v = %v", i, r.FirstToken, ideal[0].FirstToken, i+1, cost, wantFirst)
		}
		for k := 1; k < len(r.TokenTimes); k++ {
			if gap := r.TokenTimes[k] - r.TokenTimes[k-1]; gap != 2*cost {
				t.Errorf("stream %d: gap %d is %v, want 2 × %v", i, k, gap, cost)
				break
			}
		}
		if want := wantFirst + 19*2*cost; r.Done != want {
			t.Errorf("stream %d: done at %v, want first + 19 × 2 × %v = %v", i, r.Done, cost, want)
		}
		// The server's own phases are not the client's.
		if r.ServerPhases.Decode != ideal[0].ServerPhases.Decode {
			t.Errorf("stream %d: server decode phase %v, want the ideal run's %v", i, r.ServerPhases.Decode, ideal[0].ServerPhases.Decode)
		}
	}
	if res.End != byID[1].Done {
		t.Errorf("run end %v, want the client's last token %v", res.End, byID[1].Done)
	}
}

// A client faster than the steps keeps up: one stream sees every token its
// cost after the server sent it, with the server's gaps.
func TestClientChunkCostKeepsUp(t *testing.T) {
	const cost = 700 * time.Microsecond
	base := Config{Engine: noFrontEnd(t), Gen: fixed{45, 16}, Concurrency: 1, Requests: 3}
	ideal, _ := collectClient(t, base)
	base.Client = Client{ChunkCost: cost}
	got, _ := collectClient(t, base)
	if len(got) != len(ideal) {
		t.Fatalf("%d records, want %d", len(got), len(ideal))
	}
	// Each next request is sent when the client has the last token, cost
	// later: request k starts k × cost later than in the ideal run.
	for k := range got {
		shift := time.Duration(k) * cost
		if got[k].Sent != ideal[k].Sent+shift {
			t.Errorf("request %d sent at %v, want %v", k, got[k].Sent, ideal[k].Sent+shift)
		}
		for i, tt := range got[k].TokenTimes {
			if want := ideal[k].TokenTimes[i] + shift + cost; tt != want {
				t.Errorf("request %d token %d observed at %v, want %v", k, i, tt, want)
				break
			}
		}
	}
}

// A closed-loop user that pauses g between an answer and its next request
// sends N requests in (N − 1) × g more time: the same server work, spaced.
func TestClientGapAndStart(t *testing.T) {
	const n, gap, start = 5, 80 * time.Millisecond, 2 * time.Second
	base := Config{Engine: noFrontEnd(t), Gen: fixed{45, 32}, Concurrency: 1, Requests: n}
	_, ideal := collectClient(t, base)
	withGap := base
	withGap.Client = Client{Gap: gap}
	recs, res := collectClient(t, withGap)
	if want := ideal.End + (n-1)*gap; res.End != want {
		t.Errorf("with a %v gap the run ends at %v, want %v + %d × %v = %v", gap, res.End, ideal.End, n-1, gap, want)
	}
	for k := 1; k < len(recs); k++ {
		if d := recs[k].Sent - recs[k-1].Done; d != gap {
			t.Errorf("request %d sent %v after the last one ended, want %v", k, d, gap)
		}
	}
	if want := float64(ideal.Tokens) / (ideal.End + (n-1)*gap).Seconds(); float64(res.Tokens)/res.End.Seconds() != want {
		t.Errorf("throughput %.3f tok/s, want %.3f", float64(res.Tokens)/res.End.Seconds(), want)
	}
	late := base
	late.Concurrency = 3
	late.Requests = 6
	late.Client = Client{Start: start}
	recs, _ = collectClient(t, late)
	for _, r := range recs[:3] {
		if r.Sent != start {
			t.Errorf("first requests sent at %v, want the client's start %v", r.Sent, start)
		}
	}
}

func TestClientRejectsBadSettings(t *testing.T) {
	cfg := Config{Engine: noFrontEnd(t), Gen: fixed{45, 8}, Concurrency: 1, Requests: 1}
	for name, c := range map[string]Client{
		"negative chunk cost": {ChunkCost: -time.Millisecond},
		"negative gap":        {Gap: -1},
		"negative start":      {Start: -time.Second},
	} {
		cfg.Client = c
		if _, err := Run(context.Background(), cfg, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	open := Config{Engine: noFrontEnd(t), Gen: fixed{45, 8}, Arrivals: &everyMS{}, Requests: 2, Client: Client{Gap: time.Millisecond}}
	if _, err := Run(context.Background(), open, nil); err == nil {
		t.Error("a gap on an open loop: no error")
	}
	gaps := Config{Engine: noFrontEnd(t), Gen: fixed{45, 8}, Concurrency: 1, Requests: 1, Client: Client{ChunkCost: time.Millisecond},
		OnGaps: func(time.Duration, int) {}}
	if _, err := Run(context.Background(), gaps, nil); err == nil {
		t.Error("OnGaps with a chunk cost: no error")
	}
	fleet := FleetConfig{Config: Config{Engine: noFrontEnd(t), Gen: fixed{45, 8}, Concurrency: 1, Requests: 1, Client: Client{ChunkCost: -time.Millisecond}}, Count: 2}
	if _, err := RunFleet(context.Background(), fleet, nil); err == nil {
		t.Error("a negative chunk cost on a fleet: no error")
	}
}

// everyMS is an open loop of one arrival a millisecond.
type everyMS struct{ n int64 }

func (a *everyMS) Next() time.Duration { a.n++; return time.Duration(a.n) * time.Millisecond }

// The server's streaming loop (ServerLoop) sends one chunk at a time for
// all streams, and a stream's tokens that queued meanwhile go out as one
// chunk (vLLM's RequestOutputCollector): 32 streams decoding in one ~7 ms
// step want ~4,600 chunks a second from a loop that sends 1,000, so the
// loop's chunks carry several tokens each, it sends no more than one per
// millisecond, and the tokens still flow at the engine's rate. A loop that
// keeps up sends every token as its own chunk.
func TestServerLoopMergesWhatWaits(t *testing.T) {
	const cost = time.Millisecond
	base := Config{Engine: noFrontEnd(t), Gen: fixed{64, 64}, Concurrency: 32, Requests: 64}
	run := func(loop ServerLoop) (chunks, tokens int, end time.Duration) {
		c := base
		c.ServerLoop = loop
		recs, res := collectClient(t, c)
		for _, r := range recs {
			chunks += len(r.TokenTimes)
			for i := range r.TokenTimes {
				tokens += r.TokensInChunk(i)
			}
		}
		return chunks, tokens, res.End
	}
	idealChunks, idealTokens, idealEnd := run(ServerLoop{})
	chunks, tokens, end := run(ServerLoop{ChunkCost: cost})
	keepUpChunks, _, _ := run(ServerLoop{ChunkCost: 10 * time.Microsecond})
	t.Logf("ideal: %d chunks, %d tokens in %v; loop at %v a chunk: %d chunks, %d tokens in %v; at 10µs: %d chunks",
		idealChunks, idealTokens, idealEnd, cost, chunks, tokens, end, keepUpChunks)
	if tokens != idealTokens || idealChunks != idealTokens || keepUpChunks != idealTokens {
		t.Fatalf("tokens %d (ideal %d), ideal chunks %d, keeping-up chunks %d: want every token once, one to a chunk unless the loop falls behind",
			tokens, idealTokens, idealChunks, keepUpChunks)
	}
	if float64(chunks) > float64(end)/float64(cost)+1 {
		t.Errorf("%d chunks in %v: more than one per %v", chunks, end, cost)
	}
	if perChunk := float64(tokens) / float64(chunks); perChunk < 2 {
		t.Errorf("%.2f tokens a chunk: want the queued tokens merged", perChunk)
	}
	if tps := float64(tokens) / end.Seconds(); tps < 2/cost.Seconds() || end > idealEnd*13/10 {
		t.Errorf("%.0f tok/s, run %v (ideal %v): merging should keep the engine's token rate, not cap it at one per chunk cost", tps, end, idealEnd)
	}
}
