package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/tracetest"
	"github.com/knee-dev/knee/internal/workload"
)

func mooncakeTrace(t *testing.T) (*workload.Trace, string) {
	t.Helper()
	path := tracetest.Path(t, "mooncake_conversation_trace.jsonl")
	tr, err := workload.OpenTrace(path, workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr, path
}

// replay runs a whole trace through the simulator and returns its records.
func replay(t *testing.T, tr *workload.Trace, ecfg simengine.Config) ([]record.Request, Result, time.Duration) {
	t.Helper()
	s, err := tr.Stream(false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: s, Arrivals: s, Requests: int64(tr.Info().Kept), TooLongAsErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return recs, res, time.Since(start)
}

// lruBound is the prefix-cache hit rate the trace's hash_ids allow for a
// cache of capBlocks 16-token blocks: requests in arrival order against an
// LRU of blocks, each request hitting its leading cached blocks (at most all
// but its last token, as the engine) and then holding all of its own. It
// ignores that running requests pin their blocks, so an engine under load
// may fall a little short of it.
func lruBound(t *testing.T, path string, capBlocks int) (hits, queries int64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A block is named by its hash id and its index among the hash id's
	// blocks, packed into one word (fewer than 1<<blockBits blocks a hash
	// id, ids below 1<<(64-blockBits)): the map then hashes a word, and
	// this bound, replayed over the whole trace, costs less CPU.
	type key uint64
	const blockBits = 6
	// A hash id's blocks fit in blockBits (this fails to compile if not).
	const _ = uint(1<<blockBits - workload.MooncakeBlockTokens/simengine.BlockTokens)
	type node struct {
		key        key
		prev, next *node
	}
	byKey := map[key]*node{}
	var head, tail *node // head = least recently used
	unlink := func(n *node) {
		if n.prev != nil {
			n.prev.next = n.next
		} else {
			head = n.next
		}
		if n.next != nil {
			n.next.prev = n.prev
		} else {
			tail = n.prev
		}
		n.prev, n.next = nil, nil
	}
	pushTail := func(n *node) {
		n.prev = tail
		if tail != nil {
			tail.next = n
		} else {
			head = n
		}
		tail = n
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row struct {
			In      int     `json:"input_length"`
			Out     int     `json:"output_length"`
			HashIDs []int64 `json:"hash_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		queries += int64(row.In + 0)
		var blocks []key
		for j, h := range row.HashIDs {
			if h < 0 || h >= 1<<(64-blockBits) {
				t.Fatalf("%s: hash id %d out of the range lruBound packs", path, h)
			}
			n := min(workload.MooncakeBlockTokens, row.In-j*workload.MooncakeBlockTokens)
			for k := 0; k < n/simengine.BlockTokens; k++ {
				blocks = append(blocks, key(uint64(h)<<blockBits|uint64(k)))
			}
			if n%simengine.BlockTokens != 0 {
				break // a partial block ends what can be named
			}
		}
		maxHit := (row.In - 1) / simengine.BlockTokens
		hitting := true
		for b, k := range blocks {
			n, ok := byKey[k]
			if hitting && ok && b < maxHit {
				hits += simengine.BlockTokens
			} else {
				hitting = false
			}
			if ok {
				unlink(n)
			} else {
				// Full: the least recently used block leaves, and its
				// node takes the new one (no allocation a miss).
				if len(byKey) >= capBlocks {
					n = head
					unlink(n)
					delete(byKey, n.key)
					n.key = k
				} else {
					n = &node{key: k}
				}
				byKey[k] = n
			}
			pushTail(n)
		}
	}
	return hits, queries
}

// The Mooncake conversation trace through Llama-3.1-8B on one H100: the
// simulated prefix-cache hit rate is within 5 points of the LRU bound its
// hash_ids allow for the engine's cache, TTFT is lower than without
// caching, and every token is accounted for.
func TestMooncakeTracePrefixCache(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the whole trace twice (~10 s)")
	}
	// Pure (no package state changed) and long: it runs beside the
	// other Mooncake replay once the sequential tests are done.
	t.Parallel()
	tr, path := mooncakeTrace(t)
	info := tr.Info()
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	recs, res, took := replay(t, tr, ecfg)
	st := res.Engine
	bh, bq := lruBound(t, path, st.KVBlocksTotal)
	rate := float64(st.PrefixCacheHits) / float64(st.PrefixCacheQueries)
	bound := float64(bh) / float64(bq)
	t.Logf("%s", info)
	t.Logf("simulated in %v: %d steps, %d preemptions, KV cache %d blocks", took, res.Steps, st.Preemptions, st.KVBlocksTotal)
	t.Logf("prefix cache: %d of %d tokens hit (%.1f%%); LRU bound %.1f%%; infinite cache %.1f%%",
		st.PrefixCacheHits, st.PrefixCacheQueries, 100*rate, 100*bound, 100*float64(info.ReuseTokens)/float64(info.InputTokens))
	if st.PrefixCacheQueries != info.InputTokens || bq != info.InputTokens {
		t.Errorf("queries: engine %d, bound %d, trace %d input tokens", st.PrefixCacheQueries, bq, info.InputTokens)
	}
	if d := rate - bound; d > 0.05 || d < -0.05 {
		t.Errorf("hit rate %.1f%% vs the bound %.1f%%: more than 5 points apart", 100*rate, 100*bound)
	}

	// Tokens conserved: every request completed with the trace's lengths.
	var in, out int64
	for _, r := range recs {
		if !r.OK() {
			t.Fatalf("request %d: %s %s", r.ID, r.Error, r.ErrorMessage)
		}
		in += int64(r.InputTokens)
		out += int64(r.OutputTokens)
	}
	if int64(len(recs)) != int64(info.Kept) || in != info.InputTokens || out != info.OutputTokens || st.OutputTokens != out {
		t.Errorf("records %d of %d; input %d of %d; output %d of %d (engine %d)", len(recs), info.Kept, in, info.InputTokens, out, info.OutputTokens, st.OutputTokens)
	}
	if want := info.InputTokens - st.PrefixCacheHits; st.PrefillTokens < want {
		t.Errorf("prefill computed %d tokens, fewer than the %d input tokens not hit", st.PrefillTokens, want)
	}

	off := ecfg
	off.NoPrefixCaching = true
	recsOff, resOff, _ := replay(t, tr, off)
	on, no := ttfts(recs), ttfts(recsOff)
	t.Logf("TTFT p50 %.0f ms with caching, %.0f ms without; p99 %.0f vs %.0f ms; prefill tokens computed %d vs %d; preemptions %d vs %d",
		on.P50, no.P50, on.P99, no.P99, st.PrefillTokens, resOff.Engine.PrefillTokens, st.Preemptions, resOff.Engine.Preemptions)
	if !(on.P50 < no.P50 && on.Mean < no.Mean) {
		t.Errorf("TTFT with caching (p50 %.0f ms, mean %.0f ms) not below without (%.0f, %.0f)", on.P50, on.Mean, no.P50, no.Mean)
	}
}

func ttfts(recs []record.Request) stats.Dist {
	sum := stats.Summarize(recs, stats.Options{})
	return sum.TTFT
}

// Simulated conversations: turn k's prompt is the history (every earlier
// message and answer) plus the new message; the prefix cache holds the
// history, so later turns compute only the new message and the answer's
// partial block, and their prefill is far shorter than without caching.
func TestSessionsReuseHistory(t *testing.T) {
	turn := func(s, k int) (SessionTurn, bool) {
		return SessionTurn{InputTokens: 400, OutputTokens: 100, Think: 2 * time.Second}, k <= 5
	}
	prefill := map[bool][2]time.Duration{}
	computed := map[bool]int64{}
	for _, off := range []bool{false, true} {
		ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
		ecfg.NoPrefixCaching = off
		recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Sessions: 20, Turn: turn, Requests: 1000, Ramp: 20 * time.Second, KeepTokenTimes: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 100 || res.Completed != 100 {
			t.Fatalf("%d records, %d completed; want 20 sessions × 5 turns", len(recs), res.Completed)
		}
		last := map[string]record.Request{}
		var firstP, laterP []float64
		for _, r := range recs {
			want := 400
			if p, ok := last[r.Session]; ok {
				want = p.InputTokens + p.OutputTokens + 400
				if r.Turn != p.Turn+1 || r.Scheduled < p.Done+2*time.Second {
					t.Errorf("session %s turn %d at %v after turn %d done at %v", r.Session, r.Turn, r.Scheduled, p.Turn, p.Done)
				}
			}
			if r.InputTokens != want || !r.OK() {
				t.Errorf("session %s turn %d: %d prompt tokens, want %d", r.Session, r.Turn, r.InputTokens, want)
			}
			last[r.Session] = r
			if r.Turn == 1 {
				firstP = append(firstP, float64(r.ServerPhases.Prefill))
			} else if r.Turn == 5 {
				laterP = append(laterP, float64(r.ServerPhases.Prefill))
			}
		}
		prefill[off] = [2]time.Duration{time.Duration(stats.Median(firstP)), time.Duration(stats.Median(laterP))}
		computed[off] = res.Engine.PrefillTokens
	}
	t.Logf("prefill p50 turn 1 / turn 5 (2,400 tokens): caching %v / %v; off %v / %v; prompt tokens computed %d vs %d",
		prefill[false][0], prefill[false][1], prefill[true][0], prefill[true][1], computed[false], computed[true])
	// 20 × (400 + 900 + 1400 + 1900 + 2400) prompt tokens; with the cache
	// only each turn's 400 new ones and the answer's last partial block.
	if computed[true] != 20*7000 || computed[false] > 20*5*(400+16) {
		t.Errorf("prompt tokens computed: %d with caching (want at most %d), %d without (want %d)", computed[false], 20*5*416, computed[true], 20*7000)
	}
	if on, no := prefill[false], prefill[true]; !(on[1] < no[1]) || !(no[1] > no[0]) {
		t.Errorf("turn-5 prefill %v with caching, %v without (turn 1: %v, %v)", on[1], no[1], on[0], no[0])
	}
}
