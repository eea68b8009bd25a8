package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/workload"
)

// benchNotes reads the notes and load line of a run's summary.json.
func benchNotes(t *testing.T, out string) (load string, notes []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Run struct {
			Load string `json:"load"`
		} `json:"run"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.Run.Load, s.Notes
}

// inFlightMost is the most of recs in flight at once (sent to stream end).
func inFlightMost(recs []record.Request) int {
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
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range evs {
		n += e.delta
		most = max(most, n)
	}
	return most
}

const ownUsersMix = `seed: 4
classes:
  - name: agents
    concurrency: 6
    input_tokens: "512"
    output_tokens: "24"
    model: adapter-agents
  - name: chat
    concurrency: 2
    input_tokens: "64"
    output_tokens: "8"
    slo: ["p95(ttft)<30s"]
`

// TestBenchOwnConcurrencyMix: classes with their own concurrency run as
// pools of their own against the embedded server: each class's requests
// carry its name and model, never more in flight than its users, the
// per-class figures add up, and the report says how the load was split.
func TestBenchOwnConcurrencyMix(t *testing.T) {
	parallelUntimed(t)
	out := t.TempDir()
	code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--no-store", "--quiet", "--out", out, "--mix", writeMix(t, ownUsersMix), "--requests", "96")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs := readRecords(t, filepath.Join(out, "records.jsonl"))
	byClass := map[string][]record.Request{}
	for _, r := range recs {
		if !r.OK() {
			t.Errorf("record %d (%s) failed: %s %s", r.ID, r.Class, r.Error, r.ErrorMessage)
		}
		byClass[r.Class] = append(byClass[r.Class], r)
	}
	if len(recs) != 96 || len(byClass) != 2 {
		t.Fatalf("%d records in classes %v: want 96, all agents or chat", len(recs), len(byClass))
	}
	for name, users := range map[string]int{"agents": 6, "chat": 2} {
		got := byClass[name]
		if most := inFlightMost(got); most > users || most < 1 {
			t.Errorf("class %s: %d in flight at once, want 1 to its %d users", name, most, users)
		}
		if name == "agents" && got[0].PromptTokensRequested != 512 {
			t.Errorf("agents asked for %d prompt tokens, want 512", got[0].PromptTokensRequested)
		}
	}
	load, notes := benchNotes(t, out)
	if load != "own loads: agents closed loop 6 users; chat closed loop 2 users, 96 requests" {
		t.Errorf("load line %q: want each class's own users", load)
	}
	split := ""
	for _, n := range notes {
		if strings.HasPrefix(n, "load split among the mix's classes") {
			split = n
		}
	}
	if !strings.Contains(split, "agents") || !strings.Contains(split, "its own 6 users") || !strings.Contains(split, "its own 2 users") {
		t.Errorf("no note says how the load was split: %q", notes)
	}
}

const ownRatesMix = `seed: 11
classes:
  - name: steady
    rate: 10
    arrival: constant
    input_tokens: "64"
    output_tokens: "4"
  - name: open
    rate: 20
    input_tokens: "32"
    output_tokens: "4"
  - name: smooth
    rate: 15
    arrival: gamma
    cv: 0.5
    input_tokens: "16"
    output_tokens: "4"
`

// TestBenchOwnRateMix: classes with their own rates arrive each by its own
// process: every record is at the time and of the class the seed's merged
// schedule gives its number, and each class's count is within its
// process's bounds of rate × duration.
func TestBenchOwnRateMix(t *testing.T) {
	// Not parallelUntimed: a --duration run, whose sender fell behind the
	// schedule (54 of 181 arrivals sent in its 4 s) beside the parallel
	// tests under -race on a busy machine.
	const dur = 4 * time.Second
	path := writeMix(t, ownRatesMix)
	out := t.TempDir()
	code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--no-store", "--quiet", "--out", out, "--mix", path,
		"--duration", "4s", "--requests", "100000", "--grace", "5s")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mix, err := workload.LoadMix(path)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := workload.NewMixSchedule(mix, nil, 11)
	if err != nil {
		t.Fatal(err)
	}
	var want []time.Duration
	for at := sched.Next(); at < dur; at = sched.Next() {
		want = append(want, at)
	}
	recs := readRecords(t, filepath.Join(out, "records.jsonl"))
	if len(recs) != len(want) {
		t.Fatalf("%d records, the seed's schedule has %d arrivals in %v", len(recs), len(want), dur)
	}
	count := map[string]float64{}
	for _, r := range recs {
		k := sched.ClassAt(r.ID)
		if r.Scheduled != want[r.ID] || k < 0 || r.Class != mix.Classes[k].Name {
			t.Fatalf("record %d: %s at %v; the seed's schedule has %v of class %d", r.ID, r.Class, r.Scheduled, want[r.ID], k)
		}
		count[r.Class]++
	}
	// constant: rate×duration exactly (the first at 0); Poisson: ±3√(λt);
	// gamma: the count's deviation is cv·√(λt), so ±3·cv·√(λt).
	for _, c := range []struct {
		name      string
		want, tol float64
	}{{"steady", 40, 0}, {"open", 80, 3 * math.Sqrt(80)}, {"smooth", 60, 3 * 0.5 * math.Sqrt(60)}} {
		if got := count[c.name]; math.Abs(got-c.want) > c.tol {
			t.Errorf("class %s: %g arrivals in %v, want %g ± %.1f", c.name, got, dur, c.want, c.tol)
		}
	}
	load, _ := benchNotes(t, out)
	if !strings.Contains(load, "steady open loop 10 req/s constant; open open loop 20 req/s poisson; smooth open loop 15 req/s gamma (cv 0.5)") {
		t.Errorf("load line %q: want each class's own arrival", load)
	}
}

// TestMixFileRefusals: every bad mix file, and every load flag a mix's own
// loads contradict, exits 2 naming the line or the flag.
func TestMixFileRefusals(t *testing.T) {
	class := "  - name: a\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n"
	for _, tc := range []struct {
		name, body string
		args       []string
		want       string
	}{
		{"unknown key", "classes:\n" + class + "    share: 1\n    colour: red\n", nil, "mix.yaml:6: field colour not found"},
		{"shares not summing", "classes:\n" + class + "    share: 0.4\n" + strings.Replace(class, "name: a", "name: b", 1) + "    share: 0.4\n", nil, "mix.yaml:2: the classes' shares sum to 0.8; want 1"},
		{"share and rate", "classes:\n" + class + "    share: 1\n    rate: 3\n", nil, "mix.yaml:2: class a gives more than one of share, rate and concurrency"},
		{"unknown class in an SLO", "classes:\n" + class + "    share: 1\nslos:\n  b: [\"p95(ttft)<1s\"]\n", nil, "mix.yaml:7: slos names class \"b\""},
		{"cv without gamma", "classes:\n" + class + "    rate: 3\n    cv: 2\n", nil, "mix.yaml:2: class a: cv applies to arrival gamma"},
		{"missing dataset", "classes:\n  - name: a\n    rate: 3\n    dataset: nowhere.jsonl\n    output_tokens: \"8\"\n", nil, "mix.yaml:2: class a:"},
		{"--rate beside own users", "classes:\n" + class + "    concurrency: 2\n", []string{"--rate", "5"}, "give no --rate with them"},
		{"--concurrency beside own rates", "classes:\n" + class + "    rate: 2\n", []string{"--concurrency", "5"}, "give no --concurrency with them"},
		{"shares beside own rates without --rate", "classes:\n" + class + "    rate: 2\n" + strings.Replace(class, "name: a", "name: b", 1) + "    share: 1\n", nil, "give the rate the classes with a share divide with --rate"},
	} {
		args := append([]string{"bench", "--no-store", "--quiet", "--mix", writeMix(t, tc.body), "--requests", "1"}, tc.args...)
		code, _, stderr := kneeEnv(t, benchEnv(t), args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", tc.name, code, stderr, tc.want)
		}
	}
}

// TestSimOwnRateMix: knee sim runs own-rate classes on the seed's merged
// schedule: each class's count is the schedule's.
func TestSimOwnRateMix(t *testing.T) {
	path := writeMix(t, ownRatesMix)
	out := t.TempDir()
	code, _, stderr := kneeEnv(t, benchEnv(t), "sim", "--no-store", "--out", out, "--mix", path, "--requests", "900")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mix, _ := workload.LoadMix(path)
	sched, _ := workload.NewMixSchedule(mix, nil, 11)
	want := map[string]int{}
	for i := range int64(900) {
		sched.Next()
		want[mix.Classes[sched.ClassAt(i)].Name]++
	}
	got := map[string]int{}
	for _, r := range readRecords(t, filepath.Join(out, "records.jsonl")) {
		got[r.Class]++
	}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("class %s: %d simulated requests, the seed's schedule has %d (all: %v)", name, got[name], n, got)
		}
	}
}
