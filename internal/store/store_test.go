package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

func tempDB(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "sub", "knee.db")
}

func openT(t *testing.T, path string) *Store {
	t.Helper()
	st, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func rec(id int64, ttft time.Duration) record.Request {
	sent := time.Duration(id) * time.Millisecond
	return record.Request{
		ID: id, Scheduled: sent, Sent: sent, FirstToken: sent + ttft, Done: sent + ttft + 50*time.Millisecond,
		StreamEnd:   sent + ttft + 51*time.Millisecond,
		TokenTimes:  []time.Duration{sent + ttft, sent + ttft + 25*time.Millisecond, sent + ttft + 50*time.Millisecond},
		InputTokens: 100, OutputTokens: 3, TokenSource: record.TokensFromUsage,
	}
}

func TestDefaultPath(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	env["HOME"] = "/home/u"
	if got, want := DefaultPath(get), "/home/u/.local/share/knee/knee.db"; got != want {
		t.Errorf("HOME only: %q, want %q", got, want)
	}
	env["XDG_DATA_HOME"] = "/data"
	if got, want := DefaultPath(get), "/data/knee/knee.db"; got != want {
		t.Errorf("XDG_DATA_HOME: %q, want %q", got, want)
	}
	env["KNEE_DB"] = "/x/y.db"
	if got, want := DefaultPath(get), "/x/y.db"; got != want {
		t.Errorf("KNEE_DB: %q, want %q", got, want)
	}
}

func TestOpenCreatesAndMigrates(t *testing.T) {
	path := tempDB(t)
	st := openT(t, path)
	v, err := st.Version()
	if err != nil || v != SchemaVersion() || v < 2 {
		t.Fatalf("version %d, %v; want %d (>= 2)", v, err, SchemaVersion())
	}
	var mode string
	if err := st.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v; want wal", mode, err)
	}
	st.Close()
	st2 := openT(t, path) // reopening applies nothing twice
	if v2, _ := st2.Version(); v2 != v {
		t.Errorf("reopened at version %d, want %d", v2, v)
	}
}

// The busy timeout is an option of Open, the default when not given: each
// store's connections carry its own, so tests may shorten it side by side.
func TestOpenBusyTimeout(t *testing.T) {
	path := tempDB(t)
	short, err := OpenWith(path, Options{BusyTimeout: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	def := openT(t, path)
	for _, c := range []struct {
		st   *Store
		want int
	}{{short, 250}, {def, int(DefaultBusyTimeout.Milliseconds())}} {
		var ms int
		if err := c.st.db.QueryRow(`PRAGMA busy_timeout`).Scan(&ms); err != nil || ms != c.want {
			t.Errorf("busy_timeout %d ms, %v; want %d", ms, err, c.want)
		}
	}
}

// A database made by the first schema, with a run in it, upgrades to the
// current schema and keeps its data usable.
func TestMigrationFromSchema1(t *testing.T) {
	path := tempDB(t)
	old, err := open(path, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := old.Version(); v != 1 {
		t.Fatalf("made version %d, want 1", v)
	}
	r := rec(7, 30*time.Millisecond)
	b, _ := json.Marshal(&r)
	now := time.Now().UnixNano()
	mustExec(t, old.db.DB, `INSERT INTO runs (kind, label, target, model, config_json, knee_version, started_ns, ended_ns, status, heartbeat_ns)
		VALUES ('bench', 'old', 'http://x', 'm', '{"concurrency":4}', '0.0.1', ?, ?, 'complete', ?)`, now, now, now)
	mustExec(t, old.db.DB, `INSERT INTO records (run_id, seq, record_json) VALUES (1, 0, ?)`, string(b))
	mustExec(t, old.db.DB, `INSERT INTO summaries (run_id, summary_json) VALUES (1, '{"requests":1,"completed":1}')`)
	if _, err := old.db.Exec(`SELECT step FROM records`); err == nil {
		t.Fatal("schema 1 already has records.step; the test no longer exercises migration 2")
	}
	old.Close()

	st := openT(t, path)
	if v, _ := st.Version(); v != SchemaVersion() {
		t.Fatalf("upgraded to %d, want %d", v, SchemaVersion())
	}
	ri, err := st.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	if ri.Label != "old" || ri.Status != StatusComplete || ri.Records != 1 || ri.Summary == nil || ri.Summary.Requests != 1 {
		t.Errorf("old run after upgrade: %+v", ri)
	}
	if err := st.StepRecords(1, func(step int, got *record.Request) error {
		if step != -1 || got.ID != 7 {
			t.Errorf("old record: step %d id %d", step, got.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveSweep(1, Sweep{Axis: "concurrency", Steps: []SweepStep{{Load: 1, Data: json.RawMessage(`{"x":1}`)}}}); err != nil {
		t.Errorf("new table after upgrade: %v", err)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestCorruptedFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte("this is not sqlite at all, just some text\n"), 0o644)
	if _, err := Open(garbage); !errors.Is(err, ErrNotDatabase) {
		t.Errorf("garbage file: %v, want ErrNotDatabase", err)
	}
	if b, _ := os.ReadFile(garbage); !strings.HasPrefix(string(b), "this is not sqlite") {
		t.Error("opening a garbage file modified it")
	}

	// A real database whose pages were overwritten after the header.
	damaged := filepath.Join(dir, "damaged.db")
	st, err := Open(damaged)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	os.Remove(damaged + "-wal")
	os.Remove(damaged + "-shm")
	b, _ := os.ReadFile(damaged)
	for i := 16; i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	os.WriteFile(damaged, b, 0o644)
	if _, err := Open(damaged); !errors.Is(err, ErrNotDatabase) {
		t.Errorf("damaged database: %v, want ErrNotDatabase", err)
	}
}

func TestTooNewSchema(t *testing.T) {
	path := tempDB(t)
	st := openT(t, path)
	mustExec(t, st.db.DB, `INSERT INTO schema_version (version, name, applied_ns) VALUES (99, 'future', 0)`)
	st.Close()
	if _, err := Open(path); !errors.Is(err, ErrTooNew) {
		t.Errorf("future schema: %v, want ErrTooNew", err)
	}
}

func TestBeginAddFinish(t *testing.T) { eachDialect(t, testBeginAddFinish) }

func testBeginAddFinish(t *testing.T, db string) {
	st := openT(t, db)
	w, err := st.BeginRun(RunMeta{Kind: KindBench, Label: "base", Target: "http://h:8000", Model: "llama",
		Config: map[string]any{"concurrency": 8}, Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	ri, _ := st.Run(w.ID())
	if ri.Status != StatusRunning {
		t.Errorf("status while writing: %s", ri.Status)
	}
	for i := range int64(2500) { // more than two full batches
		r := rec(i, time.Duration(i%50)*time.Millisecond)
		w.Add(&r)
	}
	sum := stats.Summary{Requests: 2500, Completed: 2500}
	if err := w.Finish(sum, StatusComplete); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(sum, StatusComplete); err == nil {
		t.Error("second Finish succeeded")
	}
	ri, err = st.Run(w.ID())
	if err != nil {
		t.Fatal(err)
	}
	if ri.Status != StatusComplete || ri.Records != 2500 || ri.Summary == nil || ri.Summary.Completed != 2500 ||
		ri.End.IsZero() || ri.Version != "1.2.3" || string(ri.Config) != `{"concurrency":8}` {
		t.Errorf("finished run: %+v", ri)
	}
	var n int64
	if err := st.Records(w.ID(), func(r *record.Request) error {
		if r.ID != n {
			t.Fatalf("record %d has id %d: order lost", n, r.ID)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2500 {
		t.Errorf("read %d records", n)
	}
}

func TestListFilterResolve(t *testing.T) { eachDialect(t, testListFilterResolve) }

func testListFilterResolve(t *testing.T, db string) {
	st := openT(t, db)
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mk := func(kind, label, target, model string, day int) int64 {
		id, err := st.ImportRun(RunMeta{Kind: kind, Label: label, Target: target, Model: model, Start: base.AddDate(0, 0, day)},
			[]record.Request{rec(1, time.Millisecond)}, &stats.Summary{Requests: 1}, "")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := mk(KindBench, "baseline", "http://a:8000", "llama-8b", 0)
	b := mk(KindSim, "what-if", "simulator", "llama-70b", 5)
	c := mk(KindImport, "vllm 50%", "result.json", "Llama-8B", 10)

	ids := func(f Filter) []int64 {
		rs, err := st.ListRuns(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	check := func(name string, f Filter, want ...int64) {
		t.Helper()
		got := ids(f)
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: %v, want %v", name, got, want)
			}
		}
	}
	check("all newest first", Filter{}, c, b, a)
	check("kind", Filter{Kind: KindSim}, b)
	check("model substring, any case", Filter{Model: "llama-8"}, c, a)
	check("target", Filter{Target: "simul"}, b)
	check("label with %", Filter{Label: "50%"}, c)
	check("label % is literal", Filter{Label: "%"}, c)
	check("since", Filter{Since: base.AddDate(0, 0, 4)}, c, b)
	check("limit", Filter{Limit: 1}, c)

	for ref, want := range map[string]int64{"last": c, "last~1": b, "last~2": a, "1": a, "#2": b} {
		got, err := st.ResolveID(ref)
		if err != nil || got != want {
			t.Errorf("ResolveID(%q) = %d, %v; want %d", ref, got, err, want)
		}
	}
	for _, ref := range []string{"99", "last~3", "abc"} { // abc: no run has that name
		if _, err := st.ResolveID(ref); !errors.Is(err, ErrNotFound) {
			t.Errorf("ResolveID(%q): %v, want ErrNotFound", ref, err)
		}
	}
	for _, ref := range []string{"-1", "0", "last~x", ""} {
		_, err := st.ResolveID(ref)
		if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "want a run id") {
			t.Errorf("ResolveID(%q): %v, want a message saying what is expected", ref, err)
		}
	}
	if _, err := st.Run(99); !errors.Is(err, ErrNotFound) {
		t.Errorf("Run(99): %v", err)
	}
}

// A run whose writer stopped refreshing its heartbeat reads as interrupted.
func TestStaleHeartbeatIsInterrupted(t *testing.T) { eachDialect(t, testStaleHeartbeatIsInterrupted) }

func testStaleHeartbeatIsInterrupted(t *testing.T, db string) {
	st := openT(t, db)
	clock := time.Now()
	st.now = func() time.Time { return clock }
	w, err := st.BeginRun(RunMeta{Kind: KindBench})
	if err != nil {
		t.Fatal(err)
	}
	r := rec(0, time.Millisecond)
	w.Add(&r)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(4 * time.Second)
	if ri, _ := st.Run(w.ID()); ri.Status != StatusRunning {
		t.Errorf("4 s after the heartbeat: %s, want running", ri.Status)
	}
	clock = clock.Add(2 * time.Second)
	ri, _ := st.Run(w.ID())
	if ri.Status != StatusInterrupted || ri.StoredStatus != StatusRunning || ri.Records != 1 {
		t.Errorf("6 s after the heartbeat: %+v, want interrupted with 1 record", ri)
	}
	// A writer that comes back and finishes wins.
	if err := w.Finish(stats.Summary{Requests: 1}, StatusComplete); err != nil {
		t.Fatal(err)
	}
	if ri, _ := st.Run(w.ID()); ri.Status != StatusComplete {
		t.Errorf("after Finish: %s", ri.Status)
	}
}

// An import that fails part-way leaves nothing behind.
func TestImportIsAtomic(t *testing.T) { eachDialect(t, testImportIsAtomic) }

func testImportIsAtomic(t *testing.T, db string) {
	st := openT(t, db)
	bad := &stats.Summary{DurationS: math.NaN()} // JSON cannot carry NaN: fails after the records went in
	recs := []record.Request{rec(1, time.Millisecond), rec(2, time.Millisecond)}
	if _, err := st.ImportRun(RunMeta{Kind: KindImport}, recs, bad, ""); err == nil {
		t.Fatal("import with an unmarshalable summary succeeded")
	}
	var runs, records int
	st.db.QueryRow(`SELECT COUNT(*) FROM runs`).Scan(&runs)
	st.db.QueryRow(`SELECT COUNT(*) FROM records`).Scan(&records)
	if runs != 0 || records != 0 {
		t.Errorf("after a failed import: %d runs, %d records; want none", runs, records)
	}
	if _, err := st.ImportRun(RunMeta{Kind: "nonsense"}, recs, nil, ""); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("bad kind: %v", err)
	}
}

func TestSweepRoundTrip(t *testing.T) { eachDialect(t, testSweepRoundTrip) }

func testSweepRoundTrip(t *testing.T, db string) {
	st := openT(t, db)
	w, _ := st.BeginRun(RunMeta{Kind: KindSweep})
	for step := range 3 {
		w.SetStep(step)
		r := rec(int64(step), time.Millisecond)
		w.Add(&r)
	}
	if err := w.Finish(stats.Summary{}, StatusComplete); err != nil {
		t.Fatal(err)
	}
	in := Sweep{Axis: "concurrency",
		Steps: []SweepStep{{Load: 1, Data: json.RawMessage(`{"load":1}`)}, {Load: 2, Data: json.RawMessage(`{"load":2}`)}},
		Knee:  json.RawMessage(`{"load":2,"reason":"flat"}`)}
	if err := st.SaveSweep(w.ID(), in); err != nil {
		t.Fatal(err)
	}
	out, err := st.Sweep(w.ID())
	if err != nil || out == nil {
		t.Fatalf("Sweep: %v %v", out, err)
	}
	if out.Axis != "concurrency" || len(out.Steps) != 2 || out.Steps[1].Load != 2 || string(out.Steps[1].Data) != `{"load":2}` ||
		string(out.Knee) != `{"load":2,"reason":"flat"}` || out.SLOSafe != nil {
		t.Errorf("sweep read back: %+v", out)
	}
	var steps []int
	st.StepRecords(w.ID(), func(s int, _ *record.Request) error { steps = append(steps, s); return nil })
	if len(steps) != 3 || steps[0] != 0 || steps[2] != 2 {
		t.Errorf("record steps %v", steps)
	}
	if err := st.SaveSweep(999, in); !errors.Is(err, ErrNotFound) {
		t.Errorf("sweep for a missing run: %v", err)
	}
	if none, err := st.Sweep(999); none != nil || err != nil {
		t.Errorf("Sweep of a run without one: %v %v", none, err)
	}
}

func TestSweepResultRoundTrip(t *testing.T) { eachDialect(t, testSweepResultRoundTrip) }

func testSweepResultRoundTrip(t *testing.T, db string) {
	st := openT(t, db)
	id, err := st.ImportRun(RunMeta{Kind: KindSweep}, nil, &stats.Summary{}, "")
	if err != nil {
		t.Fatal(err)
	}
	var steps []sweep.Step
	for i, c := range []float64{1, 2, 4, 8} {
		s := stats.Summary{Requests: 100, OutputTokenThroughputTPS: []float64{100, 190, 260, 270}[i], RequestThroughputRPS: c}
		s.TTFT.P95 = []float64{100, 120, 300, 2500}[i]
		steps = append(steps, sweep.Step{Load: sweep.Load{Kind: sweep.Concurrency, Value: c}, Summary: s, Full: true, SLOMet: i < 3})
	}
	in, err := sweep.Analyze(steps, sweep.Options{SLOs: []string{"p95(ttft)<2s"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveSweepResult(id, in); err != nil {
		t.Fatal(err)
	}
	out, err := st.SweepResult(id)
	if err != nil || out == nil {
		t.Fatalf("%v %v", out, err)
	}
	if out.LoadKind != sweep.Concurrency || len(out.Steps) != 4 || out.KneeMetric != in.KneeMetric ||
		out.Knee.Load != in.Knee.Load || out.Knee.Index != in.Knee.Index || out.Knee.Reason != in.Knee.Reason ||
		out.SLOSafe.Load != 4 || out.SLOSafe.Index != 2 || out.Steps[3].Summary.TTFT.P95 != 2500 {
		t.Errorf("read back %+v\nwant %+v", out, in)
	}
}

// A sweep's records are tagged in measurement order and renumbered to the
// stored step order at the end (an automatic sweep refines between steps).
func TestRenumberRecordStepsAndSetConfig(t *testing.T) {
	eachDialect(t, testRenumberRecordStepsAndSetConfig)
}

func testRenumberRecordStepsAndSetConfig(t *testing.T, db string) {
	st := openT(t, db)
	w, err := st.BeginRun(RunMeta{Kind: KindSweep})
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 3; step++ {
		w.SetStep(step)
		for i := 0; i <= step; i++ {
			r := rec(int64(10*step+i), 20*time.Millisecond)
			w.Add(&r)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// Measured 0, 1, 2 are stored as steps 0, 2, 1.
	if err := st.RenumberRecordSteps(w.ID(), map[int]int{0: 0, 1: 2, 2: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetConfig(w.ID(), map[string]string{"load": "rate sweep over 3 steps"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(stats.Summary{}, StatusComplete); err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	st.StepRecords(w.ID(), func(step int, _ *record.Request) error { count[step]++; return nil })
	if count[0] != 1 || count[2] != 2 || count[1] != 3 {
		t.Errorf("records per step after renumbering: %v, want 0:1 2:2 1:3", count)
	}
	ri, _ := st.Run(w.ID())
	if !strings.Contains(string(ri.Config), "rate sweep over 3 steps") {
		t.Errorf("config not replaced: %s", ri.Config)
	}
}
