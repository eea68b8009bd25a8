package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
)

func writeTrace(t testing.TB, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// drain replays a trace without prompts and returns each request's
// arrival, lengths and segments.
type replayed struct {
	at      time.Duration
	in, out int
	segs    []simengine.Segment
}

func drain(t testing.TB, tr *Trace) []replayed {
	t.Helper()
	s, err := tr.Stream(false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []replayed
	for i := int64(0); ; i++ {
		at := s.Next()
		if at == neverArrives {
			break
		}
		in, o, segs := s.Content(i, nil)
		out = append(out, replayed{at, in, o, segs})
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Each format's rows come out with the arrival times (from the first row)
// and lengths the file gives, whatever the format's units.
func TestTraceFormats(t *testing.T) {
	for _, c := range []struct {
		name, file, body, format string
		want                     []replayed
	}{
		{"mooncake", "m.jsonl", `{"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [0, 1]}
{"timestamp": 1500, "input_length": 600, "output_length": 7, "hash_ids": [0, 2]}
`, TraceMooncake, []replayed{{0, 700, 5, nil}, {1500 * time.Millisecond, 600, 7, nil}}},
		{"azure", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n2023-11-16 18:17:05.0000000,0,7\n",
			TraceAzure, []replayed{{0, 4808, 10, nil}, {52 * time.Millisecond, 3180, 8, nil}}},
		{"azure2024", "a24.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,100,10\n2024-05-10 00:00:01.009930+00:00,200,20\n",
			TraceAzure, []replayed{{0, 100, 10, nil}, {time.Second, 200, 20, nil}}},
		{"burstgpt", "b.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,230,1317,Conversation log\n120,GPT-4,300,0,300,API log\n",
			TraceBurstGPT, []replayed{{0, 472, 18, nil}, {40 * time.Second, 1087, 230, nil}}},
		{"generic jsonl", "g.jsonl", `{"arrival_s": 1, "input_tokens": 10, "output_tokens": 3}
{"arrival_s": 0.5, "input_tokens": 20, "output_tokens": 4, "session_id": 7}
`, TraceJSONL, []replayed{{0, 20, 4, nil}, {500 * time.Millisecond, 10, 3, nil}}},
		{"generic csv", "g.csv", "arrival_ms,input_tokens,output_tokens,session_id\n0,10,3,a\n250,11,2,a\n",
			TraceCSV, []replayed{{0, 10, 3, nil}, {250 * time.Millisecond, 11, 2, nil}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeTrace(t, c.file, c.body)
			tr, err := OpenTrace(p, TraceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Info().Format != c.format {
				t.Errorf("detected %s, want %s", tr.Info().Format, c.format)
			}
			got := drain(t, tr)
			if len(got) != len(c.want) {
				t.Fatalf("got %d requests %+v, want %d", len(got), got, len(c.want))
			}
			for i := range got {
				if got[i].at != c.want[i].at || got[i].in != c.want[i].in || got[i].out != c.want[i].out {
					t.Errorf("request %d: %v %d/%d, want %v %d/%d", i, got[i].at, got[i].in, got[i].out, c.want[i].at, c.want[i].in, c.want[i].out)
				}
			}
			if c.format == TraceMooncake {
				// Block 0 is shared, and named alike; the rest differ.
				a, b := got[0].segs, got[1].segs
				if len(a) != 2 || a[0] != b[0] || a[1] == b[1] || a[1].Tokens != 700-512 || b[1].Tokens != 600-512 {
					t.Errorf("segments %v and %v", a, b)
				}
			}
		})
	}
}

// Bad rows are errors naming the file and line and what was expected.
func TestTraceErrors(t *testing.T) {
	for _, c := range []struct{ name, file, body, format, want string }{
		{"mooncake missing field", "m.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1, \"output_length\": 1}\n", "", `:2: missing "input_length"`},
		{"mooncake unsorted", "m.jsonl", "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 3, \"input_length\": 5, \"output_length\": 1}\n", "", ":2: arrival time -7ms is before line 1's 0s: the trace must be sorted"},
		{"mooncake bad json", "m.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1, \"input_length\": 5,\n", "", ":2: not a JSON object"},
		{"mooncake too many blocks", "m.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, 2]}\n", "", ":1: 2 hash_ids for 5 input tokens"},
		{"mooncake negative time", "m.jsonl", "{\"timestamp\": -5, \"input_length\": 5, \"output_length\": 1}\n", "", ":1: \"timestamp\" -5"},
		{"azure bad time", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,10,1\nyesterday,10,1\n", "", `:3: TIMESTAMP "yesterday"`},
		{"azure bad count", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,ten,1\n", "", `:2: token count "ten"`},
		{"azure short row", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,10\n", "", ":2: wrong number of fields"},
		{"azure unsorted", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04.0,10,1\n2023-11-16 18:17:03.0,10,1\n", "", ":3: arrival time -1s"},
		{"burstgpt header", "b.csv", "Timestamp,Model,Request tokens\n1,x,2\n", "burstgpt", `:1: burstgpt trace header "Timestamp,Model,Request tokens" lacks columns`},
		{"burstgpt negative", "b.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,x,-2,3,1,a\n", "", ":2: negative token count"},
		{"generic no time", "g.jsonl", "{\"input_tokens\": 3, \"output_tokens\": 1}\n", "", ":1: missing the arrival time (one of arrival_ms"},
		{"generic no output", "g.jsonl", "{\"arrival_ms\": 3, \"input_tokens\": 1}\n", "", ":1: missing the output length"},
		{"generic csv header", "g.csv", "when,in,out\n1,2,3\n", "", `:1: csv trace header "when,in,out" lacks columns`},
		{"empty", "e.jsonl", "\n\n", "", "empty trace"},
		{"unknown format", "e.jsonl", "{}\n", "parquet", `format "parquet": want one of`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeTrace(t, c.file, c.body)
			_, err := OpenTrace(p, TraceOptions{Format: c.format})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want it to contain %q", err, c.want)
			}
			if !strings.Contains(c.want, "format") && !strings.Contains(c.want, "empty") && !strings.Contains(err.Error(), p) {
				t.Errorf("error %v does not name the file", err)
			}
		})
	}
}

// Generic files may be out of order by a bounded number of rows (knee's
// records.jsonl is in completion order); beyond that it is an error.
func TestTraceReorderWindow(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 100; i++ {
		j := i ^ 1 // swap neighbours
		fmt.Fprintf(&b, "{\"scheduled_ms\": %d, \"input_tokens\": 5, \"output_tokens\": 1}\n", j*10)
	}
	got := drain(t, mustOpen(t, writeTrace(t, "r.jsonl", b.String()), TraceOptions{}))
	for i := range got {
		if got[i].at != time.Duration(i*10)*time.Millisecond {
			t.Fatalf("request %d at %v", i, got[i].at)
		}
	}
	b.Reset()
	fmt.Fprintf(&b, "{\"scheduled_ms\": 100000, \"input_tokens\": 5, \"output_tokens\": 1}\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "{\"scheduled_ms\": %d, \"input_tokens\": 5, \"output_tokens\": 1}\n", 100001+i)
	}
	fmt.Fprintf(&b, "{\"scheduled_ms\": 5, \"input_tokens\": 5, \"output_tokens\": 1}\n")
	if _, err := OpenTrace(writeTrace(t, "r.jsonl", b.String()), TraceOptions{}); err == nil || !strings.Contains(err.Error(), ":5002: arrival time") || !strings.Contains(err.Error(), "at most 4096 rows") {
		t.Fatalf("far out of order: %v", err)
	}
}

func mustOpen(t testing.TB, p string, o TraceOptions) *Trace {
	t.Helper()
	tr, err := OpenTrace(p, o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Window, speed-up, target rate, sampling and the context cap reshape the
// replay as documented.
func TestTraceOptions(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 100}\n", i*100, 1000+i)
	}
	p := writeTrace(t, "o.jsonl", b.String())
	got := drain(t, mustOpen(t, p, TraceOptions{Start: 10 * time.Second, End: 20 * time.Second, Speedup: 2, MaxContext: 1050}))
	if len(got) != 100 || got[0].at != 0 || got[1].at != 50*time.Millisecond || got[99].at != 99*50*time.Millisecond {
		t.Fatalf("window 10s..20s at 2x: %d requests, first %v, second %v", len(got), got[0].at, got[1].at)
	}
	if got[0].in != 950 || got[0].out != 100 {
		t.Errorf("first request capped to %d+%d, want 950+100 (the context 1050)", got[0].in, got[0].out)
	}
	tr := mustOpen(t, p, TraceOptions{TargetRateRPS: 40})
	if i := tr.Info(); i.Speedup < 3.99 || i.Speedup > 4.01 || i.MeanRateRPS < 39.9 || i.MeanRateRPS > 40.1 {
		t.Errorf("target 40 req/s on a 10 req/s trace: speed-up %v, rate %v", i.Speedup, i.MeanRateRPS)
	}
	half := mustOpen(t, p, TraceOptions{Sample: 0.5, Seed: 3})
	if k := half.Info().Kept; k < 420 || k > 580 {
		t.Errorf("sample 0.5 kept %d of 1000", k)
	}
	again := mustOpen(t, p, TraceOptions{Sample: 0.5, Seed: 3, Speedup: 3})
	a, c := drain(t, half), drain(t, again)
	for i := range a {
		if a[i].in != c[i].in || c[i].at != a[i].at/3 {
			t.Fatalf("the same seed keeps the same rows at every speed-up: %+v vs %+v", a[i], c[i])
		}
	}
}

// Requests sharing a hash_id share that block's exact text, so a real
// server's prefix cache sees the reuse; prompts are exactly the trace's
// lengths in the tokenizer's tokens.
func TestTracePromptsHonourHashIDs(t *testing.T) {
	p := writeTrace(t, "m.jsonl", `{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2]}
{"timestamp": 10, "input_length": 1300, "output_length": 7, "hash_ids": [0, 1, 3]}
{"timestamp": 20, "input_length": 300, "output_length": 7, "hash_ids": [9]}
`)
	tr := mustOpen(t, p, TraceOptions{Seed: 1})
	s, err := tr.Stream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var items []Item
	for i := int64(0); s.Next() != neverArrives; i++ {
		items = append(items, s.Item(i))
	}
	tk, _ := LoadTokenizer(DefaultTokenizer)
	for i, want := range []int{1100, 1300, 300} {
		if items[i].InputTokens != want || tk.Count(items[i].Prompt) != want {
			t.Errorf("request %d: %d tokens (counted %d), want %d", i, items[i].InputTokens, tk.Count(items[i].Prompt), want)
		}
	}
	a, b := tk.Encode(items[0].Prompt), tk.Encode(items[1].Prompt)
	common := 0
	for common < len(a) && common < len(b) && a[common] == b[common] {
		common++
	}
	if common < 1024 || common >= 1100 {
		t.Errorf("requests sharing blocks 0 and 1 share their first %d tokens, want 1024 (two 512-token blocks) and not more than a few beyond", common)
	}
}

// A million-request trace streams from disk in bounded memory: reading it
// holds no more than the reorder window and the in-flight requests.
func TestTraceMillionRequestsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 30 MB file")
	}
	p := filepath.Join(t.TempDir(), "big.csv")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type")
	const n = 1_000_000
	for i := 0; i < n; i++ {
		fmt.Fprintf(f, "%d.%03d,ChatGPT,%d,%d,0,Conversation log\n", i/1000, i%1000, 100+i%900, 1+i%300)
	}
	f.Close()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	tr := mustOpen(t, p, TraceOptions{})
	s, err := tr.Stream(false)
	if err != nil {
		t.Fatal(err)
	}
	var peak uint64
	var total int64
	for i := int64(0); s.Next() != neverArrives; i++ {
		in, _ := s.Lengths(i)
		total += int64(in)
		if i%100_000 == 0 {
			// The live heap (after a collection), not garbage awaiting one.
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	}
	s.Close()
	if tr.Info().Kept != n || total != tr.Info().InputTokens {
		t.Fatalf("kept %d, input %d vs %d", tr.Info().Kept, total, tr.Info().InputTokens)
	}
	t.Logf("1M-request trace: opened and replayed in %v, live heap at most %.1f MB (before %.1f MB)", time.Since(start), float64(peak)/(1<<20), float64(before.HeapAlloc)/(1<<20))
	if peak > before.HeapAlloc+16<<20 {
		t.Errorf("live heap grew to %.1f MB replaying the trace (from %.1f MB): not bounded", float64(peak)/(1<<20), float64(before.HeapAlloc)/(1<<20))
	}
}

// The readers never panic, and a trace they accept replays consistently.
func FuzzTraceReaders(f *testing.F) {
	for _, s := range []string{
		`{"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [0, 1]}`,
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n",
		"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n",
		`{"arrival_s": 1, "input_tokens": 10, "output_tokens": 3, "prompt": "hi"}`,
		"arrival_ms,input_tokens,output_tokens\n0,10,3\n",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(dir, "fuzz.trace")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := OpenTrace(p, TraceOptions{MaxContext: 1 << 20})
		if err != nil {
			return
		}
		got := drain(t, tr)
		if len(got) != tr.Info().Kept {
			t.Fatalf("replayed %d, info says %d", len(got), tr.Info().Kept)
		}
		for i := 1; i < len(got); i++ {
			if got[i].at < got[i-1].at || got[i].in < 0 || got[i].out < 1 {
				t.Fatalf("request %d: %+v after %+v", i, got[i], got[i-1])
			}
		}
	})
}

// A generic row with prompt text and no length is counted in the
// tokenizer's tokens, so the simulator replays it too; its session id is
// carried to the request.
func TestTracePromptTextAndSession(t *testing.T) {
	p := writeTrace(t, "p.jsonl", `{"arrival_ms": 0, "prompt": "hello there world", "output_tokens": 4, "session_id": "a"}
{"arrival_ms": 5, "input_tokens": 20, "output_tokens": 2, "session_id": 12}
`)
	got := drain(t, mustOpen(t, p, TraceOptions{}))
	if len(got) != 2 || got[0].in != 3 || got[1].in != 20 {
		t.Fatalf("replayed %+v", got)
	}
	s, err := mustOpen(t, p, TraceOptions{}).Stream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Next()
	s.Next()
	a, b := s.Item(0), s.Item(1)
	if a.Prompt != "hello there world" || a.InputTokens != 3 || a.Session != "a" || b.Session != "12" || b.InputTokens != 20 {
		t.Errorf("items %+v %+v", a, b)
	}
}
