package workload

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const ownLoadMix = `seed: 3
classes:
  - name: chat
    share: 1
    input_tokens: "64"
    output_tokens: "8"
  - name: steady
    rate: 5
    arrival: constant
    input_tokens: "32"
    output_tokens: "4"
  - name: bursty
    rate: 20
    arrival: gamma
    cv: 2
    input_tokens: "16"
    output_tokens: "4"
`

// TestMixOwnRatesMerge: the merged schedule is in time order, each
// own-rate class arrives at its own rate (within bounds from its
// process), the share classes at the shared schedule's, and the same
// seed gives the same sequence of classes and times.
func TestMixOwnRatesMerge(t *testing.T) {
	m, err := ParseMix("mix.yaml", []byte(ownLoadMix))
	if err != nil {
		t.Fatal(err)
	}
	if !m.OwnRates() || m.OwnUsers() || !m.HasShares() || m.Classes[2].CV != 2 || m.Classes[1].Share != 0 {
		t.Fatalf("parsed %+v", m.Classes)
	}
	build := func(seed uint64) (*MixSchedule, []time.Duration) {
		shared, err := NewArrivals("poisson", 10, 0, seed)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewMixSchedule(m, shared, seed)
		if err != nil {
			t.Fatal(err)
		}
		var at []time.Duration
		for {
			a := s.Next()
			if a > 200*time.Second {
				break
			}
			at = append(at, a)
		}
		return s, at
	}
	s, at := build(3)
	counts := map[int]int{}
	for i := range at {
		if i > 0 && at[i] < at[i-1] {
			t.Fatalf("arrival %d at %v before arrival %d at %v", i, at[i], i-1, at[i-1])
		}
		counts[s.ClassAt(int64(i))]++
	}
	// Over 200 s: constant 5/s gives exactly 1,000 (the first at 0);
	// Poisson 10/s 2,000 ± 3·√2000 ≈ 134; gamma with CV 2 has the count's
	// variance CV²·λt, so 4,000 ± 3·2·√4000 ≈ 380.
	for _, c := range []struct {
		class     int
		want, tol float64
	}{{1, 1000, 1}, {-1, 2000, 134}, {2, 4000, 380}} {
		if got := float64(counts[c.class]); math.Abs(got-c.want) > c.tol {
			t.Errorf("class %d: %g arrivals in 200 s, want %g ± %g", c.class, got, c.want, c.tol)
		}
	}
	s2, at2 := build(3)
	if len(at2) != len(at) {
		t.Fatalf("seed 3 twice: %d then %d arrivals", len(at), len(at2))
	}
	for i := range at {
		if at[i] != at2[i] || s.ClassAt(int64(i)) != s2.ClassAt(int64(i)) {
			t.Fatalf("seed 3 twice: arrival %d differs", i)
		}
	}
	// A generator on the schedule gives each arrival its class's shape.
	g, err := NewMixGenerator(m, Spec{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	g.WithSchedule(s)
	for i := range int64(300) {
		it, k := g.Item(i)
		if want := s.ClassAt(i); want >= 0 && k != want || want < 0 && k != 0 {
			t.Fatalf("arrival %d: class %d, the schedule says %d", i, k, want)
		}
		if float64(it.InputTokens) != m.Classes[k].Input.Mean() {
			t.Fatalf("arrival %d of class %s has %d input tokens", i, m.Classes[k].Name, it.InputTokens)
		}
	}
}

// TestMixOwnConcurrencyAndDataset: a class may bring its own users and
// take its prompts from a dataset (a path from the mix file's folder).
func TestMixOwnConcurrencyAndDataset(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/prompts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ParseMix(filepath.Join(dir, "mix.yaml"), []byte(`classes:
  - name: agents
    concurrency: 3
    dataset: prompts.jsonl
    output_tokens: "16"
  - name: chat
    concurrency: 1
    input_tokens: "64"
    output_tokens: "8"
`))
	if err != nil {
		t.Fatal(err)
	}
	if m.HasShares() || !m.OwnUsers() || m.Classes[0].Concurrency != 3 || m.Class(1, 5) != -1 {
		t.Fatalf("parsed %+v", m.Classes)
	}
	g, err := NewMixGenerator(m, Spec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := LoadDataset(filepath.Join(dir, "prompts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	it := g.Generator(0).Item(4)
	found := false
	for _, e := range ds.Entries {
		found = found || e.Prompt == it.Prompt
	}
	if !found {
		t.Errorf("the dataset class's prompt %q is not from its dataset", it.Prompt)
	}
}

// TestMixFileRefusalsNameTheLine: every bad own-load class is refused,
// naming its line and what was expected.
func TestMixFileRefusalsNameTheLine(t *testing.T) {
	cls := func(body string) string {
		return "classes:\n  - name: a\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n" + body
	}
	for _, tc := range []struct{ name, file, want string }{
		{"share and rate", cls("    share: 1\n    rate: 2\n"), "mix.yaml:2: class a gives more than one of share, rate and concurrency"},
		{"rate and concurrency", cls("    rate: 1\n    concurrency: 2\n"), "mix.yaml:2: class a gives more than one"},
		{"no load", cls(""), "mix.yaml:2: class a has no share, rate or concurrency"},
		{"bad rate", cls("    rate: -3\n"), "mix.yaml:2: class a: rate -3"},
		{"bad users", cls("    concurrency: 0\n"), "mix.yaml:2: class a: concurrency 0"},
		{"cv without gamma", cls("    rate: 3\n    cv: 2\n"), "mix.yaml:2: class a: cv applies to arrival gamma"},
		{"arrival without rate", cls("    share: 1\n    arrival: poisson\n"), "mix.yaml:2: class a: arrival and cv describe a class's own rate"},
		{"unknown arrival", cls("    rate: 3\n    arrival: weibull\n"), "mix.yaml:2: class a: unknown arrival process \"weibull\""},
		{"unknown key", cls("    rate: 3\n    users: 4\n"), "mix.yaml:6: field users not found"},
		{"rate beside users", cls("    rate: 3\n") + "  - name: b\n    concurrency: 2\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n",
			"mix.yaml:6: class b: one run is open or closed loop"},
		{"shares beside own loads", cls("    share: 0.5\n") + "  - name: b\n    rate: 2\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n",
			"mix.yaml:2: the classes' shares sum to 0.5; want 1"},
		{"dataset and input", "classes:\n  - name: a\n    rate: 1\n    dataset: p.jsonl\n    input_tokens: \"8\"\n", "mix.yaml:2: class a: its dataset gives the prompts"},
	} {
		_, err := ParseMix("mix.yaml", []byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// TestMixOwnLoadWords: the report's words for own loads, the offered rate
// and the split of the requests.
func TestMixOwnLoadWords(t *testing.T) {
	m, err := ParseMix("mix.yaml", []byte(ownLoadMix))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.OwnLoads(), "steady open loop 5 req/s constant; bursty open loop 20 req/s gamma (cv 2)"; got != want {
		t.Errorf("OwnLoads %q, want %q", got, want)
	}
	if got, want := m.LoadLine("open loop, 10 req/s poisson", ", 100 requests"), "open loop, 10 req/s poisson shared by chat; own loads: steady open loop 5 req/s constant; bursty open loop 20 req/s gamma (cv 2), 100 requests"; got != want {
		t.Errorf("LoadLine %q,\nwant %q", got, want)
	}
	if got := m.OfferedRate(10); got != 35 {
		t.Errorf("offered rate %g beside a shared 10 req/s, want 35", got)
	}
	if got, want := m.Classes[2].Describe(), "bursty own 20 req/s gamma (cv 2) (16 in, 4 out, base model)"; got != want {
		t.Errorf("Describe %q, want %q", got, want)
	}
	split := m.Split(map[string]int{"chat": 50, "steady": 25, "bursty": 25, "probe": 99})
	if want := "load split among the mix's classes, of 100 requests: chat 50 (50.0%, a 100% share of the shared load); steady 25 (25.0%, its own 5 req/s constant); bursty 25 (25.0%, its own 20 req/s gamma (cv 2))"; split != want {
		t.Errorf("Split %q,\nwant %q", split, want)
	}
	shares, _ := ParseMix("mix.yaml", []byte(goodMix))
	if shares.OwnLoads() != "" || shares.LoadLine("closed loop, concurrency 4", ", 10s") != "closed loop, concurrency 4, 10s" || shares.Split(map[string]int{"chat": 3}) != "" || shares.OfferedRate(7) != 7 {
		t.Error("a mix of shares only has no own loads to describe")
	}
}
