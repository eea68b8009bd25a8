package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// recordsByID reads records.jsonl (written in completion order) by id.
func recordsByID(t *testing.T, path string) []record.Request {
	t.Helper()
	recs := readRecords(t, path)
	slices.SortFunc(recs, func(a, b record.Request) int { return int(a.ID - b.ID) })
	return recs
}

// A generic trace replays against the embedded server with its arrival
// times and exact lengths; the run's records.jsonl replays as a trace in
// turn, giving the same schedule and lengths.
func TestBenchTraceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	var b strings.Builder
	type row struct{ at, in, out int }
	var rows []row
	for i := 0; i < 20; i++ {
		r := row{at: i * 40, in: 40 + 37*i, out: 2 + i%5}
		rows = append(rows, r)
		fmt.Fprintf(&b, "{\"arrival_ms\": %d, \"input_tokens\": %d, \"output_tokens\": %d}\n", r.at, r.in, r.out)
	}
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(recs []record.Request, what string) {
		t.Helper()
		if len(recs) != len(rows) {
			t.Fatalf("%s: %d records, want %d", what, len(recs), len(rows))
		}
		for i, r := range recs {
			w := rows[i]
			if !r.OK() || r.InputTokens != w.in || r.OutputTokens != w.out || r.TokenSource != record.TokensFromUsage {
				t.Errorf("%s request %d: %s, served %d/%d tokens (%s), want %d/%d", what, i, r.Error, r.InputTokens, r.OutputTokens, r.TokenSource, w.in, w.out)
			}
			if d := r.Scheduled - time.Duration(w.at)*time.Millisecond; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("%s request %d scheduled at %v, want %d ms", what, i, r.Scheduled, w.at)
			}
		}
	}
	out1 := filepath.Join(dir, "run1")
	code, _, errs := kneeCmd(t, "bench", "--trace", trace, "--out", out1, "--quiet", "--json", "--no-store")
	if code != 0 {
		t.Fatalf("bench --trace: exit %d: %s", code, errs)
	}
	check(recordsByID(t, filepath.Join(out1, "records.jsonl")), "trace")
	out2 := filepath.Join(dir, "run2")
	code, stdout, errs := kneeCmd(t, "bench", "--trace", filepath.Join(out1, "records.jsonl"), "--out", out2, "--quiet", "--json", "--no-store")
	if code != 0 {
		t.Fatalf("bench --trace records.jsonl: exit %d: %s", code, errs)
	}
	check(recordsByID(t, filepath.Join(out2, "records.jsonl")), "records replay")
	var sum struct {
		OfferedRateRPS float64 `json:"offered_rate_rps"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.OfferedRateRPS < 24 || sum.OfferedRateRPS > 26 {
		t.Errorf("offered rate %v (%v), want 25 req/s (19 gaps in 760 ms)", sum.OfferedRateRPS, err)
	}
}

// knee sim replays a trace too; bad traces and flags that a trace replaces
// are usage errors naming the problem.
func TestSimTraceAndErrors(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "m.jsonl")
	var b strings.Builder
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": 2000, \"output_length\": 20, \"hash_ids\": [0, 1, 2, %d]}\n", i*200, 100+i)
	}
	os.WriteFile(trace, []byte(b.String()), 0o644)
	code, out, errs := kneeCmd(t, "sim", "--trace", trace, "--no-store")
	if code != 0 {
		t.Fatalf("sim --trace: exit %d: %s", code, errs)
	}
	for _, want := range []string{"trace replay at 1x", "50 of 50 requests", "prefix cache: ", "50 completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("sim report lacks %q:\n%s", want, out)
		}
	}
	// 49 later requests hit their 3 shared blocks: 1536 tokens each.
	if !strings.Contains(out, fmt.Sprintf("prefix cache: %d of %d prompt tokens hit", 49*1536, 50*2000)) {
		t.Errorf("want 49×1536 hit tokens:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--trace", bad}, "bad.jsonl:2: missing \"input_length\""},
		{[]string{"bench", "--trace", bad}, "bad.jsonl:2: missing \"input_length\""},
		{[]string{"sim", "--trace", trace, "--rate", "5"}, "--rate does not apply with --trace"},
		{[]string{"sim", "--trace-speedup", "2"}, "--trace-speedup needs --trace FILE"},
		{[]string{"sim", "--trace", trace, "--trace-speedup", "0"}, "--trace-speedup 0: want a positive factor"},
		{[]string{"sim", "--trace", filepath.Join(dir, "none.jsonl")}, "none.jsonl"},
	} {
		code, _, errs := kneeCmd(t, append(c.args, "--no-store")...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
